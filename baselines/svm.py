"""SVM baseline on local context (Sibanda & Uzuner 2006): a linear SVM classifies every token
as non-PHI ("O") or one PHI label from the target word, the words and bigrams before and after
it, its capitalization and length, whether its word contains "-" or "/", and the heading of
the section it is in. Contiguous tokens of one label form a predicted span.

Left out: lemmas and POS tags (lower-cased words stand in for lemmas), MeSH ids and the name,
location, hospital and month dictionaries. The word-level features apply to the aggressive
tokenizer's tokens, so "-" or "/" is looked up in the whitespace-delimited word around a token
(a token itself never contains one)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import joblib
import numpy as np
import sklearn
from sklearn.feature_extraction import DictVectorizer
from sklearn.svm import LinearSVC

from deidpool.baselines.features import SectionHeadings, enclosing_word, lexical_features
from deidpool.baselines.runs import (
    RUN_FORMAT,
    check_training_data,
    labeled_notes,
    phi_token_f1,
    predict_with,
    read_config,
    write_json,
)
from deidpool.corpus.document import Document
from deidpool.corpus.prepare import LabeledSentence, Sentence

KIND = "svm"
MODEL_FILE = "models/svm.joblib"
C_GRID = (0.3, 1.0, 3.0)
_PAD = "<s>"


def sentence_features(text: str, headings: SectionHeadings, sentence: Sentence) -> list[dict]:
    """The local-context features of every token of a sentence of the note `text`."""
    words = [_PAD, _PAD, *(t.text.lower() for t in sentence.tokens), _PAD, _PAD]
    features = []
    for i, token in enumerate(sentence.tokens, start=2):
        word = enclosing_word(text, token)
        features.append({**lexical_features(token.text), "before": words[i - 1], "after": words[i + 1],
                         "bigram_before": f"{words[i - 2]} {words[i - 1]}",
                         "bigram_after": f"{words[i + 1]} {words[i + 2]}",
                         "heading": headings.at(token.start), "hyphen_or_slash": "-" in word or "/" in word})
    return features


def token_labels(sentence: LabeledSentence) -> list[str]:
    """BIO tags reduced to the per-token classes: "O" or the PHI label."""
    return [tag.partition("-")[2] or "O" for tag in sentence.tags]


def _note_features(text: str, sentences: Sequence[Sentence]) -> list[dict]:
    headings = SectionHeadings(text)
    return [f for s in sentences for f in sentence_features(text, headings, s)]


def _liblinear(matrix):
    """The sparse matrix with the 32-bit indices liblinear requires (DictVectorizer makes 64-bit ones)."""
    matrix.indices = matrix.indices.astype(np.int32)
    matrix.indptr = matrix.indptr.astype(np.int32)
    return matrix


def train(train_documents: Sequence[Document], valid_documents: Sequence[Document], run_dir: str | Path, *,
          label: str = "source", c_grid: Sequence[float] = C_GRID, progress: bool = True) -> dict:
    """Fit one LinearSVC per C on the training documents, keep the one with the best token-level
    PHI F1 on the validation documents; writes config.json, metrics.json and the model."""
    train_notes = labeled_notes(train_documents, "BIO", label)
    valid_notes = labeled_notes(valid_documents, "BIO", label)
    check_training_data(train_notes, valid_notes)
    started = time.perf_counter()
    vectorizer = DictVectorizer()
    x_train = _liblinear(vectorizer.fit_transform([f for text, sentences in train_notes
                                                    for f in _note_features(text, sentences)]))
    y_train = [y for _, sentences in train_notes for s in sentences for y in token_labels(s)]
    x_valid = _liblinear(vectorizer.transform([f for text, sentences in valid_notes
                                                for f in _note_features(text, sentences)]))
    y_valid = [y for _, sentences in valid_notes for s in sentences for y in token_labels(s)]
    grid, best = [], None
    for c in c_grid:
        fit_started = time.perf_counter()
        svm = LinearSVC(C=c).fit(x_train, y_train)
        f1 = phi_token_f1([y_valid], [svm.predict(x_valid)])
        grid.append({"C": c, "val_f1": f1, "seconds": round(time.perf_counter() - fit_started, 1)})
        if progress:
            print(f"svm C={c}: val_f1 {f1:.4f} ({grid[-1]['seconds']} s)", flush=True)
        if best is None or f1 > best[0]["val_f1"]:
            best = grid[-1], svm
    point, svm = best
    run_dir = Path(run_dir)
    (run_dir / "models").mkdir(parents=True, exist_ok=True)
    joblib.dump({"vectorizer": vectorizer, "svm": svm}, run_dir / MODEL_FILE)
    classes = [str(c) for c in svm.classes_ if c != "O"]
    config = {"kind": KIND, "format_version": RUN_FORMAT, "scheme": "BIO", "label": label,
              "tag_vocabulary": ["O", *(f"I-{c}" for c in classes)], "C": point["C"], "c_grid": list(c_grid),
              "scikit_learn": sklearn.__version__, "features": len(vectorizer.vocabulary_),
              "train_documents": len(train_documents), "train_tokens": len(y_train),
              "valid_documents": len(valid_documents), "valid_tokens": len(y_valid)}
    metrics = {"C": point["C"], "val_f1": point["val_f1"], "grid": grid,
               "train_seconds": round(time.perf_counter() - started, 1)}
    write_json(run_dir / "config.json", config)
    write_json(run_dir / "metrics.json", metrics)
    return metrics


class SVMBaseline:
    def __init__(self, vectorizer: DictVectorizer, svm: LinearSVC, config: dict):
        self.vectorizer, self.svm, self.config = vectorizer, svm, config

    def tag_notes(self, texts: Sequence[str], sentences: Sequence[Sequence[Sentence]]) -> list[list[str]]:
        """Per-token classes as I- tags, so that BIO decoding joins runs of one label into a span."""
        features = [f for text, note in zip(texts, sentences) for f in _note_features(text, note)]
        if not features:
            return []
        classes = iter(self.svm.predict(_liblinear(self.vectorizer.transform(features))))
        return [["O" if (c := next(classes)) == "O" else f"I-{c}" for _ in s.tokens]
                for note in sentences for s in note]

    def predict_documents(self, documents: Sequence[Document]) -> list[Document]:
        return predict_with(self.tag_notes, documents, self.config["tag_vocabulary"], self.config["scheme"])


def load(run_dir: str | Path) -> SVMBaseline:
    config = read_config(run_dir, KIND, MODEL_FILE)
    if config["scikit_learn"] != sklearn.__version__:
        raise ValueError(f"{Path(run_dir) / 'config.json'}: the model was saved by scikit-learn "
                         f"{config['scikit_learn']}, this is {sklearn.__version__} (retrain it)")
    saved = joblib.load(Path(run_dir) / MODEL_FILE)
    return SVMBaseline(saved["vectorizer"], saved["svm"], config)
