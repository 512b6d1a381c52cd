"""The federation experiment on the PhysioNet split (GloVe + casing, N = 100, d = 50): does
pooling the sites' noisy representations beat the provider's data alone?

    python experiments/federation.py --seeds 0 1 2 [--time-budget SECONDS] [--results-name federation_reference]
        [--selection loss|f1]
    python experiments/federation.py --seeds 0 1 2 --report-only

Budgets default to METHOD.md's reference: P1 and P2 up to 20 epochs (patience 5), P3 up to 40
(patience 10), taggers up to 25 epochs (early stopping on validation PHI F1, patience 5), audits
20 epochs; smaller ones (--p1 4 --p3 2 ...) check that everything runs. With --time-budget the
process stops after the last epoch that fits and exits 75; a rerun resumes from the checkpoints.
--selection f1 picks the representer's best P1 and P3 epochs by validation PHI F1 instead of
METHOD.md's validation loss (adversary.procedures.SELECTIONS).

Per seed: the provider trains the representer (three-phase) on its split and audits it; the
provider and every site export their notes as real contributions (client.export: noise on,
shuffled, encrypted, signed); the server's own training code (server.pooled) trains taggers on
  provider-only   the provider's contribution
  pooled          provider + site_a + site_b + site_c
  pooled-no-c     provider + site_a + site_b (for the sight-unseen rows, scored on site_c)
  pooled-2        provider + site_a (with the others: the growth curve, 1 to 4 institutions,
                  with each pool's training sentences and seconds per epoch)
each published as a pipeline and scored with client.deidentify on `test` (and on site_c), alone
and merged with the pattern layer (`client deidentify --patterns`).
Text taggers on raw embeddings (`TEXT_TAGGERS`), with the tagger-run code of the baselines: the
non-private upper bound and the pseudonymization baseline (N = 100) on all training notes, and the
non-private tagger on the provider's notes only (what pooling gains without privacy). A finished
seed that lacks one of them (run before it was added) trains just that one on a rerun.
Runs live in runs/<results name>/seed-S (resumable); the table goes to
results/<results name>.md, .json and .png. The JSON keeps every finished seed's rows, so seeds run
in separate processes, sessions or machines add up in one report.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

from adversary.procedures import SELECTIONS
from corpus.metrics import COLUMN_TITLES, PRIMARY
from representer.training import RESUMABLE_EXIT_STATUS, TimeBudgetExhausted, time_budget
from results_files import SCORE_COLUMNS, over_seeds, save_figure, score_header

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "physionet-deid"
RESULTS = REPO / "experiments" / "results"
SITES = ("site_a", "site_b", "site_c")
POOLS = {"provider-only": ("provider",), "pooled": ("provider", *SITES),
         "pooled-no-c": ("provider", "site_a", "site_b"), "pooled-2": ("provider", "site_a")}
GROWTH = ("provider-only", "pooled-2", "pooled-no-c", "pooled")  # 1 to 4 institutions
# name: (trained on all training notes, not the provider's only; pseudonymizer's N or None)
TEXT_TAGGERS = {"raw": (True, None), "pseudo": (True, 100), "raw-provider": (False, None)}
ROWS = [("non-private upper bound (raw GloVe, all training notes)", "raw", "test"),
        ("non-private, provider's notes only (raw GloVe)", "raw-provider", "test"),
        ("pseudonymization N=100 (all training notes)", "pseudo", "test"),
        ("provider-only (representations)", "provider-only", "test"),
        ("pooled (provider + 3 sites, server)", "pooled", "test"),
        ("sight-unseen: provider-only on site_c", "provider-only", "site_c"),
        ("sight-unseen: pooled without site_c, on site_c", "pooled-no-c", "site_c")]
BUDGET = ("p1", "p1_patience", "p3", "p3_patience", "tagger_epochs", "patience", "audit_epochs",
          "selection")  # in every seed's rows
PATTERNS = "+patterns"  # suffix of a tagger's rows merged with the pattern layer


def run_seed(seed: int, args) -> dict:
    """Every row of one seed (cached in its folder's rows.json; a cached seed gains the text
    taggers it lacks)."""
    from adversary.runs import AdversarialSettings, audit_run, train_adversarial_run
    from client.export import export_contribution
    from client.identity import create_institution_keys
    from client.patterns import with_patterns
    from corpus.formats import read_corpus
    from deidpool.demo import scores, tag_set
    from representer import keys
    from representer.bundle import open_bundle, publish_pipeline, publish_run
    from representer.embeddings import load_embeddings
    from representer.tagger_runs import split_documents
    from server.pooled import PooledContribution, open_pooled_data, train_pooled

    folder = REPO / "runs" / args.results_name / f"seed-{seed}"
    cache = folder / "rows.json"
    rows: dict[str, dict] = json.loads(cache.read_text()) if cache.exists() else {}
    missing = [name for name in TEXT_TAGGERS if f"{name}@test" not in rows]
    if rows and not missing:
        return rows
    folder.mkdir(parents=True, exist_ok=True)
    documents = {role: read_corpus(DATA, "physionet", split=role) for role in ("provider", *SITES, "test")}
    vectors = load_embeddings("glove")
    provider_train, provider_valid = split_documents(documents["provider"], 0.1, seed)
    if rows:  # finished before the missing text taggers were added
        rows.update(text_tagger_rows(folder, seed, missing, documents, (provider_train, provider_valid), vectors, args))
        cache.write_text(json.dumps(rows, indent=2) + "\n")
        return rows
    tags = tag_set("physionet", documents)
    settings = AdversarialSettings(pretrain_epochs=args.p1, pretrain_patience=args.p1_patience, max_epochs=args.p3,
                                   patience=args.p3_patience, selection=args.selection, seed=seed)
    metrics = train_adversarial_run("three-phase", provider_train, provider_valid, folder / "representer", settings,
                                    tags=tags, loaded_embeddings=vectors, data={"path": str(DATA), "split": "provider"})
    report_dir = folder / "audit"
    report = (json.loads((report_dir / "metrics.json").read_text()) if (report_dir / "metrics.json").exists() else
              audit_run(folder / "representer", provider_train, provider_valid, report_dir, epochs=args.audit_epochs,
                        loaded_embeddings=vectors, seed=seed))
    key_dir = folder / "keys"
    if not key_dir.exists():
        keys.create_provider_keys(key_dir)
        keys.create_server_keys(key_dir)
        for institution in ("provider", *SITES):
            create_institution_keys(key_dir / institution, institution)
    provider_key = keys.load_private_key(key_dir / "provider.key", keys.SIGNING)
    if not (folder / "bundle.tar").exists():
        publish_run(folder / "representer", provider_key, folder / "bundle.tar", audit=report_dir)
    bundle = open_bundle(folder / "bundle.tar", keys.load_public_key(key_dir / "provider.pub", keys.SIGNING))
    server_key = keys.load_private_key(key_dir / "server-encryption.key", keys.ENCRYPTION)
    contributions = {}
    for institution in ("provider", *SITES):
        path = folder / "contributions" / f"{institution}.dpc"
        if not path.exists():
            notes = provider_train + provider_valid if institution == "provider" else documents[institution]
            export_contribution(notes, bundle, vectors, path, institution=institution,
                                server_key=server_key.public_key(),
                                signing_key=keys.load_private_key(key_dir / institution / "institution.key",
                                                                  keys.SIGNING))
        contributions[institution] = PooledContribution(
            sha256=institution, path=path, institution=institution,
            public_key=keys.load_public_key(key_dir / institution / "institution.pub", keys.SIGNING))
    for name, members in POOLS.items():
        run_dir = folder / "taggers" / name
        data = open_pooled_data([contributions[member] for member in members], server_key,
                                representer_id=bundle.representer_id, num_tags=len(tags), valid_fraction=0.1, seed=seed)
        training = train_pooled(data, run_dir, tags=tags, representer_id=bundle.representer_id,
                                contributions=list(members), max_epochs=args.tagger_epochs, patience=args.patience,
                                seed=seed)
        pipeline_path = folder / "pipelines" / f"{name}.tar"
        if not pipeline_path.exists():
            publish_pipeline(bundle, run_dir / "models" / "tagger.keras", provider_key, pipeline_path, training)
        trained = {"epochs": training["epochs"], "sentences": len(data.train), "epoch_seconds": statistics.median(
            epoch["seconds"] for epoch in json.loads((run_dir / "history.json").read_text()))}
        found = predictions(folder, name, {split: documents[split] for split in ("test", "site_c")}, vectors)
        for split, predicted in found.items():
            rows[f"{name}@{split}"] = {**scores(documents[split], predicted), **trained}
            rows[f"{name}{PATTERNS}@{split}"] = {**scores(documents[split], [with_patterns(d) for d in predicted]),
                                                 **trained}
    rows.update(text_tagger_rows(folder, seed, missing, documents, (provider_train, provider_valid), vectors, args))
    rows["audit"] = {"verdict": report["verdict"], "fresh_accuracy": report["attacks"]["target/fresh"]["accuracy"],
                     "continued_accuracy": report["attacks"].get("target/continued", {}).get("accuracy"),
                     "lookup_rate": report["lookup"]["target"]["rate"],
                     "representer_val_f1": metrics["val_f1"], "p3_adversary_accuracy": metrics["val_adv_accuracy"]}
    rows["budget"] = {key: getattr(args, key) for key in BUDGET}
    cache.write_text(json.dumps(rows, indent=2) + "\n")
    return rows


def text_tagger_rows(folder: Path, seed: int, names: list[str], documents: dict, provider_split: tuple, vectors,
                     args) -> dict[str, dict]:
    """Train (or resume) the text taggers `names` of `TEXT_TAGGERS` in `folder`/taggers and
    return their rows on `test`, alone and with the pattern layer. All training notes are split
    anew; the provider's notes keep the representer's split (`provider_split`: train, valid)."""
    import keras

    from adversary.pseudonymize import Pseudonymizer
    from client.patterns import with_patterns
    from deidpool.demo import scores
    from representer.tagger_runs import split_documents, train_tagger_run

    everything = [*provider_split[0], *provider_split[1], *(d for site in SITES for d in documents[site])]
    rows = {}
    for name in names:
        all_notes, neighbours = TEXT_TAGGERS[name]
        train, valid = split_documents(everything, 0.1, seed) if all_notes else provider_split
        keras.utils.set_random_seed(seed)
        training = train_tagger_run(train, valid, folder / "taggers" / name,
                                    pseudonymizer=Pseudonymizer(vectors, neighbours) if neighbours else None,
                                    max_epochs=args.tagger_epochs, patience=args.patience, seed=seed,
                                    loaded_embeddings=vectors)
        predicted = predictions(folder, name, {"test": documents["test"]}, vectors)["test"]
        rows[f"{name}@test"] = {**scores(documents["test"], predicted), "epochs": training["epochs"]}
        rows[f"{name}{PATTERNS}@test"] = {**scores(documents["test"], [with_patterns(d) for d in predicted]),
                                          "epochs": training["epochs"]}
    return rows


def predictions(folder: Path, name: str, splits: dict[str, list], vectors) -> dict[str, list]:
    """What the seed folder's tagger `name` finds in the documents of each split of `splits`
    (their PHI spans hidden), the tagger opened once: a published pipeline (a pool of `POOLS`,
    its signature checked) or a text tagger of `TEXT_TAGGERS`."""
    from client.deidentify import find_phi
    from deidpool.demo import unlabeled
    from representer import keys
    from representer.bundle import open_bundle
    from representer.tagger_runs import load_tagger_run, predict_documents

    if name in POOLS:
        pipeline = open_bundle(folder / "pipelines" / f"{name}.tar",
                               keys.load_public_key(folder / "keys" / "provider.pub", keys.SIGNING))
        return {split: list(find_phi(unlabeled(documents), pipeline, vectors)) for split, documents in splits.items()}
    tagger, config, _ = load_tagger_run(folder / "taggers" / name, vectors)
    return {split: predict_documents(tagger, config, vectors, unlabeled(documents))
            for split, documents in splits.items()}


def _mean(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def finished_seeds(seeds: list[int], runs: Path, stored: Path) -> dict[int, dict]:
    """Every seed the results file `stored` holds (finished in an earlier process, session or on
    another machine, whose run folders may be gone) and every finished seed among `seeds` under
    `runs` (their run folders' rows win)."""
    kept = json.loads(stored.read_text())["seeds"] if stored.exists() else {}
    per_seed = {int(seed): rows for seed, rows in kept.items()}
    for seed in seeds:
        cache = runs / f"seed-{seed}" / "rows.json"
        if cache.exists():
            per_seed[seed] = json.loads(cache.read_text())
    return per_seed


def report(seeds: list[int], results_name: str) -> None:
    """The table over the finished `seeds`, with the budget their runs were trained with."""
    runs = REPO / "runs" / results_name
    stored = RESULTS / f"{results_name}.json"
    per_seed = finished_seeds(seeds, runs, stored)
    if not per_seed:
        raise SystemExit(f"no finished seed under {runs} or in {stored}")
    done = sorted(per_seed)
    stale = [seed for seed in done if PRIMARY not in per_seed[seed]["pooled@test"]]
    if stale:
        raise SystemExit(f"seeds {stale} were scored before the official i2b2 2014 token HIPAA F1 was recorded: "
                         f"delete their rows.json under {runs} and run them again to rescore them")
    for seed in done:  # runs before the selection could be chosen used METHOD.md's
        per_seed[seed]["budget"].setdefault("selection", "loss")
    budgets = {json.dumps(per_seed[seed]["budget"], sort_keys=True) for seed in done}
    if len(budgets) > 1:
        raise SystemExit(f"seeds {done} were run with different budgets ({sorted(budgets)}); report them apart")
    args = argparse.Namespace(**{"p1_patience": per_seed[done[0]]["budget"]["p1"],  # runs before patience was set
                                 "p3_patience": per_seed[done[0]]["budget"]["p3"], **per_seed[done[0]]["budget"]})
    with_patterns = all(f"pooled{PATTERNS}@test" in per_seed[seed] for seed in done)
    suffixes = ("", PATTERNS) if with_patterns else ("",)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    machine = f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}, no GPU"
    lines = ["# Federation experiment (PhysioNet, GloVe + casing, N = 100, d = 50)\n",
             f"{date.today()}, commit {commit}, {machine}; seeds {done} (mean ± sd over seeds where more than one; "
             "each 95% bootstrap interval over the scored notes is listed per seed).",
             f"Command: `python experiments/federation.py --seeds {' '.join(map(str, done))} --p1 {args.p1} "
             f"--p1-patience {args.p1_patience} --p3 {args.p3} --p3-patience {args.p3_patience} "
             f"--tagger-epochs {args.tagger_epochs} --patience {args.patience} --audit-epochs {args.audit_epochs} "
             f"--selection {args.selection} --results-name {results_name}`.",
             f"Budgets (2-core CPU machine): representer P1 and P2 up to {args.p1} epochs each (patience "
             f"{args.p1_patience}), P3 up to {args.p3} (patience {args.p3_patience}; METHOD.md's reference: 20/20/40, "
             f"patience 5/5/10), their best epochs picked by validation "
             f"{'PHI F1' if args.selection == 'f1' else 'loss (METHOD.md)'}; taggers at most {args.tagger_epochs} "
             f"epochs, patience {args.patience}; audit {args.audit_epochs} epochs.\n",
             "| tagger | scored on | " + score_header() + " |", "|---|---|" + "---|" * len(SCORE_COLUMNS)]
    for title, name, split in present_rows(per_seed):
        for suffix in suffixes:
            rows = [per_seed[seed][f"{name}{suffix}@{split}"] for seed in done]
            lines.append(f"| {title}{' + pattern layer' if suffix else ''} | {split} | "
                         + " | ".join(over_seeds(rows, key) for key in SCORE_COLUMNS) + " |")
    audits = [per_seed[seed]["audit"] for seed in done]
    lines += ["", "| audit of the representer | value |", "|---|---|",
              f"| verdicts | {', '.join(a['verdict'] for a in audits)} |",
              f"| fresh adversary held-out accuracy | {_mean([a['fresh_accuracy'] for a in audits])} |",
              f"| lookup attack (A2) rate | {_mean([a['lookup_rate'] for a in audits])} |",
              f"| P3 validation adversary accuracy | {_mean([a['p3_adversary_accuracy'] for a in audits])} |"]
    lines.append("")
    for suffix in suffixes:
        lines += target_lines(per_seed, done, suffix)
    epochs = {name: [per_seed[s][f"{name}@test"]["epochs"] for s in done] for name in (*TEXT_TAGGERS, *POOLS)
              if all(f"{name}@test" in per_seed[s] for s in done)}
    lines.append("Tagger epochs trained (early stopping, patience " f"{args.patience}): "
                 + ", ".join(f"{name} {values}" for name, values in epochs.items()) + ".")
    growth = with_patterns and all("pooled-2@test" in per_seed[seed] for seed in done)  # both came in together
    if growth:
        lines += growth_lines(per_seed, done)
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{results_name}.md").write_text(text + f"\n![F1 per tagger]({results_name}.png)\n")
    stored.write_text(json.dumps({"date": str(date.today()), "commit": commit, "machine": machine,
                                  "seeds": per_seed}, indent=2) + "\n")
    plot(per_seed, RESULTS / f"{results_name}.png")
    if growth:
        plot_growth(per_seed, RESULTS / f"{results_name}_growth.png")


