"""Adversarial representations on PhysioNet (issue: privacy): three-phase runs for N in
{10, 50, 100, 500} and DANN at N = 100, each with the jointly trained tagger, a tagger retrained
from scratch on exported noisy representations (as the pooling server would), and an audit;
writes experiments/results/privacy/adversarial.{md,json} and adversarial_{f1_vs_n,audit}.png.

Data as in the baselines: train on provider + site_a + site_b + site_c minus a fixed 10% of
their patients (validation), test on `test`; GloVe + casing, representation size 50. The
audit attacks with pairs from the training notes and judges on pairs from the test notes.
Results are appended configuration by configuration, and every training run resumes from
its checkpoints, so an interrupted script continues where it stopped.

    python experiments/adversarial.py [--only N=100] [--pretrain-epochs 20] [--max-epochs 40]
        [--patience 10] [--audit-epochs 20] [--audit-passes K] [--retrain-epochs 20]
        [--train-splits provider ...] [--lam 10] [--output-noise 1.0]

A non-default --lam, --output-noise (the initial std of the representer's output noise) or
--selection f1 (best epochs by validation PHI F1, not docs/method.md's validation loss) is part of
the configuration's name, e.g. "three-phase N=100, lambda 10".

Small budget (a check that everything runs, not results): --pretrain-epochs 1 --max-epochs 1
--audit-epochs 2 --retrain-epochs 1 --results-name adversarial_smoke.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from deidpool.representer.threads import configure_threads

configure_threads()

import keras  # noqa: E402
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from audit_seeds import strongest_attack  # noqa: E402
from deidpool.adversary.audit import FLOOR, best_accuracy, run_audit  # noqa: E402
from deidpool.adversary.pairs import PairSource  # noqa: E402
from deidpool.adversary.procedures import SELECTIONS, AdversarialData, build_models, train_dann, train_three_phase  # noqa: E402
from deidpool.client.inference import apply_to_sentences, compile_pipeline, compile_representer  # noqa: E402
from deidpool.corpus.casing import CASING  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, evaluate_corpus, score_row  # noqa: E402
from deidpool.corpus.prepare import prepare_document, prepare_text  # noqa: E402
from deidpool.corpus.tagging import tag_vocabulary  # noqa: E402
from deidpool.pseudonymization.pseudonymize import Pseudonymizer  # noqa: E402
from deidpool.representer.dataset import SentenceData, predicted_documents  # noqa: E402
from deidpool.representer.embeddings import load_glove_default  # noqa: E402
from deidpool.representer.noise import noise_free_copy  # noqa: E402
from deidpool.representer.representation import OUTPUT_NOISE_STDDEV, load_representer  # noqa: E402
from deidpool.representer.tagger import build_tagger, compute_class_weights, tag_sentences  # noqa: E402
from deidpool.representer.tagger_runs import split_documents  # noqa: E402
from deidpool.representer.training import (  # noqa: E402
    RESUMABLE_EXIT_STATUS,
    TaggerTraining,
    TimeBudgetExhausted,
    run_training,
    time_budget,
)
from results_files import configuration_folder, over_seeds, results_file, save_figure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "physionet-deid"
RUNS = ROOT / "runs"
CONFIGURATIONS = [{"name": f"three-phase N={n}", "procedure": "three-phase", "neighbours": n}
                  for n in (10, 50, 100, 500)]
CONFIGURATIONS.append({"name": "DANN N=100", "procedure": "dann", "neighbours": 100})
REPR_SIZE = 50
TRAIN_SPLITS = ("provider", "site_a", "site_b", "site_c")
# Recorded with every result:
BUDGET = ("pretrain_epochs", "max_epochs", "patience", "audit_epochs", "audit_passes", "audit_learning_rate",
          "retrain_epochs", "representer_units", "tagger_units", "adversary_units", "train_splits", "output_noise",
          "lam", "export")
# The score columns of each tagger (joint, retrained on exports): the official i2b2 2014 token HIPAA F1, its
# bootstrap interval over the test notes, and the project tokenizer's token HIPAA F1.
TAGGER_COLUMNS = ("token_official_hipaa_f1", "token_official_hipaa_f1_interval", "token_hipaa_f1")


def load_data(splits=TRAIN_SPLITS):
    """(train, valid, test) documents, split as in experiments/tagger_baselines.py: the
    training `splits` minus a fixed 10% of their patients (validation), and `test`."""
    pool = [d for split in splits for d in read_corpus(DATA, "physionet", split=split)]
    train, valid = split_documents(pool, 0.1, seed=0, group=lambda d: d.id.split("-")[0])
    return train, valid, read_corpus(DATA, "physionet", split="test")


def sentences(documents):
    return [s for d in documents for s in prepare_document(d)]


def test_scores(documents, predict_sentences, vocabulary) -> dict:
    """The headline scores (`deidpool.corpus.metrics.score_row`: token HIPAA with the official i2b2 2014
    tokens, primary, and with the project's, entity strict) of a sentence predictor on `documents`."""
    return score_row(evaluate_corpus(documents, test_predictions(documents, predict_sentences, vocabulary)))


def test_predictions(documents, predict_sentences, vocabulary) -> list:
    """`documents` with their spans replaced by a sentence predictor's."""
    per_document = [prepare_text(d.text) for d in documents]
    predictions = predict_sentences([s for doc in per_document for s in doc])
    return predicted_documents(documents, per_document, predictions, vocabulary)


def retrained_tagger(out: Path, representer, labeled, vocabulary, embeddings, neighbours: int,
                     args, scheme: str = "neighbours") -> tuple[object, dict]:
    """A fresh tagger trained on noisy representations exported from the training and
    validation sentences (`labeled`: the two lists of prepared sentences), as the pooling server
    trains on contributions: every PHI token pseudonymized among `neighbours` under `scheme`
    before the representer runs, as `client export` does (1: a raw export)."""
    represent = compile_representer(representer, embeddings.dim)
    pseudonymizer, rng = Pseudonymizer(embeddings, neighbours, scheme), random.Random(args.seed)

    def exported(prepared) -> SentenceData:
        sentence_data = SentenceData.from_sentences(pseudonymizer.labeled_sentences(prepared, rng), embeddings,
                                                    vocabulary)
        vectors = apply_to_sentences(represent, sentence_data)
        lengths = sentence_data.lengths
        return SentenceData.from_arrays(vectors, per_sentence(sentence_data.casing, lengths),
                                        per_sentence(sentence_data.tags, lengths))

    train, valid = exported(labeled[0]), exported(labeled[1])
    keras.utils.set_random_seed(args.seed)
    tagger = build_tagger(REPR_SIZE, len(vocabulary), lstm_units=args.tagger_units)
    procedure = TaggerTraining(tagger, compute_class_weights(train.tag_counts(len(vocabulary))))
    metrics = run_training(procedure, train, valid, out, max_epochs=args.retrain_epochs, patience=args.retrain_patience,
                           seed=args.seed, config={"tags": vocabulary, "source": "exported representations",
                                    "export_neighbours": neighbours, "export_pseudonymization": scheme})
    return tagger, metrics


def joint_predictor(representer, tagger, embeddings):
    """Prepared sentences -> tags of the jointly trained `tagger` on `representer`'s output, its
    noise off, as `client deidentify` runs a pipeline."""
    pipeline = compile_pipeline(noise_free_copy(representer), tagger, embeddings.dim)
    return lambda prepared: apply_to_sentences(pipeline, SentenceData.from_sentences(prepared, embeddings))


def retrained_predictor(representer, tagger, embeddings):
    """Prepared sentences -> tags of a `tagger` trained on exported representations (casing beside them),
    the representer's noise off, as `client deidentify` runs a pipeline."""
    represent = compile_representer(noise_free_copy(representer), embeddings.dim)

    def predict(prepared):
        unlabeled = SentenceData.from_sentences(prepared, embeddings)
        vectors = apply_to_sentences(represent, unlabeled)
        casing = per_sentence(unlabeled.casing, unlabeled.lengths)
        return tag_sentences(tagger, SentenceData.from_arrays(vectors, casing))

    return predict


def per_sentence(values, lengths):
    """Flat per-token `values` cut into sentences of `lengths`."""
    return np.split(values, np.cumsum(lengths)[:-1])


def configuration_name(name: str, args) -> str:
    """`name` with the settings that differ from the method's defaults, e.g. "three-phase N=100, lambda 10"."""
    changed = [f"lambda {args.lam:g}"] if args.lam != 1.0 else []
    changed += [f"output noise {args.output_noise:g}"] if args.output_noise != OUTPUT_NOISE_STDDEV else []
    changed += ["raw export"] if args.export == "raw" else []
    changed += ["F1 selection"] if args.selection == "f1" else []
    changed += [f"seed {args.seed}"] if args.seed else []
    return ", ".join([name, *changed])


def run_dir(config: dict, args) -> Path:
    """runs/<results name>/<configuration>: smoke runs never resume into real ones."""
    return RUNS / args.results_name / configuration_folder(config["name"])


def run(config: dict, documents, embeddings, args) -> dict:
    train_docs, valid_docs, test_docs = documents
    folder = run_dir(config, args)
    vocabulary = tag_vocabulary({span.source_type for d in train_docs + valid_docs for span in d.spans})
    n = config["neighbours"]
    data = [AdversarialData.from_sentences(sentences(docs), embeddings, vocabulary, n)
            for docs in (train_docs, valid_docs)]
    keras.utils.set_random_seed(args.seed)
    models = build_models(embeddings.dim, len(vocabulary), REPR_SIZE, representer_units=args.representer_units,
                          tagger_units=args.tagger_units, adversary_units=args.adversary_units,
                          output_noise=args.output_noise)
    options = {"class_weights": compute_class_weights(data[0].sentences.tag_counts(len(vocabulary))), "seed": args.seed,
               "lam": args.lam, "selection": args.selection,
               "config": {"embeddings": "glove", "tags": vocabulary, "scheme": "BIO", "label": "source_type",
                          "neighbours": n, "repr_size": REPR_SIZE,
                          "casing": {"feature": "reimers-gurevych-2017", "classes": list(CASING)}}}
    if config["procedure"] == "three-phase":
        metrics = train_three_phase(*models, *data, folder / "training", max_epochs=(args.pretrain_epochs,
                                    args.pretrain_epochs, args.max_epochs), patience=(args.pretrain_patience,
                                    args.pretrain_patience, args.patience), **options)
    else:
        metrics = train_dann(*models, *data, folder / "training", max_epochs=args.max_epochs, patience=args.patience,
                             **options)
    train_seconds = sum(r["seconds"] for r in json.loads((folder / "training" / "history.json").read_text()))
    model_dir = folder / "training" / "models"
    representer, tagger = load_representer(model_dir / "representer.keras"), keras.saving.load_model(
        model_dir / "tagger.keras", compile=False)
    joint = test_scores(test_docs, joint_predictor(representer, tagger, embeddings), vocabulary)
    started = time.perf_counter()
    pooled, pooled_metrics = retrained_tagger(folder / "retrained", representer,
                                              [sentences(docs) for docs in (train_docs, valid_docs)], vocabulary,
                                              embeddings, n if args.export == "pseudonymized" else 1, args)
    retrain_seconds = time.perf_counter() - started
    retrained = test_scores(test_docs, retrained_predictor(representer, pooled, embeddings), vocabulary)
    pseudonymizer = Pseudonymizer(embeddings, n)
    started = time.perf_counter()
    p1 = model_dir / "representer_p1.keras"
    report = run_audit(representer, PairSource(sentences(train_docs), pseudonymizer),
                       PairSource(sentences(test_docs), pseudonymizer), folder / "audit", epochs=args.audit_epochs,
                       adversary=keras.saving.load_model(model_dir / "adversary.keras", compile=False),
                       p1_representer=load_representer(p1) if p1.exists() else None, units=args.adversary_units,
                       seed=args.seed, config={"representer": str(model_dir / "representer.keras")},
                       passes=args.audit_passes, learning_rate=args.audit_learning_rate,
                       export_path=args.export == "pseudonymized")
    audit_seconds = time.perf_counter() - started
    return {**config, "epochs": metrics["epochs"], "train_seconds": round(train_seconds, 1),
            "phase_seconds": metrics.get("seconds"), "val_f1": metrics["val_f1"],
            "val_adv_accuracy": metrics["val_adv_accuracy"], "joint": joint, "retrained": retrained,
            "retrain_epochs": pooled_metrics["epochs"], "retrain_seconds": round(retrain_seconds, 1),
            "audit_seconds": round(audit_seconds, 1), "audit": report,
            "budget": {key: getattr(args, key) for key in BUDGET}}


def rescored(row: dict, documents, embeddings, args) -> dict:
    """`row` with its joint and retrained taggers (saved in its run folder) scored on `test`
    again by `test_scores`, when the row predates the official token HIPAA F1."""
    if PRIMARY in row["joint"]:
        return row
    train_docs, valid_docs, test_docs = documents
    vocabulary = tag_vocabulary({span.source_type for d in train_docs + valid_docs for span in d.spans})
    folder = run_dir(row, args)
    representer = load_representer(folder / "training" / "models" / "representer.keras")
    joint = keras.saving.load_model(folder / "training" / "models" / "tagger.keras", compile=False)
    retrained = keras.saving.load_model(folder / "retrained" / "models" / "tagger.keras", compile=False)
    print(f"== rescoring {row['name']}", flush=True)
    return {**row, "joint": test_scores(test_docs, joint_predictor(representer, joint, embeddings), vocabulary),
            "retrained": test_scores(test_docs, retrained_predictor(representer, retrained, embeddings), vocabulary)}


def _accuracy(report: dict, attack: str) -> str:
    result = report["attacks"].get(attack)
    if result is None:
        return "-"
    heads = result["heads"]
    return f"{max(h['rate'] for h in heads.values()):.3f} ({result['verdict']})"


def _inversion(report: dict) -> str:
    """The target's inversion top-1 / top-10 beside the baselines'; audits from before the
    baselines scored every in-vocabulary PHI token (so said)."""
    def scores(result):
        return f"{result['top1']:.3f} / {result['top10']:.3f}"

    baselines = report.get("inversion_baselines")
    if baselines is None:
        return f"{scores(report['inversion']['target'])} (all PHI tokens)"
    return (f"{scores(report['inversion']['target'])} ("
            + "; ".join(f"{name} {scores(result)}" for name, result in baselines.items()) + ")")


def table(results: list[dict], baselines: list[dict]) -> str:
    """One row per configuration, the baselines' PhysioNet GloVe rows first."""
    scores = [f"{COLUMN_TITLES[key]}, {tagger}" for tagger in ("joint tagger", "tagger retrained on exports")
              for key in TAGGER_COLUMNS]
    header = ["configuration", *scores, "fresh adversary acc.", "continued adversary acc.", "raw / P1 control acc.",
              "partner-only floor acc.", "lookup rate", "inversion top-1 / top-10, hidden PHI (baselines)", "verdict",
              "train min", "max epochs P1,P2 / P3 / audit (x draws)", "training notes"]
    rows = []
    for row in baselines:
        if row["key"].startswith("physionet/GloVe + casing") or row.get("neighbours"):
            rows.append([f"{row['name']}, seed {row['seed']} (baseline)",
                         *(over_seeds([row], key) for key in TAGGER_COLUMNS),
                         *[""] * (len(TAGGER_COLUMNS) + 7),  # no retrained tagger, none of the 7 audit columns
                         f"{row['train_seconds'] / 60:.1f}", "",
                         "all training splits"])
    for r in results:
        report, budget = r["audit"], r["budget"]
        controls = " / ".join(_accuracy(report, f"{c}/fresh").split(" ")[0] for c in ("raw", "p1"))
        rows.append([r["name"],
                     *(over_seeds([r[tagger]], key) for tagger in ("joint", "retrained") for key in TAGGER_COLUMNS),
                     _accuracy(report, "target/fresh"), _accuracy(report, "target/continued"), controls,
                     _accuracy(report, FLOOR), f"{report['lookup']['target']['rate']:.3f}", _inversion(report),
                     report["verdict"], f"{r['train_seconds'] / 60:.1f}",
                     f"{budget['pretrain_epochs']} / {budget['max_epochs']} / {budget['audit_epochs']}"
                     f"{' x ' + str(report['passes']) if report.get('passes', 1) > 1 else ''}",
                     " + ".join(budget.get("train_splits", TRAIN_SPLITS))])
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [header, ["---"] * len(header), *rows])


