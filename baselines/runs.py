"""What the baselines share: checks of the training documents, labeled sentences kept with
their document's text, run directories (config.json says which baseline wrote them), and the
prediction path of the tagger (`prepare_text`, tag ids, `predicted_documents`)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from deidpool.corpus.document import Document
from deidpool.corpus.prepare import LabeledSentence, Sentence, prepare_document, prepare_text
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.representer.dataset import predicted_documents
from deidpool.representer.tagger_runs import LABELS

RUN_FORMAT = 1
KINDS = {"crf": "deidpool.baselines.crf", "svm": "deidpool.baselines.svm", "char-lstm": "deidpool.baselines.char_lstm"}

# Tags the sentences of notes: (note texts, each note's sentences) -> one tag list per sentence,
# the sentences of all notes in order.
TagNotes = Callable[[Sequence[str], Sequence[Sequence[Sentence]]], list[list[str]]]


class Predictor(Protocol):
    def predict_documents(self, documents: Sequence[Document]) -> list[Document]:
        """The documents with their spans replaced by predicted ones."""


def labeled_notes(documents: Sequence[Document], scheme: str, label: str) -> list[tuple[str, list[LabeledSentence]]]:
    """(text, labeled sentences) per document, as `prepare_document` cuts them."""
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r}; choose one of: {', '.join(LABELS)}")
    return [(d.text, prepare_document(d, scheme, LABELS[label])) for d in documents]


def check_training_data(train: list[tuple[str, list[LabeledSentence]]],
                        valid: list[tuple[str, list[LabeledSentence]]]) -> None:
    """Refuse, before any training, data without sentences or a validation set without PHI."""
    if not any(sentences for _, sentences in train):
        raise ValueError("the training data holds no sentence")
    if not any(tag != "O" for _, sentences in valid for s in sentences for tag in s.tags):
        raise ValueError("the validation data holds no PHI: model selection would have nothing to measure")


def label_vocabulary(documents: Sequence[Document], scheme: str, label: str) -> list[str]:
    return tag_vocabulary({LABELS[label](span) for d in documents for span in d.spans}, scheme)


def phi_token_f1(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> float:
    """Token-level binary PHI F1 of tag sequences (a token is PHI when its tag is not "O")."""
    g = np.array([tag != "O" for tags in gold for tag in tags])
    p = np.array([tag != "O" for tags in predicted for tag in tags])
    tp, fp, fn = np.sum(g & p), np.sum(p & ~g), np.sum(g & ~p)
    return float(2 * tp / max(2 * tp + fp + fn, 1))


def predict_with(tag_notes: TagNotes, documents: Sequence[Document], vocabulary: Sequence[str],
                 scheme: str) -> list[Document]:
    """Predicted documents from a function tagging the prepared sentences of notes."""
    sentences = [prepare_text(d.text) for d in documents]
    ids = {tag: i for i, tag in enumerate(vocabulary)}
    predictions = [np.array([ids[tag] for tag in tags], dtype=np.int32)
                   for tags in tag_notes([d.text for d in documents], sentences)]
    return predicted_documents(documents, sentences, predictions, vocabulary, scheme)


def write_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")


def run_kind(run_dir: str | Path) -> str | None:
    """The baseline that wrote `run_dir` ("crf", "svm", "char-lstm"), None for other runs."""
    config_file = Path(run_dir) / "config.json"
    if not config_file.is_file():
        return None
    kind = json.loads(config_file.read_text()).get("kind")
    return kind if kind in KINDS else None


def read_config(run_dir: str | Path, kind: str, model_file: str) -> dict:
    """config.json of a `kind` run directory, after checking that it and `model_file` exist."""
    run_dir = Path(run_dir)
    config_file = run_dir / "config.json"
    if not config_file.is_file() or not (run_dir / model_file).is_file():
        raise ValueError(f"{run_dir} is not a {kind} run directory (needs config.json and {model_file})")
    config = json.loads(config_file.read_text())
    if config.get("kind") != kind:
        raise ValueError(f"{config_file}: kind is {config.get('kind')!r}, not {kind!r}")
    if config.get("format_version") != RUN_FORMAT:
        raise ValueError(f"{config_file}: run format {config.get('format_version')!r}; this version reads {RUN_FORMAT}")
    return config


def load_baseline(run_dir: str | Path) -> Predictor:
    """The trained baseline of a run directory written by any of the baselines' `train`."""
    kind = run_kind(run_dir)
    if kind is None:
        raise ValueError(f"{Path(run_dir) / 'config.json'}: not a baseline run "
                         f"(kind must be one of {', '.join(KINDS)})")
    return importlib.import_module(KINDS[kind]).load(run_dir)
