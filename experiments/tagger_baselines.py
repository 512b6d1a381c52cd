"""Non-private and pseudonymization baselines (issue: the models): trains each configuration,
tests it, and writes experiments/results/quality/<results name>.{md,json} and <results name>_f1_vs_n.png
(default name: baselines).

PhysioNet: train on provider + site_a + site_b + site_c minus a fixed 10% of their patients
(validation), test on `test`. MEDDOCAN: train minus 10% of its documents, test on dev.
Results are appended run by run to the JSON file, so an interrupted script resumes where it
stopped; `--only NAME` runs a single configuration.

    python experiments/tagger_baselines.py [--max-epochs 15] [--patience 3] [--seeds 0 1] [--results-name NAME]
        [--only TEXT] [--report-only | --rescore-patterns]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from deidpool.adversary.pseudonymize import Pseudonymizer  # noqa: E402
from deidpool.client.patterns import with_patterns  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, evaluate_corpus, score_row  # noqa: E402
from deidpool.corpus.prepare import prepare_document  # noqa: E402
from deidpool.representer.embeddings import load_embeddings, save_fasttext, train_fasttext  # noqa: E402
from deidpool.representer.tagger_runs import load_tagger_run, predict_documents, split_documents, train_tagger_run  # noqa: E402
from results_files import SCORE_COLUMNS, git_commit, over_seeds, results_file, save_figure, score_header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RUNS = ROOT / "runs" / "baselines"
NEIGHBOURS = (2, 5, 10, 20, 50, 100)
SCORED = ("token_official_hipaa", "token_hipaa", "token_all", "entity_strict")


def configurations(seeds: list[int]) -> list[dict]:
    """Every row for the first seed (most important first); the headline rows again for the others."""
    first, *others = seeds
    headline = [{"corpus": "physionet", "name": "GloVe + casing", "embeddings": "glove", "casing": True},
                {"corpus": "physionet", "name": "FastText + casing", "embeddings": "fasttext", "casing": True},
                {"corpus": "meddocan", "name": "FastText + casing", "embeddings": "fasttext", "casing": True},
                {"corpus": "physionet", "name": "pseudonymized N=100, groups", "embeddings": "glove", "casing": True,
                 "neighbours": 100, "scheme": "groups"},
                {"corpus": "physionet", "name": "originals + pseudonymized copies N=100, groups", "embeddings": "glove",
                 "casing": True, "neighbours": 100, "scheme": "groups", "keep_originals": True}]
    rows = [{**row, "seed": first} for row in headline]
    rows.insert(1, {"corpus": "physionet", "name": "GloVe", "embeddings": "glove", "casing": False, "seed": first})
    rows += [{"corpus": "physionet", "name": f"pseudonymized N={n}", "embeddings": "glove", "casing": True,
              "neighbours": n, "scheme": "neighbours", "seed": first} for n in NEIGHBOURS]
    rows += [{**row, "seed": seed} for seed in others for row in headline]
    for row in rows:
        row["key"] = f"{row['corpus']}/{row['name']}/seed{row['seed']}"
    return rows


def load_data(corpus: str):
    """(train, valid, test) documents of a corpus."""
    if corpus == "physionet":
        path = DATA / "physionet-deid"
        pool = [d for split in ("provider", "site_a", "site_b", "site_c")
                for d in read_corpus(path, "physionet", split=split)]
        train, valid = split_documents(pool, 0.1, seed=0, group=lambda d: d.id.split("-")[0])
        return train, valid, read_corpus(path, "physionet", split="test")
    train, valid = split_documents(read_corpus(DATA / "meddocan" / "train" / "brat", "brat"), 0.1, seed=0)
    return train, valid, read_corpus(DATA / "meddocan" / "dev" / "brat", "brat")


def fasttext_for(corpus: str, train) -> Path:
    """FastText trained with gensim on the training notes' tokens (cached in runs/)."""
    path = RUNS / f"fasttext-{corpus}.bin"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        sentences = [[t.text for t in s.tokens] for d in train for s in prepare_document(d)]
        started = time.perf_counter()
        save_fasttext(train_fasttext(sentences, dim=100, epochs=10), path)
        print(f"trained FastText on {len(sentences)} {corpus} sentences in {time.perf_counter() - started:.0f} s")
    return path


