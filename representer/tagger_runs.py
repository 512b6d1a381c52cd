"""A de-id tagger from documents to a run directory and back to predicted spans: the
non-private baseline (raw embeddings) and the pseudonymization baseline end to end."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import keras

from deidpool.corpus.document import Document, Span
from deidpool.corpus.prepare import LabeledSentence, prepare_document, prepare_text
from deidpool.corpus.tagging import SCHEMES as TAG_SCHEMES
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.representer.dataset import SentenceData, predicted_documents
from deidpool.representer.embeddings import Embeddings, load_embeddings
from deidpool.representer.settings import check_at_least, check_one_of
from deidpool.representer.tagger import Tagger, build_tagger, compute_class_weights, tag_sentences
from deidpool.representer.training import MONITORS, TaggerTraining, run_training

RUN_FORMAT = 1
TAGGER_FILE = "models/tagger.keras"  # where run_training saves the best tagger
LABELS: dict[str, Callable[[Span], str]] = {"source": lambda span: span.source_type, "type": lambda span: span.type}


def split_documents(documents: Sequence[Document], fraction: float, seed: int = 0,
                    group: Callable[[Document], str] = lambda d: d.id) -> tuple[list[Document], list[Document]]:
    """(rest, held out): a seeded `fraction` of the groups (e.g. patients) held out whole."""
    groups = sorted({group(d) for d in documents})
    held = set(random.Random(seed).sample(groups, max(1, round(fraction * len(groups)))))
    return [d for d in documents if group(d) not in held], [d for d in documents if group(d) in held]


def labeled_sentences(documents: Sequence[Document], scheme: str, label: str) -> list[LabeledSentence]:
    return [s for d in documents for s in prepare_document(d, scheme, LABELS[label])]


@dataclass(frozen=True)
class TaggerSettings:
    """What a tagger run trains and how long (defaults: `deidpool train tagger`'s)."""

    # the inputs: embeddings by spec, the casing feature, each token's characters
    embeddings: str = "glove"
    casing: bool = True
    chars: bool = False
    # the tags: their scheme (BIO or BIOES) and labels (`LABELS`: the corpus's own types or i2b2 2014 types)
    scheme: str = "BIO"
    label: str = "source"
    # with a pseudonymizer: train on the originals and a pseudonymized copy of each, not on the copies alone
    keep_originals: bool = False
    # the model and its training: LSTM units per direction, early stopping on `monitor` (`training.MONITORS`)
    lstm_units: int = 128
    max_epochs: int = 20
    patience: int = 3
    monitor: str = "val_f1"
    seed: int = 0

    def __post_init__(self) -> None:
        check_one_of(self, "scheme", TAG_SCHEMES)
        check_one_of(self, "label", LABELS)
        check_one_of(self, "monitor", MONITORS)
        check_at_least(self, 1, "lstm_units", "max_epochs", "patience")


def train_tagger_run(train_documents: Sequence[Document], valid_documents: Sequence[Document], run_dir: str | Path,
                     settings: TaggerSettings = TaggerSettings(), *, pseudonymizer=None, progress: bool = True,
                     loaded_embeddings: Embeddings | None = None) -> dict:
    """Train a tagger under `settings` on raw embeddings (`loaded_embeddings`, else loaded by
    `settings.embeddings`), with `settings.chars` on each token's characters too (or, given an
    `deidpool.pseudonymization.pseudonymize.Pseudonymizer`, on pseudonymized training sentences, with
    `settings.keep_originals` on the originals and a pseudonymized copy of each: augmentation) with early
    stopping on the validation documents; writes the run directory (config.json, history.json,
    metrics.json, models/tagger.keras; "chars" only where set, so that older runs resume) and
    returns the best metrics (best by `settings.monitor`, see `TaggerTraining`). Every input problem is
    reported before any training starts."""
    train_sentences = labeled_sentences(train_documents, settings.scheme, settings.label)
    valid_sentences = labeled_sentences(valid_documents, settings.scheme, settings.label)
    if not train_sentences:
        raise ValueError("the training data holds no sentence")
    if not any(tag != "O" for s in valid_sentences for tag in s.tags):
        raise ValueError("the validation data holds no PHI: early stopping would have nothing to measure")
    vectors = loaded_embeddings or load_embeddings(settings.embeddings)
    vocabulary = tag_vocabulary({LABELS[settings.label](span) for d in (*train_documents, *valid_documents)
                                 for span in d.spans}, settings.scheme)
    if settings.keep_originals and pseudonymizer is None:
        raise ValueError("keeping the originals beside pseudonymized copies needs a pseudonymizer")
    if pseudonymizer is not None:
        copies = pseudonymizer.labeled_sentences(train_sentences, random.Random(settings.seed))
        train_sentences = [*train_sentences, *copies] if settings.keep_originals else copies
    chars = settings.chars
    train = SentenceData.from_sentences(train_sentences, vectors, vocabulary, chars=chars)
    valid = SentenceData.from_sentences(valid_sentences, vectors, vocabulary, chars=chars)
    keras.utils.set_random_seed(settings.seed)
    tagger = build_tagger(vectors.dim, len(vocabulary), use_casing=settings.casing, lstm_units=settings.lstm_units,
                          use_chars=chars)
    procedure = TaggerTraining(tagger, compute_class_weights(train.tag_counts(len(vocabulary))),
                               monitor=settings.monitor)
    setup = {"format_version": RUN_FORMAT, "embeddings": settings.embeddings, "embeddings_id": vectors.source_id,
             "casing": settings.casing, **({"chars": True} if chars else {}), "scheme": settings.scheme,
             "label": settings.label, "tag_vocabulary": vocabulary,
             "pseudonymization_neighbours": pseudonymizer and pseudonymizer.neighbours,
             "pseudonymization_scheme": pseudonymizer and pseudonymizer.scheme,
             "keep_originals": settings.keep_originals, "train_documents": len(train_documents),
             "train_sentences": len(train), "valid_documents": len(valid_documents), "valid_sentences": len(valid)}
    return run_training(procedure, train, valid, run_dir, max_epochs=settings.max_epochs, patience=settings.patience,
                        seed=settings.seed, config=setup, progress=progress)


def load_tagger_run(run_dir: str | Path,
                    loaded_embeddings: Embeddings | None = None) -> tuple[Tagger, dict, Embeddings]:
    """(tagger, config, embeddings) of a run directory written by `train_tagger_run`."""
    run_dir = Path(run_dir)
    config_file, tagger_file = run_dir / "config.json", run_dir / TAGGER_FILE
    if not config_file.is_file() or not tagger_file.is_file():
        raise ValueError(f"{run_dir} is not a tagger run directory (needs config.json and {TAGGER_FILE})")
    config = json.loads(config_file.read_text())
    if config.get("format_version") != RUN_FORMAT:
        raise ValueError(f"{run_dir} was written by another deidpool version (run format "
                         f"{config.get('format_version')!r}, this version reads {RUN_FORMAT})")
    vectors = loaded_embeddings or load_embeddings(config["embeddings"])
    if vectors.source_id != config["embeddings_id"]:
        raise ValueError(f"embeddings {vectors.source_id} differ from those the tagger was trained on "
                         f"({config['embeddings_id']})")
    return keras.saving.load_model(tagger_file, compile=False), config, vectors


def predict_documents(tagger: Tagger, config: dict, vectors: Embeddings,
                      documents: Sequence[Document]) -> list[Document]:
    """The documents with their spans replaced by the tagger's predictions."""
    sentences = [prepare_text(d.text) for d in documents]
    flat = [s for doc_sentences in sentences for s in doc_sentences]
    if not flat:
        return [Document(d.id, d.text) for d in documents]
    predictions = tag_sentences(tagger, SentenceData.from_sentences(flat, vectors, chars=config.get("chars", False)))
    return predicted_documents(documents, sentences, predictions, config["tag_vocabulary"], config["scheme"])