def present_rows(per_seed: dict) -> list[tuple[str, str, str]]:
    """The rows of `ROWS` that every seed has (seeds run before a tagger was added lack it)."""
    return [row for row in ROWS if all(f"{row[1]}@{row[2]}" in rows for rows in per_seed.values())]


def target_lines(per_seed: dict, done: list[int], suffix: str) -> list[str]:
    """The two targets on the mean over seeds, and the pooled gain in every seed, for the taggers
    alone (`suffix` "") or merged with the pattern layer; where every seed has it, what pooling
    the raw notes gains over the provider's raw notes (the most pooling could bring here)."""
    def mean(name: str) -> float:
        return statistics.mean(per_seed[s][f"{name}{suffix}@test"][PRIMARY] for s in done)

    pooled, alone, upper = mean("pooled"), mean("provider-only"), mean("raw")
    gains = differences(per_seed, done, "pooled", "provider-only", suffix)
    return [f"Targets{' with the pattern layer' if suffix else ''}, on the {COLUMN_TITLES[PRIMARY]}: "
            f"pooled - provider-only = {100 * (pooled - alone):+.1f} F1 points (target >= +3 in every seed: "
            f"{'met' if min(gains) >= 3 else 'MISSED'}; per seed "
            + ", ".join(f"seed {s} {g:+.1f}" for s, g in zip(done, gains)) + "); non-private - pooled = "
            f"{100 * (upper - pooled):.1f} points (target <= 1.5: {'met' if upper - pooled <= 0.015 else 'MISSED'})"
            + ("; the non-private row is below the pooled one: no upper bound at this budget." if upper < pooled
               else ".")] + headroom_lines(per_seed, done, suffix)


