"""CRF baseline with rich hand-crafted features (the CRF system of the CEGS N-GRID 2016 paper,
Table 2): lexical, orthographic, long shape, length, letter/digit/punctuation indicators and
2-4 character affixes of every token in a +-2 window, BIOES tags, L2-regularized
sklearn-crfsuite (L-BFGS), c2 chosen on the validation documents from a small grid.

Left out: POS and chunk tags and lemmas (the paper used OpenNLP models), and the profession /
city / country / state dictionaries (collected from the training data and Wikipedia)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import sklearn_crfsuite

from deidpool.baselines.features import in_window, orthographic_features
from deidpool.baselines.runs import (
    RUN_FORMAT,
    check_training_data,
    label_vocabulary,
    labeled_notes,
    phi_token_f1,
    predict_with,
    read_config,
    write_json,
)
from deidpool.corpus.document import Document
from deidpool.corpus.prepare import Sentence

KIND = "crf"
MODEL_FILE = "models/crf.crfsuite"
WINDOW = 2
# CRF++ -c 10 (the paper's value) weighs the data C times the penalty |w|^2 / 2; crfsuite's
# c2 weighs |w|^2 against the data once: c2 = 1 / (2 C) = 0.05. The grid brackets it.
C2_GRID = (0.01, 0.05, 0.25)
MIN_FREQ = 4  # the paper's feature cut-off (CRF++ -f 4)


def sentence_features(sentence: Sentence, window: int = WINDOW) -> list[dict]:
    return in_window([orthographic_features(t.text) for t in sentence.tokens], window)


def train(train_documents: Sequence[Document], valid_documents: Sequence[Document], run_dir: str | Path, *,
          label: str = "source", c2_grid: Sequence[float] = C2_GRID, max_iterations: int = 100,
          min_freq: float = MIN_FREQ, window: int = WINDOW, progress: bool = True) -> dict:
    """Fit one CRF per c2 on the training documents, keep the one with the best token-level
    PHI F1 on the validation documents; writes config.json, metrics.json and the model."""
    scheme = "BIOES"
    train_notes = labeled_notes(train_documents, scheme, label)
    valid_notes = labeled_notes(valid_documents, scheme, label)
    check_training_data(train_notes, valid_notes)
    started = time.perf_counter()
    x_train = [sentence_features(s, window) for _, sentences in train_notes for s in sentences]
    y_train = [s.tags for _, sentences in train_notes for s in sentences]
    x_valid = [sentence_features(s, window) for _, sentences in valid_notes for s in sentences]
    y_valid = [s.tags for _, sentences in valid_notes for s in sentences]
    run_dir = Path(run_dir)
    (run_dir / "models").mkdir(parents=True, exist_ok=True)
    grid, best = [], None
    for c2 in c2_grid:
        candidate = run_dir / "models" / f"crf-c2-{c2}.crfsuite"
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=c2, max_iterations=max_iterations,
                                   min_freq=min_freq, all_possible_transitions=True, model_filename=str(candidate),
                                   verbose=False)
        fit_started = time.perf_counter()
        crf.fit(x_train, y_train)
        f1 = phi_token_f1(y_valid, crf.predict(x_valid))
        grid.append({"c2": c2, "val_f1": f1, "seconds": round(time.perf_counter() - fit_started, 1)})
        if progress:
            print(f"crf c2={c2}: val_f1 {f1:.4f} ({grid[-1]['seconds']} s)", flush=True)
        if best is None or f1 > best["val_f1"]:
            best = grid[-1]
    shutil.copyfile(run_dir / "models" / f"crf-c2-{best['c2']}.crfsuite", run_dir / MODEL_FILE)
    for point in grid:
        (run_dir / "models" / f"crf-c2-{point['c2']}.crfsuite").unlink()
    config = {"kind": KIND, "format_version": RUN_FORMAT, "scheme": scheme, "label": label,
              "tag_vocabulary": label_vocabulary((*train_documents, *valid_documents), scheme, label),
              "window": window, "c1": 0.0, "c2": best["c2"], "c2_grid": list(c2_grid),
              "max_iterations": max_iterations, "min_freq": min_freq, "train_documents": len(train_documents),
              "train_sentences": len(x_train), "valid_documents": len(valid_documents), "valid_sentences": len(x_valid)}
    metrics = {"c2": best["c2"], "val_f1": best["val_f1"], "grid": grid,
               "train_seconds": round(time.perf_counter() - started, 1)}
    write_json(run_dir / "config.json", config)
    write_json(run_dir / "metrics.json", metrics)
    return metrics


class CRFBaseline:
    def __init__(self, crf: sklearn_crfsuite.CRF, config: dict):
        self.crf, self.config = crf, config

    def tag_notes(self, texts: Sequence[str], sentences: Sequence[Sequence[Sentence]]) -> list[list[str]]:
        return [self.crf.predict_single(sentence_features(s, self.config["window"]))
                for note in sentences for s in note]

    def predict_documents(self, documents: Sequence[Document]) -> list[Document]:
        return predict_with(self.tag_notes, documents, self.config["tag_vocabulary"], self.config["scheme"])


def load(run_dir: str | Path) -> CRFBaseline:
    config = read_config(run_dir, KIND, MODEL_FILE)
    return CRFBaseline(sklearn_crfsuite.CRF(model_filename=str(Path(run_dir) / MODEL_FILE)), config)
