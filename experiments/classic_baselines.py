"""Classic de-identification baselines from the literature (issue #8): the CEGS N-GRID 2016 CRF,
the Sibanda & Uzuner 2006 SVM and the Dernoncourt et al. 2017 character BiLSTM-CRF, trained
and tested on the splits of experiments/tagger_baselines.py (PhysioNet: provider + sites minus
10% of their patients for validation, test on `test`; MEDDOCAN: train minus 10% of its
documents, test on dev), beside the non-private, pseudonymization and adversarial rows already
measured (read from experiments/results/, not re-run).

Also measures the CEGS Table 1 pre-tokenization rules the aggressive tokenizer lacks (the two
case-transition splits; the digit, date, phone and e-mail rules split nothing more than it
already does): the PhysioNet CRF again, at the c2 chosen for the plain run, with those rules.

Each result is saved to experiments/results/quality/classic_baselines.json as it finishes (concurrent
runs, e.g. `--only char-lstm` in the background, merge into the same file).

    python experiments/classic_baselines.py [--only crf|svm|char-lstm|cegs] [--corpus physionet|meddocan]
        [--char-epochs 5] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from deidpool.baselines import char_lstm, crf, svm
from deidpool.baselines.runs import load_baseline
from deidpool.corpus import prepare
from deidpool.corpus.metrics import evaluate_corpus, score_row
from results_files import SCORE_COLUMNS, over_seeds, results_file, score_header
from tagger_baselines import DATA, ROOT, fasttext_for, load_data

RUNS = ROOT / "runs" / "classic_baselines"
NAMES = {"crf": "CRF, CEGS features (sklearn-crfsuite)", "svm": "SVM, Sibanda local context (LinearSVC)",
         "char-lstm": "char BiLSTM-CRF (Dernoncourt)", "cegs": "CRF + CEGS Table 1 case splits"}
# Table 1 rules beyond corpus.tokenize: "WhalenChief" -> "Whalen" "Chief", "USMeaningful" -> "US" "Meaningful".
_LOWER_UPPER = re.compile(r"[a-z](?=[A-Z])")
_CAPITALS_WORD = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z]{2})")


@contextmanager
def cegs_case_splits() -> Iterator[None]:
    """While active, `deidpool.corpus.prepare` (training and prediction) also cuts tokens at the two
    case-transition rules; the metrics keep the plain tokenizer, so scores stay comparable."""
    plain = prepare.tokenize

    def tokenize(text, breaks=(), start=0, end=None):
        cuts = [m.end() for pattern in (_LOWER_UPPER, _CAPITALS_WORD) for m in pattern.finditer(text)]
        return plain(text, [*breaks, *cuts], start, end)

    prepare.tokenize = tokenize
    try:
        yield
    finally:
        prepare.tokenize = plain


def train(kind: str, corpus_name: str, data, run_dir: Path, args) -> tuple[dict, str]:
    """Train one baseline; returns its metrics and a note on the chosen settings."""
    train_docs, valid_docs, _ = data
    if kind == "crf":
        metrics = crf.train(train_docs, valid_docs, run_dir, max_iterations=args.crf_iterations)
        return metrics, f"c2={metrics['c2']} of {list(crf.C2_GRID)}, {args.crf_iterations} L-BFGS iterations"
    if kind == "cegs":
        plain = json.loads((RUNS / f"{corpus_name}_crf" / "metrics.json").read_text())
        with cegs_case_splits():
            metrics = crf.train(train_docs, valid_docs, run_dir, c2_grid=[plain["c2"]],
                                max_iterations=args.crf_iterations)
        return metrics, f"c2={metrics['c2']} (the plain CRF's), {args.crf_iterations} L-BFGS iterations"
    if kind == "svm":
        metrics = svm.train(train_docs, valid_docs, run_dir)
        return metrics, f"C={metrics['C']} of {list(svm.C_GRID)}"
    spec = "glove" if corpus_name == "physionet" else f"fasttext:{fasttext_for(corpus_name, train_docs)}"
    metrics = char_lstm.train(train_docs, valid_docs, run_dir, embeddings=spec, max_epochs=args.char_epochs,
                              patience=args.patience)
    words = "GloVe 50d" if spec == "glove" else "FastText 100d (train)"
    return metrics, (f"{words}; budget {args.char_epochs} epochs: ran {metrics['epochs']}, best {metrics['best_epoch']}"
                     f"{' (stopped early)' if metrics['stopped_early'] else ''}")


def run(kind: str, corpus_name: str, data, args) -> dict:
    run_dir = RUNS / f"{corpus_name}_{kind}"
    started = time.perf_counter()
    metrics, note = train(kind, corpus_name, data, run_dir, args)
    train_seconds = time.perf_counter() - started
    test = data[2]
    if kind == "cegs":
        with cegs_case_splits():
            predictor = load_baseline(run_dir)
            started = time.perf_counter()
            predicted = predictor.predict_documents(test)
    else:
        predictor = load_baseline(run_dir)
        started = time.perf_counter()
        predicted = predictor.predict_documents(test)
    predict_seconds = time.perf_counter() - started
    scores = evaluate_corpus(test, predicted)
    return {"key": f"{corpus_name}/{kind}", "corpus": corpus_name, "kind": kind, "name": NAMES[kind], "note": note,
            "val_f1": metrics["val_f1"], "train_seconds": round(train_seconds, 1), "test_notes": len(test),
            "predict_seconds": round(predict_seconds, 2),
            **score_row(scores, ("token_official_hipaa", "token_hipaa", "token_all", "entity_strict"))}


def cited_rows() -> list[dict]:
    """The rows measured by experiments/tagger_baselines.py and experiments/adversarial.py, with
    their scores per seed under "seeds"."""
    rows = []
    tagger_file, adversarial_file = results_file("baselines", ".json"), results_file("adversarial_smoke", ".json")
    if tagger_file.exists():
        results = json.loads(tagger_file.read_text())
        test_notes = {"physionet": 347, "meddocan": 250}  # documents of PhysioNet `test` and MEDDOCAN dev
        for corpus_name, name in (("physionet", "GloVe + casing"), ("physionet", "FastText + casing"),
                                  ("physionet", "pseudonymized N=2"), ("physionet", "pseudonymized N=100"),
                                  ("meddocan", "FastText + casing")):
            runs = [r for r in results if (r["corpus"], r["name"]) == (corpus_name, name)]
            if runs:
                rows.append({"corpus": corpus_name, "name": f"BiLSTM-CRF tagger, {name}",
                             "note": f"baselines.md, {len(runs)} seed(s), "
                                     f"{statistics.mean(r['epochs'] for r in runs):.0f} epochs",
                             "train_seconds": statistics.mean(r["train_seconds"] for r in runs),
                             "notes_per_second": statistics.mean(test_notes[corpus_name] / r["predict_seconds"]
                                                                 for r in runs),
                             "seeds": runs})
    if adversarial_file.exists():
        for r in json.loads(adversarial_file.read_text()):
            rows.append({"corpus": "physionet", "name": f"adversarial representation, {r['name']}",
                         "note": f"adversarial_smoke.md, smoke budget ({r['budget']['max_epochs']} epoch per phase)",
                         "train_seconds": r["train_seconds"], "notes_per_second": None, "seeds": [r["retrained"]]})
    return rows


def table(results: list[dict]) -> str:
    """One row per model: this experiment's, then those read from other results (mean ± sd over their seeds)."""
    lines = ["| corpus | model | " + score_header() + " | train min | test notes/s | settings / source |",
             "|---|---|" + "---:|" * (len(SCORE_COLUMNS) + 2) + "---|"]
    own = [{**r, "notes_per_second": r["test_notes"] / r["predict_seconds"], "note": f"this run: {r['note']}",
            "seeds": [r]} for r in results]
    for corpus_name in ("physionet", "meddocan"):
        for r in [r for r in (*own, *cited_rows()) if r["corpus"] == corpus_name]:
            rate = "" if r["notes_per_second"] is None else f"{r['notes_per_second']:,.0f}"
            lines.append(f"| {corpus_name} | {r['name']} | "
                         + " | ".join(over_seeds(r["seeds"], key) for key in SCORE_COLUMNS)
                         + f" | {r['train_seconds'] / 60:.1f} | {rate} | {r['note']} |")
    return "\n".join(lines)