def plot(results: list[dict], args, path_f1: Path, path_audit: Path, path_pareto: Path) -> None:
    """F1 vs N of the three-phase rows at the method's settings (other settings as single
    points), the fresh adversaries' held-out accuracy per audit epoch of every row, and the
    trade-off: F1 of the tagger retrained on exports against the strongest attack."""
    scored = [r for r in results if PRIMARY in r["joint"]]  # rows scored with the official measure
    grid = sorted((r for r in scored if r["name"] == f"three-phase N={r['neighbours']}"), key=lambda r: r["neighbours"])
    variants = [r for r in scored if r["procedure"] == "three-phase" and r not in grid]
    figure, axes = plt.subplots(figsize=(6, 4))
    for key, label in (("joint", "joint tagger"), ("retrained", "tagger retrained on exports")):
        axes.plot([r["neighbours"] for r in grid], [r[key][PRIMARY] for r in grid], "o-", label=label)
        for r in variants:
            axes.plot(r["neighbours"], r[key][PRIMARY], "x", label=f"{label}, {r['name'].split(', ', 1)[1]}")
    axes.set(xscale="log", xlabel="neighbours N", ylabel=f"{COLUMN_TITLES[PRIMARY]}, test",
             title="Three-phase adversarial representation: F1 vs N")
    axes.legend(fontsize="small")
    save_figure(figure, path_f1)
    figure, axes = plt.subplots(figsize=(6, 4))
    for r in results:
        history_file = run_dir(r, args) / "audit" / "history.json"
        if not history_file.exists():  # a row run on another machine: its folder is not here
            print(f"audit plot: no {history_file}, {r['name']} left out", flush=True)
            continue
        records = json.loads(history_file.read_text())["target/fresh"]
        axes.plot([h["epoch"] for h in records], [best_accuracy(h) for h in records], marker="o", label=r["name"])
    axes.axhline(0.5, color="grey", linestyle="--")
    axes.set(xlabel="audit epoch", ylabel="fresh adversary held-out accuracy (best output)", ylim=(0, 1))
    axes.legend(fontsize="small")
    save_figure(figure, path_audit)
    figure, axes = plt.subplots(figsize=(6, 4))
    for r in scored:
        axes.plot(strongest_attack(r["audit"]), r["retrained"][PRIMARY], "o", label=r["name"])
    axes.axvline(0.5, color="grey", linestyle="--", label="chance")
    axes.set(xlabel="strongest attack on the target (held-out rate)",
             ylabel=f"{COLUMN_TITLES[PRIMARY]},\ntagger retrained on exports",
             xlim=(0.45, 1.0), title="Utility vs privacy (left and high is better)")
    axes.legend(fontsize="small")
    save_figure(figure, path_pareto)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="run only the configurations whose name contains this text")
    parser.add_argument("--pretrain-epochs", type=int, default=20, help="most epochs of P1 and of P2")
    parser.add_argument("--pretrain-patience", type=int, default=5)
    parser.add_argument("--max-epochs", type=int, default=40, help="most epochs of P3 and of DANN")
    parser.add_argument("--patience", type=int, default=10)
    parser.add_argument("--audit-epochs", type=int, default=20)
    parser.add_argument("--audit-passes", type=int, default=None,
                        help="fresh draws of the pairs per audit epoch (default: adversary.audit.automatic_passes)")
    parser.add_argument("--audit-learning-rate", type=float, default=0.01)
    parser.add_argument("--export", choices=("pseudonymized", "raw"), default="pseudonymized",
                        help="what institutions share, for the retrained tagger and the audit: representations of "
                             "notes with every PHI token pseudonymized among the configuration's N (as `client "
                             "export` does), or of the raw notes (the paper)")
    parser.add_argument("--retrain-epochs", type=int, default=20)
    parser.add_argument("--retrain-patience", type=int, default=3)
    parser.add_argument("--representer-units", type=int, default=128)
    parser.add_argument("--tagger-units", type=int, default=128)
    parser.add_argument("--adversary-units", type=int, default=64)
    parser.add_argument("--lam", type=float, default=1.0, help="lambda, the weight of the adversarial term")
    parser.add_argument("--output-noise", type=float, default=OUTPUT_NOISE_STDDEV,
                        help="initial std of the representer's trainable output noise")
    parser.add_argument("--train-splits", nargs="+", choices=TRAIN_SPLITS, default=list(TRAIN_SPLITS),
                        help="PhysioNet splits to train on (validation: 10%% of their patients)")
    parser.add_argument("--selection", choices=SELECTIONS, default="loss",
                        help="how P1, P3 and DANN pick their best epoch: validation loss (docs/method.md) or PHI F1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results-name", default="adversarial", help="stem of the result files")
    parser.add_argument("--report-only", action="store_true", help="rebuild the table and plots from the JSON")
    parser.add_argument("--rescore", action="store_true",
                        help="score the saved taggers of rows without the official token HIPAA F1 again on test "
                             "(run with the options the rows were run with), then rebuild the table")
    parser.add_argument("--time-budget", type=float, default=None,
                        help="seconds this process may train: stop after the last epoch that fits, exit 75; "
                             "a rerun resumes from the checkpoints")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"PhysioNet data not found at {DATA} (it lives in ../shared/data beside the repository)")
    stored = results_file(args.results_name, ".json")
    stored.parent.mkdir(parents=True, exist_ok=True)
    results, baselines = read_rows(stored), read_rows(results_file("baselines", ".json"))
    if args.report_only:
        write_report(results, baselines, args)
        return
    done = {r["name"] for r in results}
    documents, embeddings = load_data(args.train_splits), load_glove_default()
    if args.rescore:
        stored.write_text(json.dumps([rescored(row, documents, embeddings, args) for row in results], indent=2) + "\n")
        write_report(read_rows(stored), baselines, args)
        return
    for config in CONFIGURATIONS:
        config = {**config, "name": configuration_name(config["name"], args)}
        if config["name"] in done or (args.only and args.only not in config["name"]):
            continue
        print(f"== {config['name']}", flush=True)
        try:
            with time_budget(args.time_budget):
                result = run(config, documents, embeddings, args)
        except TimeBudgetExhausted as stopped:
            print(f"resumable: {stopped}", flush=True)
            sys.exit(RESUMABLE_EXIT_STATUS)
        # Re-read: another process may have added its configuration to the same file meanwhile.
        results = read_rows(stored) + [result]
        stored.write_text(json.dumps(results, indent=2) + "\n")
        write_report(results, baselines, args)


def read_rows(path: Path) -> list[dict]:
    """The result rows stored in the JSON file `path` (none when it does not exist yet)."""
    return json.loads(path.read_text()) if path.exists() else []


def write_report(results: list[dict], baselines: list[dict], args) -> None:
    """The table (printed and in <results name>.md) and the two plots."""
    text = table(results, baselines)
    results_file(args.results_name, ".md").write_text(text + "\n")
    plot(results, args, *(results_file(args.results_name, f"_{kind}.png") for kind in ("f1_vs_n", "audit", "pareto")))
    print(text, flush=True)


if __name__ == "__main__":
    main()