def differences(per_seed: dict, done: list[int], first: str, second: str, suffix: str) -> list[float]:
    """Each seed's F1 of tagger `first` minus that of `second` on `test`, in points."""
    return [100 * (per_seed[s][f"{first}{suffix}@test"][PRIMARY] - per_seed[s][f"{second}{suffix}@test"][PRIMARY])
            for s in done]


def headroom_lines(per_seed: dict, done: list[int], suffix: str) -> list[str]:
    if not all(f"raw-provider{suffix}@test" in per_seed[s] for s in done):
        return []
    gains = differences(per_seed, done, "raw", "raw-provider", suffix)
    return [f"Pooling without privacy{' (with the pattern layer)' if suffix else ''}: non-private on all training "
            f"notes - non-private on the provider's notes = {statistics.mean(gains):+.1f} points (per seed "
            + ", ".join(f"seed {s} {g:+.1f}" for s, g in zip(done, gains)) + ")."]


def growth_lines(per_seed: dict, done: list[int]) -> list[str]:
    """The growth table: each pool of 1 to 4 institutions, its training sentences, seconds per
    epoch and F1 on `test` (alone and with the pattern layer), mean ± sd over seeds."""
    lines = ["", "Growth curve: the pooled tagger as institutions join (test; the server's trainer, median "
                 "seconds per epoch on this CPU)", "",
             f"| institutions | pool | training sentences | s per epoch | {COLUMN_TITLES[PRIMARY]} | with the pattern "
             "layer |", "|---:|---|---:|---:|---|---|"]
    for count, name in enumerate(GROWTH, 1):
        rows = [per_seed[seed][f"{name}@test"] for seed in done]
        merged = [per_seed[seed][f"{name}{PATTERNS}@test"] for seed in done]
        lines.append(f"| {count} | {' + '.join(POOLS[name])} | {rows[0]['sentences']:,} | "
                     f"{_mean([r['epoch_seconds'] for r in rows])} | {_mean([r[PRIMARY] for r in rows])} | "
                     f"{_mean([r[PRIMARY] for r in merged])} |")
    return lines