def run_folder(runs: Path, config: dict) -> Path:
    return runs / config["key"].replace("/", "_").replace(" ", "").replace("+", "-").replace("=", "").replace(",", "")


def pattern_scores(config: dict, test, predicted) -> dict:
    """{"patterns": scores of the predictions merged with the pattern layer (client/patterns.py,
    as `client deidentify --patterns` does)} for PhysioNet, whose English notes the patterns
    were written on; {} for other corpora."""
    if config["corpus"] != "physionet":
        return {}
    return {"patterns": score_row(evaluate_corpus(test, [with_patterns(d) for d in predicted]), SCORED)}


def add_pattern_scores(result: dict, test, runs: Path) -> dict:
    """`result` (of an earlier version of this script) with `pattern_scores` from its saved tagger."""
    tagger, setup, vectors = load_tagger_run(run_folder(runs, result))
    return {**result, **pattern_scores(result, test, predict_documents(tagger, setup, vectors, test))}


def run(config: dict, data, max_epochs: int, patience: int, runs: Path) -> dict:
    train, valid, test = data
    spec = "glove" if config["embeddings"] == "glove" else f"fasttext:{fasttext_for(config['corpus'], train)}"
    vectors = load_embeddings(spec)
    run_dir = run_folder(runs, config)
    started = time.perf_counter()
    metrics = train_tagger_run(train, valid, run_dir, embeddings=spec, casing=config["casing"],
                               pseudonymizer=config.get("neighbours") and Pseudonymizer(vectors, config["neighbours"],
                                                                         config["scheme"]),
                               keep_originals=config.get("keep_originals", False),
                               max_epochs=max_epochs, patience=patience,
                               seed=config["seed"], loaded_embeddings=vectors)
    train_seconds = time.perf_counter() - started
    tagger, setup, vectors = load_tagger_run(run_dir, loaded_embeddings=vectors)
    started = time.perf_counter()
    predicted = predict_documents(tagger, setup, vectors, test)
    predict_seconds = time.perf_counter() - started
    scores = evaluate_corpus(test, predicted)
    history = json.loads((run_dir / "history.json").read_text())
    return {**config, "commit": git_commit(), "max_epochs": max_epochs, "patience": patience,
            "epochs": metrics["epochs"], "best_epoch": metrics["best_epoch"],
            "train_seconds": round(train_seconds, 1),
            "epoch_seconds": round(statistics.median(h["seconds"] for h in history), 1),
            "test_sentences": sum(len(prepare_document(d)) for d in test),
            "predict_seconds": round(predict_seconds, 2),
            **score_row(scores, SCORED), **pattern_scores(config, test, predicted)}


