"""De-identification of unlabeled notes with a published pipeline (representer + tagger): PHI
spans found in the notes, written in a corpus format, or the notes themselves with PHI
replaced by markers or consistent surrogates.

The representer runs without noise here: nothing leaves the institution, and the same note
then always gets the same spans. Optionally the high-precision pattern layer
(`deidpool.client.patterns`: dates, phone numbers, ages over 89, IDs, e-mail, URLs) runs on each note's
raw text and its spans are merged with the tagger's (`deidpool.client.patterns.merge_spans`).
The layer is the one of the notes' language (`pipeline_patterns`: English by default, or
Spanish), its spans labelled in the pipeline's own tag set (a MEDDOCAN pipeline's "FECHAS", an
i2b2 one's "DATE"). `PhiFinder` bundles a verified pipeline, its embeddings and the pattern layer
for callers that hold texts rather than documents (the Presidio and spaCy integrations,
`deidpool.client.integrations`).
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from deidpool.client.document_surrogates import redacted_text, surrogate_text
from deidpool.client.inference import apply_to_sentences, built_once, compile_pipeline
from deidpool.client.patterns import DEFAULT_PATTERNS, Pattern, patterns_for, with_patterns
from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.formats import iter_corpus, write_corpus
from deidpool.corpus.formats._common import input_files, output_files, read_text
from deidpool.corpus.prepare import prepare_text
from deidpool.representer import keys
from deidpool.representer.bundle import Bundle, open_bundle
from deidpool.representer.dataset import SentenceData, predicted_documents
from deidpool.representer.progress import progress_bar

OUTPUT_FORMATS = ("brat", "i2b2", "json", "text")
CHUNK_DOCUMENTS = 512


def read_notes(path: str | Path, fmt: str = "text") -> Iterator[Document]:
    """Unlabeled notes: `.txt` files ("text": one file or a folder of them, ids from the file
    names), or the documents of any corpus format with their spans dropped."""
    path = Path(path)
    if fmt != "text":
        for document in iter_corpus(path, fmt):
            yield Document(document.id, document.text)
        return
    if not path.exists():
        raise CorpusError("no such file or folder", path)
    for file in input_files(path, ".txt", strict=False):
        yield Document(file.stem, read_text(file))


def pipeline_patterns(pipeline: Bundle, language: str = "en") -> tuple[Pattern, ...]:
    """The default pattern layer for notes in `language` ("en", "es"; ValueError naming any other),
    its spans labelled in `pipeline`'s tag set (`deidpool.client.patterns.patterns_for`)."""
    return patterns_for(language, sorted(tag_labels(pipeline.tags)))


def tag_labels(tags: Iterable[str]) -> set[str]:
    """The span labels of a tag vocabulary ("B-DATE", "I-DATE", "O" -> {"DATE"})."""
    return {tag.partition("-")[2] for tag in tags if tag != "O"}


def find_phi(documents: Iterable[Document], pipeline: Bundle, embeddings, *, patterns: Sequence[Pattern] = (),
             chunk_documents: int = CHUNK_DOCUMENTS, progress: bool = False) -> Iterator[Document]:
    """Each document with the PHI spans the pipeline finds (labels as the pipeline's tags name
    them); `embeddings` are the pipeline's (from `pipeline.load_embeddings`). With `patterns`
    (e.g. `pipeline_patterns(pipeline, language)`), their spans in the raw text are merged with the
    tagger's; without them, the tagger's spans alone."""
    tag = built_once(pipeline, "tags", lambda: compile_pipeline(pipeline.load_representer(deterministic=True),
                                                                pipeline.load_tagger(), embeddings.dim))
    with progress_bar(desc="de-identifying", unit=" notes", disable=not progress) as bar:
        for chunk, sentences, data in prepared_chunks(documents, embeddings, chunk_documents, pipeline.reads_chars):
            predictions = apply_to_sentences(tag, data) if data is not None else []
            found = predicted_documents(chunk, sentences, predictions, pipeline.tags, pipeline.scheme)
            yield from (with_patterns(document, patterns) for document in found) if patterns else found
            bar.update(len(chunk))


