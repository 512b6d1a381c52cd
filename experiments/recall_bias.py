"""A recall lever that trains nothing (issue #39): the stored cross-validated PhysioNet taggers
decoded with the "O" tag's unary score lowered by a bias b (Viterbi on the biased scores, so
every path stays a valid tag sequence: the CRF's transitions still decide the spans' extent and
type). The larger b, the more tokens the tagger calls PHI. Each fold's b is chosen on that fold's
own validation notes (the 10% of the training patients that stopped its training), never on its
test notes; the report pools every fold's test notes, alone and with the pattern layer, paired
against b = 0 on the same notes.

    python experiments/recall_bias.py [--results-name baselines_cv5] [--configuration "GloVe + casing + chars"]
        [--biases 0 0.5 1 1.5 2 3] [--slack 0.005]

Choice on validation: of the biases whose validation F1 with the pattern layer is within --slack
of the best one's, the largest (the most recall the validation notes say F1 can afford). Reads
runs/baselines/<results name>/ (the taggers `tagger_baselines.py --cv 5` trained) and the results
JSON (their folds and stored test predictions, which b = 0 must reproduce).
"""

from __future__ import annotations

import argparse
import json

import tensorflow as tf

from deidpool.client.patterns import with_patterns
from deidpool.corpus.document import Document
from deidpool.corpus.metrics import (
    COLUMN_TITLES,
    PRIMARY,
    Counts,
    document_counts,
    f1_difference_interval,
    f1_interval,
    format_score,
    micro_f1,
)
from deidpool.corpus.prepare import prepare_text
from deidpool.representer.dataset import SentenceData, inference_batches, predicted_documents
from deidpool.representer.onnx_inference import viterbi
from deidpool.representer.tagger_runs import load_tagger_run
from results_files import commit_text, record, results_file, write_results
from tagger_baselines import RUNS, cv_data, cv_documents, fold_predictions, run_folder

BIASES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


class ScoredNotes:
    """A tagger's unary scores on some notes, kept in padded batches so that every bias is one
    NumPy Viterbi pass over them."""

    def __init__(self, tagger, config: dict, vectors, documents: list[Document]):
        self.documents = documents
        self.sentences = [prepare_text(d.text) for d in documents]
        data = SentenceData.from_sentences([s for doc in self.sentences for s in doc], vectors,
                                           chars=config.get("chars", False))
        batches = inference_batches(data)
        score = tf.function(lambda batch: tagger(batch, training=False), input_signature=[batches.element_spec])
        self.batches = [(score(b).numpy(), b["length"].numpy(), b["index"].numpy()) for b in batches]
        self.count = len(data)
        self.crf = tagger.crf.numpy_weights()
        self.outside = config["tag_vocabulary"].index("O")
        self.vocabulary, self.scheme = config["tag_vocabulary"], config["scheme"]

    def decoded(self, bias: float) -> list[Document]:
        """The notes with the spans of the Viterbi paths under `bias`."""
        paths = [None] * self.count
        for scores, lengths, indices in self.batches:
            scores = scores.copy()
            scores[..., self.outside] -= bias
            for path, index, length in zip(viterbi(scores, lengths, *self.crf), indices, lengths):
                paths[index] = path[:length]
        return predicted_documents(self.documents, self.sentences, paths, self.vocabulary, self.scheme)


def chosen_bias(valid: ScoredNotes, biases, slack: float) -> tuple[float, dict]:
    """The largest bias whose validation F1 with the pattern layer is within `slack` of the best,
    and every bias's validation scores."""
    scores = {}
    for bias in biases:
        merged = [with_patterns(d) for d in valid.decoded(bias)]
        scores[bias] = sum(document_counts(valid.documents, merged), Counts()).as_dict()
    best = max(s["f1"] for s in scores.values())
    return max(b for b, s in scores.items() if s["f1"] >= best - slack), scores


def fold_rows(results: list[dict], configuration: str) -> list[dict]:
    rows = sorted((r for r in results if r["name"] == configuration and "fold" in r), key=lambda r: r["fold"])
    if not rows:
        raise SystemExit(f"no cross-validated rows of {configuration!r}")
    return rows


