"""What an institution's PHI memory (`client remember`, `client deidentify --memory`) adds on
patients it has never seen: PhysioNet's 5 cross-validation folds by patient, nothing trained.

Each fold's tagger predictions are those `tagger_baselines.py --cv 5` stored in
experiments/results/quality/baselines_cv5.json; a fold's memory is remembered from the gold labels
of the other folds' notes (what its tagger was trained on), at each bar of `--bars`, and merged
with the pattern layer as `client deidentify --memory` merges it. Scores pool every fold's test
notes (official i2b2 2014 tokenization, token HIPAA); the difference to the pattern layer alone
has its paired 95% bootstrap interval over the notes.

    python experiments/memory_cv.py
"""

from __future__ import annotations

import argparse
import json
import warnings

from results_files import record, results_file, write_results

MEASURE = "token_official_hipaa"
BASELINE = results_file("baselines_cv5", ".json")


def fold_notes(rows: list[dict], bars: list[float]) -> tuple[list, dict[str, list]]:
    """The gold test notes of every fold, in order, and {system: their predicted notes}: the
    pattern layer alone and with the memory of the other folds at each bar."""
    import tagger_baselines
    from deidpool.client.memory import memory_patterns, remembered_phi
    from deidpool.client.patterns import DEFAULT_PATTERNS, with_patterns
    from deidpool.corpus.folds import fold_split

    documents, _ = tagger_baselines.cv_documents()
    gold = {document.id: document for document in documents}
    tested, systems = [], {"patterns": [], **{f"patterns + memory ({bar:g})": [] for bar in bars}}
    for row in sorted(rows, key=lambda row: row["fold"]):
        trained_on, _ = fold_split(documents, row["fold"], row["folds"], row["fold_seed"],
                                   group=tagger_baselines.patient)
        found = tagger_baselines.fold_predictions(row, gold)
        tested += [gold[document.id] for document in found]
        systems["patterns"] += [with_patterns(document) for document in found]
        for bar in bars:
            patterns = (*DEFAULT_PATTERNS, *memory_patterns(remembered_phi(trained_on, min_precision=bar)))
            systems[f"patterns + memory ({bar:g})"] += [with_patterns(document, patterns) for document in found]
    return tested, systems


def scores(tested: list, systems: dict[str, list]) -> dict:
    """The numbers of the table: precision, recall, F1 of each system, and each memory's F1
    difference to the layer alone with its paired interval ([difference, low, high])."""
    from deidpool.corpus.metrics import document_counts, evaluate_corpus, f1_difference_interval

    measured = {name: evaluate_corpus(tested, found)[MEASURE] for name, found in systems.items()}
    counts = {name: document_counts(tested, found) for name, found in systems.items()}
    numbers = {"notes": len(tested), "scores": {}, "differences": {}}
    for name, score in measured.items():
        if name != "patterns":
            low, high = f1_difference_interval([(counts[name], counts["patterns"])])
            numbers["differences"][name] = [score["f1"] - measured["patterns"]["f1"], low, high]
        numbers["scores"][name] = {key: score[key] for key in ("precision", "recall", "f1")}
    return numbers


def report(data: dict) -> str:
    """The page of results JSON `data`: its `scores` and the run's record (date, commit, command,
    the file of the fold predictions)."""
    run = data["record"]
    lines = ["# The PHI memory on unseen patients (PhysioNet, 5 folds by patient)\n",
             f"{run['date']}, commit {run['commit']}; command `{run['command']}`; fold predictions "
             f"of `{run['predictions']}` (the tagger alone, GloVe + casing); each fold's memory from the gold labels "
             f"of the other folds; {data['notes']} notes. Token HIPAA, official i2b2 2014 tokenization; differences "
             "in points with their paired 95% bootstrap interval over the notes.\n",
             "| system | precision | recall | F1 | F1 - patterns |", "|---|---:|---:|---:|---:|"]
    for name, score in data["scores"].items():
        cell = "-"
        if name in data["differences"]:
            difference, low, high = data["differences"][name]
            cell = f"{100 * difference:+.2f} [{100 * low:+.2f}, {100 * high:+.2f}]"
        lines.append(f"| {name} | {score['precision']:.4f} | {score['recall']:.4f} | {score['f1']:.4f} | {cell} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bars", type=float, nargs="+", default=[0.5, 0.7, 0.9],
                        help="the memory's precision bars (`client remember --min-precision`)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the corpus reader's notes on merged phrases
    rows = json.loads(BASELINE.read_text())
    tested, systems = fold_notes(rows, args.bars)
    data = {"bars": args.bars, **scores(tested, systems), "record": record(predictions=BASELINE.name)}
    write_results("memory_cv5", report(data), data)


if __name__ == "__main__":
    main()