def prepared_chunks(documents: Iterable[Document], embeddings, size: int,
              chars: bool) -> Iterator[tuple[list, list, SentenceData | None]]:
    """(documents, their sentences, the sentences as model input with character ids when `chars`,
    None when a chunk of blank notes has none) for `size` documents at a time."""
    iterator = iter(documents)
    while chunk := list(islice(iterator, size)):
        sentences = [prepare_text(document.text) for document in chunk]
        flat = [sentence for document in sentences for sentence in document]
        yield chunk, sentences, SentenceData.from_sentences(flat, embeddings, chars=chars) if flat else None


@dataclass(frozen=True, eq=False)
class PhiFinder:
    """A verified published pipeline with its embeddings and pattern layer, finding PHI spans
    in raw texts: what the Presidio recognizer and the spaCy component
    (`deidpool.client.integrations`) wrap.

    Args:
        pipeline: the verified pipeline bundle (`deidpool.representer.bundle.open_bundle`).
        embeddings: its embeddings (`pipeline.load_embeddings()`).
        patterns: the pattern layer merged with the tagger's spans (default: the English one;
            `pipeline_patterns` gives a language's in the pipeline's tag set; none: the tagger alone).
    """

    pipeline: Bundle
    embeddings: object
    patterns: Sequence[Pattern] = DEFAULT_PATTERNS

    @classmethod
    def open(cls, pipeline: str | Path, provider_key: str | Path, *, embeddings: str | None = None,
             patterns: bool = True, language: str = "en") -> PhiFinder:
        """The pipeline at `pipeline` (folder or .tar) once its signature verifies with the pinned
        public key in the PEM file `provider_key`, with its embeddings (by the manifest's spec,
        or `embeddings`) and, unless `patterns` is false, the pattern layer for notes in `language`."""
        bundle = open_bundle(pipeline, keys.load_public_key(provider_key, keys.SIGNING))
        return cls(bundle, bundle.load_embeddings(embeddings),
                   pipeline_patterns(bundle, language) if patterns else ())

    @property
    def labels(self) -> frozenset[str]:
        """Every label its spans can have: the pipeline's tag labels and the patterns' types."""
        return frozenset(tag_labels(self.pipeline.tags)
                         | {pattern.label for pattern in self.patterns if not pattern.refuses})

    def find(self, documents: Iterable[Document], *, chunk_documents: int = CHUNK_DOCUMENTS,
             progress: bool = False) -> Iterator[Document]:
        """Each document with the PHI spans found in it (`find_phi`)."""
        return find_phi(documents, self.pipeline, self.embeddings, patterns=self.patterns,
                        chunk_documents=chunk_documents, progress=progress)

    def spans(self, texts: Iterable[str], chunk_documents: int = CHUNK_DOCUMENTS) -> Iterator[tuple[Span, ...]]:
        """The PHI spans of each text, in order, with character offsets into it."""
        documents = (Document(str(number), text) for number, text in enumerate(texts))
        for document in self.find(documents, chunk_documents=chunk_documents):
            yield document.spans


def write_deidentified(documents: Iterable[Document], out: str | Path, fmt: str, *, surrogates: bool = False,
                       rng: random.Random | None = None, labels: Iterable[str] = ()) -> int:
    """Write documents with found PHI to `out`, atomically: spans in a corpus format (brat,
    i2b2, json; `out` as that format expects), or ("text") a folder of `<id>.txt` notes with
    each PHI span replaced by `[**CATEGORY**]` or, with `surrogates`, a surrogate. For brat,
    the folder also gets BRAT's annotation.conf and visual.conf, with `labels` (those the
    pipeline can give, `PhiFinder.labels`) among the types a reviewer can choose. Returns the
    number of documents."""
    if fmt not in OUTPUT_FORMATS:
        raise CorpusError(f"unknown output format {fmt!r}; choose one of: {', '.join(OUTPUT_FORMATS)}")
    count = 0

    def counted() -> Iterator[Document]:
        nonlocal count
        for count, document in enumerate(documents, 1):
            yield document

    if fmt != "text":
        write_corpus(counted(), out, fmt, replace=True, **({"types": labels} if fmt == "brat" else {}))
        return count
    rng = rng or random.SystemRandom()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for document, path in output_files(counted(), staging / out.name, ".txt"):
            path.write_text(surrogate_text(document, rng) if surrogates else redacted_text(document), encoding="utf-8")
        if out.is_dir():
            shutil.rmtree(out)
        (staging / out.name).replace(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return count

