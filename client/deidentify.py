"""De-identification of unlabeled notes with a published pipeline (representer + tagger): PHI
spans found in the notes, written in a corpus format, or the notes themselves with PHI
replaced by markers or consistent surrogates.

The representer runs without noise here: nothing leaves the institution, and the same note
then always gets the same spans. Optionally the high-precision pattern layer
(`client.patterns`: dates, phone numbers, ages over 89, IDs, e-mail, URLs) runs on each note's
raw text and its spans are merged with the tagger's (`client.patterns.merge_spans`).
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path

from tqdm import tqdm

from client.inference import apply_to_sentences, built_once, compile_pipeline
from client.patterns import Pattern, with_patterns
from client.surrogates import redacted_text, surrogate_text
from corpus.document import Document
from corpus.errors import CorpusError
from corpus.formats import iter_corpus, write_corpus
from corpus.formats._common import input_files, output_files, read_text
from corpus.prepare import prepare_text
from representer.bundle import Bundle
from representer.dataset import SentenceData, predicted_documents

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


def find_phi(documents: Iterable[Document], pipeline: Bundle, embeddings, *, patterns: Sequence[Pattern] = (),
             chunk_documents: int = CHUNK_DOCUMENTS, progress: bool = False) -> Iterator[Document]:
    """Each document with the PHI spans the pipeline finds (labels as the pipeline's tags name
    them); `embeddings` are the pipeline's (from `pipeline.load_embeddings`). With `patterns`
    (e.g. `client.patterns.DEFAULT_PATTERNS`), their spans in the raw text are merged with the
    tagger's (i2b2 2014 types as labels); without them, the tagger's spans alone."""
    tag = built_once(pipeline, "tags", lambda: compile_pipeline(pipeline.load_representer(deterministic=True),
                                                                pipeline.load_tagger(), embeddings.dim))
    with tqdm(desc="de-identifying", unit=" notes", disable=not progress) as bar:
        for chunk, sentences, data in _prepared(documents, embeddings, chunk_documents):
            found = predicted_documents(chunk, sentences, apply_to_sentences(tag, data), pipeline.tags,
                                        pipeline.scheme)
            yield from (with_patterns(document, patterns) for document in found) if patterns else found
            bar.update(len(chunk))


def _prepared(documents: Iterable[Document], embeddings, size: int) -> Iterator[tuple[list, list, SentenceData]]:
    """(documents, their sentences, the sentences as model input) for `size` documents at a time."""
    iterator = iter(documents)
    while chunk := list(islice(iterator, size)):
        sentences = [prepare_text(document.text) for document in chunk]
        yield chunk, sentences, SentenceData.from_sentences([s for document in sentences for s in document], embeddings)


def write_deidentified(documents: Iterable[Document], out: str | Path, fmt: str, *, surrogates: bool = False,
                       rng: random.Random | None = None) -> int:
    """Write documents with found PHI to `out`, atomically: spans in a corpus format (brat,
    i2b2, json; `out` as that format expects), or ("text") a folder of `<id>.txt` notes with
    each PHI span replaced by `[**CATEGORY**]` or, with `surrogates`, a surrogate. Returns
    the number of documents."""
    if fmt not in OUTPUT_FORMATS:
        raise CorpusError(f"unknown output format {fmt!r}; choose one of: {', '.join(OUTPUT_FORMATS)}")
    count = 0

    def counted() -> Iterator[Document]:
        nonlocal count
        for count, document in enumerate(documents, 1):
            yield document

    if fmt != "text":
        write_corpus(counted(), out, fmt)
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

