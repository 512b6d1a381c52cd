"""A site's stack: what `client deidentify --stack` runs at a hospital. The published pooled
pipeline, the site's own raw-text tagger (it reads each token's characters; trained on the
site's labeled notes), the site's PHI memory (`deidpool.client.memory`) and the pattern layer
(`deidpool.client.patterns`), the two taggers combined token by token (`deidpool.client.combination`)
at the operating point chosen on the site's validation notes (`deidpool.client.operating_point`).

The stack folder holds the local tagger's run, its embeddings when they are not the pipeline's,
the memory, `operating_point.json` (the validation scores) and `stack.json` (the SHA-256 of the
pipeline's manifest it was built for, its language, the pattern layer on or off, the weight and
the threshold). It holds PHI (the memory's strings; what the tagger and site embeddings learnt of
the notes) and stays at the site: its folders are readable by their owner only, nothing reads it
but `open_stack`, and it runs with the pipeline it was built for only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from deidpool.client.combination import CombinedSentence, combine, union_vocabulary
from deidpool.client.deidentify import CHUNK_DOCUMENTS, pipeline_patterns, prepared_chunks, tag_labels
from deidpool.client.inference import apply_to_sentences, built_once, compile_pipeline_scores, compile_tagger_scores
from deidpool.client.memory import load_memory, memory_patterns, remembered_phi, save_memory
from deidpool.client.operating_point import choose_operating_point
from deidpool.client.patterns import Pattern, with_patterns
from deidpool.corpus.document import Document
from deidpool.representer.bundle import Bundle, BundleError
from deidpool.representer.dataset import SentenceData, predicted_documents
from deidpool.representer.embeddings import Embeddings, load_embeddings
from deidpool.representer.marginals import crf_marginals
from deidpool.representer.progress import progress_bar
from deidpool.representer.tagger_runs import TaggerSettings, load_tagger_run, train_tagger_run

FORMAT = "deidpool-stack/1"
STACK_FILE, POINT_FILE, MEMORY_FILE = "stack.json", "operating_point.json", "memory.json"
TAGGER_RUN, EMBEDDINGS_FOLDER = "tagger", "embeddings"


class StackError(BundleError):
    """A stack folder that cannot be built or used (the site's own bundle, reported like one);
    the message says which and why."""


def pipeline_digest(pipeline: Bundle) -> str:
    """SHA-256 of the pipeline's manifest (which lists the SHA-256 of every model file)."""
    return hashlib.sha256(json.dumps(pipeline.manifest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _marginals(scores, tagger):
    """Batch -> (B, T, tags) CRF marginals of `tagger` over the unary `scores(batch)`."""
    weights = tagger.crf.numpy_weights()
    return lambda batch: crf_marginals(scores(batch), batch["length"], *weights)


@dataclass(frozen=True, eq=False)
class Stack:
    """A loaded stack (`open_stack`, `build_stack`): the verified pipeline and its embeddings, the
    local tagger with its run config and embeddings, the patterns merged (layer and memory), the
    pipeline's `weight` and the `threshold` on the combined PHI score."""

    pipeline: Bundle
    pipeline_vectors: Embeddings
    tagger: object
    tagger_config: dict
    tagger_vectors: Embeddings
    patterns: tuple[Pattern, ...]
    weight: float = 0.5
    threshold: float = 0.5

    @property
    def vocabulary(self) -> list[str]:
        return union_vocabulary(self.pipeline.tags, self.tagger_config["tag_vocabulary"])

    @property
    def labels(self) -> frozenset[str]:
        """Every label its spans can have: both taggers' and the patterns'."""
        return frozenset(tag_labels(self.vocabulary) | {p.label for p in self.patterns if not p.refuses})

    def marginals(self, sentences: Sequence[Sequence], data: SentenceData | None) -> list[tuple]:
        """(pipeline, local tagger) marginals of every sentence of `sentences` (per document,
        `data` their pipeline input as `prepared_chunks` gives them)."""
        if data is None:
            return []
        pipeline = built_once(self.pipeline, "marginals", self._pipeline_marginals)
        local = built_once(self.tagger, "marginals", lambda: _marginals(
            compile_tagger_scores(self.tagger, self.tagger_vectors.dim), self.tagger))
        flat = [sentence for document in sentences for sentence in document]
        local_data = SentenceData.from_sentences(flat, self.tagger_vectors,
                                                 chars=self.tagger_config.get("chars", False))
        return list(zip(apply_to_sentences(pipeline, data), apply_to_sentences(local, local_data)))

    def _pipeline_marginals(self):
        tagger = self.pipeline.load_tagger()
        representer = self.pipeline.load_representer(deterministic=True)
        return _marginals(compile_pipeline_scores(representer, tagger, self.pipeline_vectors.dim), tagger)

    def combined(self, marginals: Iterable[tuple], weight: float) -> list[CombinedSentence]:
        return [combine(pipeline, self.pipeline.tags, local, self.tagger_config["tag_vocabulary"], weight)
                for pipeline, local in marginals]

    def documents_at(self, documents: Sequence[Document], sentences: Sequence[Sequence],
                     combined: Sequence[CombinedSentence], threshold: float) -> list[Document]:
        """The documents with the spans of the combined taggers at `threshold`, the patterns' merged."""
        found = predicted_documents(documents, sentences, [sentence.tag_ids(threshold) for sentence in combined],
                                    self.vocabulary, "BIOES")
        return [with_patterns(document, self.patterns) for document in found]

    def find(self, documents: Iterable[Document], *, chunk_documents: int = CHUNK_DOCUMENTS,
             progress: bool = False) -> Iterator[Document]:
        """Each document with the PHI spans the stack finds at its operating point."""
        with progress_bar(desc="de-identifying", unit=" notes", disable=not progress) as bar:
            for chunk, sentences, data in prepared_chunks(documents, self.pipeline_vectors, chunk_documents,
                                                          self.pipeline.reads_chars):
                combined = self.combined(self.marginals(sentences, data), self.weight)
                yield from self.documents_at(chunk, sentences, combined, self.threshold)
                bar.update(len(chunk))

    def operating_point(self, valid: Sequence[Document], min_recall: float | None = None) -> dict:
        """`choose_operating_point` on the labeled validation notes `valid`."""
        _, sentences, data = next(prepared_chunks(valid, self.pipeline_vectors, max(1, len(valid)),
                                                  self.pipeline.reads_chars))
        marginals = self.marginals(sentences, data)
        by_weight: dict[float, list[CombinedSentence]] = {}

        def predict(weight: float, threshold: float) -> list[Document]:
            if weight not in by_weight:
                by_weight[weight] = self.combined(marginals, weight)
            return self.documents_at(valid, sentences, by_weight[weight], threshold)

        return choose_operating_point(valid, predict, min_recall)


def _patterns(pipeline: Bundle, language: str, patterns: bool, memory: dict) -> tuple[Pattern, ...]:
    return (*(pipeline_patterns(pipeline, language) if patterns else ()),
            *memory_patterns(memory, sorted(tag_labels(pipeline.tags))))


def _kept_embeddings(spec: str | None, folder: Path) -> str | None:
    """The local tagger's embeddings spec as the stack keeps it: None (the pipeline's), a spec
    without a file ("glove"), or its file copied into the stack and named relative to it."""
    kind, _, path = (spec or "").partition(":")
    if not path:
        return spec
    if not Path(path).is_file():
        raise StackError(f"embeddings file {path} does not exist")
    (folder / EMBEDDINGS_FOLDER).mkdir(mode=0o700)
    shutil.copyfile(path, folder / EMBEDDINGS_FOLDER / Path(path).name)
    return f"{kind}:{EMBEDDINGS_FOLDER}/{Path(path).name}"


def _local_embeddings(kept: str | None, folder: Path, pipeline_vectors: Embeddings) -> Embeddings:
    if kept is None:
        return pipeline_vectors
    kind, _, path = kept.partition(":")
    return load_embeddings(f"{kind}:{folder / path}" if path else kept)


def _owner_only(folder: Path) -> None:
    for root, folders, files in os.walk(folder):
        os.chmod(root, 0o700)
        for name in files:
            os.chmod(Path(root) / name, 0o600)


def build_stack(out: str | Path, pipeline: Bundle, pipeline_vectors: Embeddings, train: Sequence[Document],
                valid: Sequence[Document], *, embeddings: str | None = None, language: str = "en",
                patterns: bool = True, min_recall: float | None = None, lstm_units: int = 128, max_epochs: int = 20,
                patience: int = 3, seed: int = 0, progress: bool = True) -> dict:
    """Build the stack folder `out` for the verified `pipeline`: the local tagger (characters on,
    embeddings by the spec `embeddings`, default the pipeline's) trained on `train` with early
    stopping on `valid`, the PHI memory of `train`, and the operating point chosen on `valid`
    (`min_recall`: see `deidpool.client.operating_point`). Returns the operating point."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise StackError(f"{out} exists and is not an empty folder: choose a new --out")
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    try:
        kept = _kept_embeddings(embeddings, out)
        vectors = _local_embeddings(kept, out, pipeline_vectors)
        train_tagger_run(train, valid, out / TAGGER_RUN,
                         TaggerSettings(embeddings=embeddings or pipeline.manifest["embeddings"]["spec"], chars=True,
                                        lstm_units=lstm_units, max_epochs=max_epochs, patience=patience, seed=seed),
                         progress=progress, loaded_embeddings=vectors)
        memory = remembered_phi(train)
        save_memory(memory, out / MEMORY_FILE)
        tagger, config, _ = load_tagger_run(out / TAGGER_RUN, vectors)
    except ValueError as error:
        raise StackError(str(error)) from None
    stack = Stack(pipeline, pipeline_vectors, tagger, config, vectors, _patterns(pipeline, language, patterns, memory))
    point = stack.operating_point(valid, min_recall)
    (out / POINT_FILE).write_text(json.dumps({**point, "valid_notes": len(valid)}, indent=1) + "\n")
    (out / STACK_FILE).write_text(json.dumps({
        "format": FORMAT, "pipeline_sha256": pipeline_digest(pipeline), "representer_id": pipeline.representer_id,
        "embeddings": kept, "language": language, "patterns": patterns, "weight": point["weight"],
        "threshold": point["chosen"]["threshold"], "train_notes": len(train), "valid_notes": len(valid)},
        indent=1) + "\n")
    _owner_only(out)
    return point


def open_stack(folder: str | Path, pipeline: Bundle, pipeline_vectors: Embeddings) -> Stack:
    """The stack in `folder` with the verified `pipeline` it was built for (StackError for any other)."""
    folder = Path(folder)
    try:
        record = json.loads((folder / STACK_FILE).read_text())
    except (OSError, ValueError) as error:
        raise StackError(f"{folder} is not a stack folder ({folder / STACK_FILE}: {type(error).__name__})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise StackError(f"{folder / STACK_FILE}: not a stack (field 'format' is not {FORMAT!r})")
    if record["pipeline_sha256"] != pipeline_digest(pipeline):
        raise StackError(f"{folder} was built for another pipeline (manifest SHA-256 {record['pipeline_sha256']}, "
                         f"representer {record['representer_id']}) than {pipeline.path} ({pipeline_digest(pipeline)}): "
                         "build it again for this pipeline with `client personalize`")
    try:
        vectors = _local_embeddings(record["embeddings"], folder, pipeline_vectors)
        tagger, config, _ = load_tagger_run(folder / TAGGER_RUN, vectors)
    except ValueError as error:
        raise StackError(f"{folder}: {error}") from None
    memory = load_memory(folder / MEMORY_FILE)
    return Stack(pipeline, pipeline_vectors, tagger, config, vectors,
                 _patterns(pipeline, record["language"], record["patterns"], memory), record["weight"],
                 record["threshold"])