def table(results: list[dict]) -> str:
    """One row per (corpus, configuration), and one for it merged with the pattern layer where
    every seed has that score: mean ± standard deviation over seeds (intervals per seed)."""
    groups: dict[tuple, list[dict]] = {}
    for result in results:
        groups.setdefault((result["corpus"], result["name"]), []).append(result)
    commits = sorted({r.get("commit", "unknown") for r in results})
    budgets = sorted({f"{r['max_epochs']} epochs max, patience {r['patience']}" for r in results if "patience" in r})
    lines = [f"Commits {', '.join(commits)}; {'; '.join(budgets) or 'budget not recorded'}; command: "
             "`python experiments/tagger_baselines.py` (its options in the JSON rows). Scores on the `test` split "
             "(PhysioNet) or dev (MEDDOCAN), mean ± sd over seeds; the interval column lists each seed's 95% "
             "bootstrap interval over notes.", "",
             "| corpus | configuration | seeds | " + score_header()
             + " | epochs | train min | s/epoch | test sentences/s |",
             "|---|---|---:|" + "---:|" * (len(SCORE_COLUMNS) + 4)]
    for (corpus, name), rows in groups.items():
        rate = statistics.mean(r["test_sentences"] / r["predict_seconds"] for r in rows)
        training = (f" | {statistics.mean(r['epochs'] for r in rows):.1f}"
                    f" | {statistics.mean(r['train_seconds'] for r in rows) / 60:.1f}"
                    f" | {statistics.mean(r['epoch_seconds'] for r in rows):.1f}")
        lines.append(f"| {corpus} | {name} | {len(rows)} | " + " | ".join(over_seeds(rows, c) for c in SCORE_COLUMNS)
                     + training + f" | {rate:,.0f} |")
        if all("patterns" in r for r in rows):
            merged = [r["patterns"] for r in rows]
            lines.append(f"| {corpus} | {name} + patterns | {len(rows)} | "
                         + " | ".join(over_seeds(merged, c) for c in SCORE_COLUMNS) + training + " | - |")
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    """The primary F1 of the pseudonymization sweep (rows scored with it) against the non-private row."""
    scored = [r for r in results if PRIMARY in r]
    sweep = sorted((r["neighbours"], r[PRIMARY]) for r in scored
                   if r.get("neighbours") and r.get("scheme", "neighbours") == "neighbours")
    reference = [r[PRIMARY] for r in scored if r["corpus"] == "physionet" and r["name"] == "GloVe + casing"]
    if not sweep:
        return
    figure, axes = plt.subplots(figsize=(6, 4.5))
    axes.plot([n for n, _ in sweep], [f for _, f in sweep], "o-", label="pseudonymized training data")
    if reference:
        axes.axhline(statistics.mean(reference), color="grey", linestyle="--", label="non-private (GloVe + casing)")
    axes.set(xscale="log", xlabel="neighbours N", ylabel=f"{COLUMN_TITLES[PRIMARY]}, PhysioNet test",
             title="Pseudonymization baseline: F1 vs N")
    axes.set_xticks([n for n, _ in sweep], [str(n) for n, _ in sweep])
    axes.minorticks_off()
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-epochs", type=int, default=15)
    parser.add_argument("--patience", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--only", help="run only the configurations whose key contains this text")
    parser.add_argument("--report-only", action="store_true", help="rewrite the table and plot from the JSON results")
    parser.add_argument("--rescore-patterns", action="store_true",
                        help="score every saved PhysioNet tagger merged with the current pattern layer again (after "
                             "the patterns changed), rewrite the table and plot, train nothing")
    parser.add_argument("--results-name", default="baselines",
                        help="results/<name>.{md,json} and <name>_f1_vs_n.png, runs in runs/baselines/<name> "
                             "(a rerun with another name starts afresh)")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"reference corpora not found at {DATA} (they live in ../shared/data beside the repository)")
    stored, table_file, plot_file = (results_file(args.results_name, ending)
                                     for ending in (".json", ".md", "_f1_vs_n.png"))
    stored.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(stored.read_text()) if stored.exists() else []
    data = {}
    done = {r["key"] for r in results}
    if args.report_only:
        table_file.write_text(table(results) + "\n")
        plot(results, plot_file)
        return
    for index, result in enumerate(results):
        if (result["corpus"] != "physionet" or ("patterns" in result and not args.rescore_patterns)
                or (args.only and args.only not in result["key"])):
            continue
        if not run_folder(RUNS / args.results_name, result).exists():
            print(f"no saved tagger for {result['key']}: its scores with the pattern layer stay missing")
            continue
        data.setdefault("physionet", load_data("physionet"))
        results[index] = add_pattern_scores(result, data["physionet"][2], RUNS / args.results_name)
        stored.write_text(json.dumps(results, indent=2) + "\n")
    if args.rescore_patterns:
        table_file.write_text(table(results) + "\n")
        plot(results, plot_file)
        return
    for config in configurations(args.seeds):
        if config["key"] in done or (args.only and args.only not in config["key"]):
            continue
        data.setdefault(config["corpus"], load_data(config["corpus"]))
        print(f"== {config['key']}", flush=True)
        results.append(run(config, data[config["corpus"]], args.max_epochs, args.patience, RUNS / args.results_name))
        stored.write_text(json.dumps(results, indent=2) + "\n")
        table_file.write_text(table(results) + "\n")
        plot(results, plot_file)
        print(table(results), flush=True)


if __name__ == "__main__":
    main()