def save(result: dict | None) -> list[dict]:
    """Merge `result` into the JSON file (re-read first: other processes may have added rows)."""
    stored = results_file("classic_baselines", ".json")
    results = json.loads(stored.read_text()) if stored.exists() else []
    if result is not None:
        results = [r for r in results if r["key"] != result["key"]] + [result]
        order = {key: i for i, key in enumerate(f"{c}/{k}" for c in ("physionet", "meddocan") for k in NAMES)}
        results.sort(key=lambda r: order[r["key"]])
        temporary = stored.with_name(stored.name + f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(results, indent=2) + "\n")
        os.replace(temporary, stored)
    results_file("classic_baselines", ".md").write_text(
        "# Classic de-identification baselines beside the tagger rows\n\n" + table(results) + "\n\n"
        "Token HIPAA: token-level binary HIPAA P/R/F1, with the official i2b2 2014 evaluation's tokens and HIPAA "
        "types (primary; its F1's 95% percentile bootstrap interval over the test notes, 1000 resamples, per seed) "
        "and with the project's tokenizer (F1); entity strict: entity-level strict micro P/R/F1 on i2b2 types "
        "(corpus.metrics); n/a: a row scored before the official measure was recorded. "
        "Test sets: PhysioNet `test` (347 notes), MEDDOCAN dev (250 documents). "
        "Train min: wall-clock training time including feature extraction and every grid point; "
        "test notes/s: prediction throughput on the test notes (prepare, features, tagging, decoding). "
        "All on a shared 2-core CPU machine, so times are inflated by other jobs. "
        "Rows marked with a source are read from that file, not re-run.\n")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=list(NAMES), action="append", help="baselines to run (repeatable)")
    parser.add_argument("--corpus", choices=["physionet", "meddocan"], action="append", help="corpora (repeatable)")
    parser.add_argument("--crf-iterations", type=int, default=100)
    parser.add_argument("--char-epochs", type=int, default=5)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--report-only", action="store_true", help="rewrite the table from the JSON results")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"reference corpora not found at {DATA} (they live in ../shared/data beside the repository)")
    results_file("classic_baselines", ".json").parent.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        print(table(save(None)))
        return
    kinds = args.only or ["crf", "svm", "cegs", "char-lstm"]
    for corpus_name in args.corpus or ["physionet", "meddocan"]:
        data = load_data(corpus_name)
        for kind in kinds:
            if kind == "cegs" and not (RUNS / f"{corpus_name}_crf" / "metrics.json").exists():
                sys.exit(f"--only cegs needs the plain CRF run {RUNS / f'{corpus_name}_crf'} first")
            print(f"== {corpus_name}/{kind}", flush=True)
            print(table(save(run(kind, corpus_name, data, args))), flush=True)


if __name__ == "__main__":
    main()