def run(args) -> tuple[str, dict]:
    results = json.loads(results_file(args.results_name, ".json").read_text())
    rows = fold_rows(results, args.configuration)
    documents, _ = cv_documents()
    gold = {d.id: d for d in documents}
    per_fold, test_notes = [], []
    decoded = {bias: {"": [], "+patterns": []} for bias in [*args.biases, "chosen"]}
    for row in rows:
        train, valid, test = cv_data(documents, row["fold"], row["folds"])
        tagger, config, vectors = load_tagger_run(run_folder(RUNS / args.results_name, row))
        scored_valid, scored_test = (ScoredNotes(tagger, config, vectors, notes) for notes in (valid, test))
        stored = {d.id: d.spans for d in fold_predictions(row, gold)}
        if any(d.spans != stored[d.id] for d in scored_test.decoded(0.0)):
            raise SystemExit(f"fold {row['fold']}: b = 0 does not reproduce the stored predictions")
        bias, valid_scores = chosen_bias(scored_valid, args.biases, args.slack)
        per_fold.append({"fold": row["fold"], "chosen": bias,
                         "valid": {str(b): s for b, s in valid_scores.items()}})
        test_notes += test
        for key, b in [*((b, b) for b in args.biases), ("chosen", bias)]:
            found = scored_test.decoded(b)
            decoded[key][""] += found
            decoded[key]["+patterns"] += [with_patterns(d) for d in found]
        print(f"[recall bias] fold {row['fold']}: chosen b = {bias} on {len(valid)} validation notes", flush=True)
    run = record(run_folders=[run_folder(RUNS / args.results_name, row) for row in rows])
    return report(args, rows, per_fold, test_notes, decoded, run)


def report(args, rows, per_fold, test_notes, decoded, run: dict) -> tuple[str, dict]:
    """The page and its numbers; `run` the record of this run (results_files.record), whose
    "trained_at" (the folds' run records) replaces the commit the folds' rows name."""
    counts = {(b, layer): document_counts(test_notes, notes) for b, layers in decoded.items()
              for layer, notes in layers.items()}
    trained = "" if "trained_at" in run else f", trained at {rows[0]['commit']}"  # runs without run records
    lines = [f"# A recall bias on the CRF's O score: cross-validated PhysioNet ({args.configuration})", "",
             f"{run['date']}, {commit_text(run)}; the taggers of `{args.results_name}` (5 folds by patient, seed "
             f"{rows[0]['seed']}{trained}), nothing retrained. Command: `python "
             f"experiments/recall_bias.py --results-name {args.results_name} --configuration "
             f"{json.dumps(args.configuration)} --biases {' '.join(map(str, args.biases))} --slack {args.slack}`. "
             f"Score: {COLUMN_TITLES[PRIMARY].replace(' F1', '')}, pooled over every fold's test notes "
             f"({len(test_notes)} notes); intervals: 95% bootstrap over notes, differences paired against b = 0.",
             "", "| O bias b | layer | P | R | F1 | F1 95% CI | F1 - (b = 0) | paired 95% CI |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    data = {"date": run["date"], "commit": run["commit"], "configuration": args.configuration,
            "folds": per_fold, "pooled": {}, "record": run}
    for b in decoded:
        for layer, title in (("", "alone"), ("+patterns", "+ pattern layer")):
            ours, base = counts[b, layer], counts[0.0, layer]
            scores = sum(ours, Counts()).as_dict()
            difference = micro_f1(ours) - micro_f1(base)
            interval = list(f1_difference_interval([(ours, base)]))
            name = "chosen on validation" if b == "chosen" else f"{b:g}"
            lines.append(f"| {name} | {title} | {scores['precision']:.4f} | {scores['recall']:.4f} | "
                         f"{scores['f1']:.4f} | {format_score(list(f1_interval(ours)))} | {difference * 100:+.1f} | "
                         f"[{interval[0] * 100:+.1f}, {interval[1] * 100:+.1f}] |")
            data["pooled"][f"{name}{layer}"] = {**scores, "difference": difference, "interval": interval}
    lines += ["", "Each fold's bias, chosen on its validation notes (F1 with the pattern layer within "
              f"{args.slack} of the best, the largest such b):", "",
              "| fold | chosen b | " + " | ".join(f"valid F1 / R at b = {b:g}" for b in args.biases) + " |",
              "|---:|---:|" + "---|" * len(args.biases)]
    for fold in per_fold:
        cells = [f"{fold['valid'][str(b)]['f1']:.3f} / {fold['valid'][str(b)]['recall']:.3f}" for b in args.biases]
        lines.append(f"| {fold['fold']} | {fold['chosen']:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines), data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results-name", default="baselines_cv5")
    parser.add_argument("--configuration", default="GloVe + casing + chars")
    parser.add_argument("--biases", type=float, nargs="+", default=list(BIASES))
    parser.add_argument("--slack", type=float, default=0.005)
    args = parser.parse_args()
    if 0.0 not in args.biases:
        raise SystemExit("--biases must hold 0 (the comparison's baseline)")
    text, data = run(args)
    print(text)
    write_results(f"{args.results_name}_recall_bias", text, data)


if __name__ == "__main__":
    main()