def plot_growth(per_seed: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    counts = range(1, len(GROWTH) + 1)
    for suffix, label in (("", "tagger alone"), (PATTERNS, "with the pattern layer")):
        for seed, rows in per_seed.items():
            axes.plot(counts, [rows[f"{name}{suffix}@test"][PRIMARY] for name in GROWTH], marker="o",
                      color="C0" if suffix else "C1", alpha=0.7, label=label if seed == min(per_seed) else None)
    axes.set(xlabel="institutions pooled", ylabel=COLUMN_TITLES[PRIMARY], xticks=list(counts))
    axes.legend(fontsize="small")
    save_figure(figure, path, dpi=100)


def plot(per_seed: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 4))
    shown = present_rows(per_seed)
    labels = [f"{name}\n({split})" for _, name, split in shown]
    for offset, metric in ((-0.2, PRIMARY), (0.2, "entity_strict_f1")):
        means = [statistics.mean(rows[f"{name}@{split}"][metric] for rows in per_seed.values())
                 for _, name, split in shown]
        axes.bar([i + offset for i in range(len(shown))], means, 0.4, label=COLUMN_TITLES[metric])
    axes.set_xticks(range(len(shown)), labels, fontsize="x-small")
    axes.set(ylabel="F1", ylim=(0, 1))
    axes.legend(fontsize="small")
    save_figure(figure, path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--p1", type=int, default=20, help="most epochs of P1 and of P2")
    parser.add_argument("--p1-patience", type=int, default=5)
    parser.add_argument("--p3", type=int, default=40, help="most epochs of P3")
    parser.add_argument("--p3-patience", type=int, default=10)
    parser.add_argument("--tagger-epochs", type=int, default=25, help="most epochs of every tagger")
    parser.add_argument("--patience", type=int, default=5, help="the taggers' early-stopping patience")
    parser.add_argument("--audit-epochs", type=int, default=20)
    parser.add_argument("--selection", choices=SELECTIONS, default="loss",
                        help="how P1 and P3 pick their best epoch: validation loss (METHOD.md) or PHI F1")
    parser.add_argument("--results-name", default="federation_reference",
                        help="stem of the result files and folder under runs/ (the short-budget runs: federation)")
    parser.add_argument("--time-budget", type=float, help="seconds this process may train: stop after the last "
                                                          "epoch that fits, exit 75; a rerun resumes")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"{DATA} is absent: the experiment needs the PhysioNet split")
    if not args.report_only:
        try:
            with time_budget(args.time_budget):
                for seed in args.seeds:
                    run_seed(seed, args)
        except TimeBudgetExhausted as stopped:
            print(f"resumable: {stopped}", flush=True)
            sys.exit(RESUMABLE_EXIT_STATUS)
    report(args.seeds, args.results_name)


if __name__ == "__main__":
    main()
