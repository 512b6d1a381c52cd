"""Non-private and pseudonymization baselines (issue: the models): trains each configuration,
tests it, and writes experiments/results/quality/<results name>.{md,json} and <results name>_f1_vs_n.png
(default name: baselines).

PhysioNet: train on provider + site_a + site_b + site_c minus a fixed 10% of their patients
(validation), test on `test`. MEDDOCAN: train minus 10% of its documents, test on dev.
Results are appended run by run to the JSON file, so an interrupted script resumes where it
stopped; `--only NAME` runs a single configuration.

`--cv K` cross-validates the PhysioNet configurations by patient instead (default name:
baselines_cv<K>): every patient of splits.json is in one of K folds (deidpool.corpus.folds), and
each fold is tested by a tagger trained on the others minus 10% of their patients (validation).
The report pools every fold's test notes (each note tested once by a tagger that never saw its
patient) and gives the spread of the folds' F1, alone and with the pattern layer, the layer's
gain on each fold and each default pattern's precision on the test folds.

    python experiments/tagger_baselines.py [--max-epochs 15] [--patience 3] [--monitor val_f1] [--seeds 0 1]
        [--results-name NAME] [--only TEXT] [--report-only [--against NAME] | --rescore-patterns]
        [--cv K [--limit NOTES_PER_PATIENT]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from deidpool.client.patterns import DEFAULT_PATTERNS, LOOKALIKES, patterns_for, with_patterns  # noqa: E402
from deidpool.corpus.document import Document, Span  # noqa: E402
from deidpool.corpus.folds import fold_split  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.corpus.formats.physionet import patient  # noqa: E402
from deidpool.corpus.metrics import (  # noqa: E402
    COLUMN_TITLES,
    PRIMARY,
    document_counts,
    evaluate_corpus,
    f1_difference_interval,
    format_score,
    micro_f1,
    score_row,
)
from deidpool.corpus.prepare import prepare_document  # noqa: E402
from deidpool.pseudonymization.pseudonymize import Pseudonymizer  # noqa: E402
from deidpool.representer.embeddings import load_embeddings, train_fasttext_on_notes  # noqa: E402
from deidpool.representer.tagger_runs import (  # noqa: E402
    TaggerSettings,
    load_tagger_run,
    predict_documents,
    split_documents,
    train_tagger_run,
)
from deidpool.representer.training import MONITORS  # noqa: E402
from pattern_layer import pattern_scores as each_pattern  # noqa: E402
from results_files import (  # noqa: E402
    SCORE_COLUMNS,
    git_commit,
    json_text,
    over_seeds,
    points_cell,
    results_file,
    save_figure,
    score_header,
    spread,
    write_run_record,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RUNS = ROOT / "runs" / "baselines"
NEIGHBOURS = (2, 5, 10, 20, 50, 100)
SCORED = ("token_official_hipaa", "token_hipaa", "token_all", "entity_strict")
LANGUAGES = {"physionet": "en", "meddocan": "es"}  # the pattern layer of each corpus's notes
FOLD_SEED = 0  # of the cross-validation folds (deidpool.corpus.folds.assign_folds)


def configurations(seeds: list[int]) -> list[dict]:
    """Every row for the first seed (most important first); the headline rows again for the others."""
    first, *others = seeds
    headline = [{"corpus": "physionet", "name": "GloVe + casing", "embeddings": "glove", "casing": True},
                {"corpus": "physionet", "name": "GloVe + casing + chars", "embeddings": "glove", "casing": True,
                 "chars": True},
                {"corpus": "physionet", "name": "FastText + casing", "embeddings": "fasttext", "casing": True},
                {"corpus": "meddocan", "name": "FastText + casing", "embeddings": "fasttext", "casing": True},
                {"corpus": "meddocan", "name": "FastText + casing + chars", "embeddings": "fasttext", "casing": True,
                 "chars": True},
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


def cv_configurations(seeds: list[int], k: int) -> list[dict]:
    """The PhysioNet configurations, each once per fold (key `<key>/fold<i>`)."""
    return [{**config, "key": f"{config['key']}/fold{fold}", "fold": fold, "folds": k, "fold_seed": FOLD_SEED}
            for config in configurations(seeds) if config["corpus"] == "physionet" for fold in range(k)]


def load_data(corpus: str):
    """(train, valid, test) documents of a corpus."""
    if corpus == "physionet":
        path = DATA / "physionet-deid"
        pool = [d for split in ("provider", "site_a", "site_b", "site_c")
                for d in read_corpus(path, "physionet", split=split)]
        return *split_documents(pool, 0.1, seed=0, group=patient), read_corpus(path, "physionet", split="test")
    train, valid = split_documents(read_corpus(DATA / "meddocan" / "train" / "brat", "brat"), 0.1, seed=0)
    return train, valid, read_corpus(DATA / "meddocan" / "dev" / "brat", "brat")


def cv_documents(limit: int | None = None) -> tuple[list[Document], set[str]]:
    """Every PhysioNet note (all patients of all splits), or the first `limit` notes of each
    patient (a smoke run), and the ids of those of the `test` split."""
    path, kept = DATA / "physionet-deid", Counter()
    documents = []
    for document in read_corpus(path, "physionet"):
        kept[patient(document)] += 1
        if limit is None or kept[patient(document)] <= limit:
            documents.append(document)
    return documents, {d.id for d in read_corpus(path, "physionet", split="test")}


def cv_data(documents: list[Document], fold: int, k: int):
    """(train, valid, test) of fold `fold` of `k` by patient: test on the fold, train on the
    others minus 10% of their patients (validation)."""
    pool, test = fold_split(documents, fold, k, FOLD_SEED, group=patient)
    return *split_documents(pool, 0.1, seed=0, group=patient), test


def fasttext_for(corpus: str, train, folder: Path = RUNS) -> Path:
    """FastText trained with gensim on the training notes' tokens (cached in `folder`)."""
    path = folder / f"fasttext-{corpus}.bin"
    if not path.exists():
        started = time.perf_counter()
        sentences = train_fasttext_on_notes(train, path)
        print(f"trained FastText on {sentences} {corpus} sentences in {time.perf_counter() - started:.0f} s")
    return path


def run_folder(runs: Path, config: dict) -> Path:
    return runs / config["key"].replace("/", "_").replace(" ", "").replace("+", "-").replace("=", "").replace(",", "")


def pattern_scores(config: dict, test, predicted) -> dict:
    """{"patterns": scores of the predictions merged with the pattern layer of the corpus's
    language (client/patterns.py, as `client deidentify --patterns --language` does)}."""
    patterns = patterns_for(LANGUAGES[config["corpus"]])
    return {"patterns": score_row(evaluate_corpus(test, [with_patterns(d, patterns) for d in predicted]), SCORED)}


def add_pattern_scores(result: dict, test, runs: Path) -> dict:
    """`result` (of an earlier version of this script) with `pattern_scores` from its saved tagger."""
    tagger, setup, vectors = load_tagger_run(run_folder(runs, result))
    return {**result, **pattern_scores(result, test, predict_documents(tagger, setup, vectors, test))}


def run(config: dict, data, max_epochs: int, patience: int, runs: Path, monitor: str = TaggerSettings.monitor) -> dict:
    """Train `config` on `data` (train, valid, test), stopping early on `monitor`, and score it on
    test; the result keeps the
    predicted spans of its test notes (`stored_predictions`) for paired comparisons and the
    cross-validated report."""
    train, valid, test = data
    # a fold's FastText sees that fold's training notes only, cached with the fold's runs
    corpus, folder = (f"physionet-fold{config['fold']}", runs) if "fold" in config else (config["corpus"], RUNS)
    spec = "glove" if config["embeddings"] == "glove" else f"fasttext:{fasttext_for(corpus, train, folder)}"
    vectors = load_embeddings(spec)
    run_dir = run_folder(runs, config)
    write_run_record(run_dir, **config, max_epochs=max_epochs, patience=patience, monitor=monitor)
    started = time.perf_counter()
    settings = TaggerSettings(embeddings=spec, casing=config["casing"], chars=config.get("chars", False),
                              keep_originals=config.get("keep_originals", False), max_epochs=max_epochs,
                              patience=patience, monitor=monitor, seed=config["seed"])
    metrics = train_tagger_run(train, valid, run_dir, settings,
                               pseudonymizer=config.get("neighbours") and Pseudonymizer(vectors, config["neighbours"],
                                                                                        config["scheme"]),
                               loaded_embeddings=vectors)
    train_seconds = time.perf_counter() - started
    tagger, setup, vectors = load_tagger_run(run_dir, loaded_embeddings=vectors)
    started = time.perf_counter()
    predicted = predict_documents(tagger, setup, vectors, test)
    predict_seconds = time.perf_counter() - started
    scores = evaluate_corpus(test, predicted)
    history = json.loads((run_dir / "history.json").read_text())
    return {**config, "commit": git_commit(), "max_epochs": max_epochs, "patience": patience, "monitor": monitor,
            "epochs": metrics["epochs"], "best_epoch": metrics["best_epoch"],
            "train_seconds": round(train_seconds, 1),
            "epoch_seconds": round(statistics.median(h["seconds"] for h in history), 1),
            "test_sentences": sum(len(prepare_document(d)) for d in test),
            "predict_seconds": round(predict_seconds, 2),
            **score_row(scores, SCORED), **pattern_scores(config, test, predicted),
            "predicted": stored_predictions(predicted)}


def stored_predictions(predicted) -> dict[str, list]:
    """{note id: [[start, end, source type], ...]} of predicted notes."""
    return {d.id: [[s.start, s.end, s.source_type] for s in d.spans] for d in predicted}


def fold_predictions(result: dict, gold: dict[str, Document]) -> list[Document]:
    """The test notes of a fold's result with the predicted spans stored in it."""
    return [Document(i, gold[i].text, tuple(Span(s, e, label, gold[i].text[s:e]) for s, e, label in spans))
            for i, spans in result["predicted"].items()]


def provenance(results: list[dict]) -> str:
    """"Commits <hashes>; <epoch budgets>" of the results."""
    commits = sorted({r.get("commit", "unknown") for r in results})
    budgets = sorted({f"{r['max_epochs']} epochs max, patience {r['patience']}"
                      + (f", stopping on {r['monitor']}" if "monitor" in r else "")
                      for r in results if "patience" in r})
    return f"Commits {', '.join(commits)}; {'; '.join(budgets) or 'budget not recorded'}"


def table(results: list[dict]) -> str:
    """One row per (corpus, configuration), and one for it merged with the pattern layer where
    every seed has that score: mean ± standard deviation over seeds (intervals per seed)."""
    groups: dict[tuple, list[dict]] = {}
    for result in results:
        groups.setdefault((result["corpus"], result["name"]), []).append(result)
    lines = [f"{provenance(results)}; command: "
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


AGAINST_MEASURES = ("entity_strict", "token_hipaa")


def against_lines(results: list[dict], other: list[dict], other_name: str,
                  gold: dict[str, dict[str, Document]]) -> list[str]:
    """Each configuration of `results` against the same configuration and seeds of `other` (another
    results name, e.g. the same taggers stopping on another monitor), alone and with the pattern
    layer: the difference of the seeds' mean F1 with its paired bootstrap interval over the test
    notes (`gold`: {corpus: {note id: gold note}}) and each seed's difference."""
    theirs = {(r["corpus"], r["name"], r["seed"]): r for r in other}
    groups: dict[tuple, list[tuple[dict, dict]]] = {}
    for ours in results:
        if (ours["corpus"], ours["name"], ours["seed"]) in theirs:
            groups.setdefault((ours["corpus"], ours["name"]), []).append(
                (ours, theirs[ours["corpus"], ours["name"], ours["seed"]]))
    if not groups:
        return []
    lines = ["", f"## Against {other_name} (the same configurations, seeds and test notes)", "",
             "| corpus | configuration | tagger | measure | seeds | difference, points [95% paired bootstrap CI over "
             "notes] | by seed |", "|---|---|---|---|---:|---:|---|"]
    for (corpus, name), pairs in groups.items():
        notes = gold[corpus]
        patterns = patterns_for(LANGUAGES[corpus])
        for title, layer in (("alone", lambda d: d), ("+ pattern layer", lambda d: with_patterns(d, patterns))):
            sides = [[[layer(d) for d in fold_predictions(row, notes)] for row in pair] for pair in pairs]
            for measure in AGAINST_MEASURES:
                counts = [tuple(document_counts([notes[d.id] for d in side], side, measure) for side in pair)
                          for pair in sides]
                by_seed = [100 * (micro_f1(ours) - micro_f1(theirs)) for ours, theirs in counts]
                cell = points_cell(statistics.mean(by_seed),
                                                 [100 * bound for bound in f1_difference_interval(counts)])
                lines.append(f"| {corpus} | {name} | {title} | {COLUMN_TITLES[f'{measure}_f1']} | {len(pairs)} | "
                             f"{cell} | " + " ".join(f"{pair[0]['seed']}: {gain:+.1f}"
                                                     for pair, gain in zip(pairs, by_seed)) + " |")
    return lines


def cv_summary(rows: list[dict], gold: dict[str, Document]) -> dict:
    """One configuration's fold results: its scores pooled over every fold's test notes, alone and
    merged with the current pattern layer (`with_patterns`), each fold's official token
    HIPAA F1 of both, and the paired bootstrap interval over notes of the layer's pooled gain."""
    rows = sorted(rows, key=lambda r: r["fold"])
    alone = [fold_predictions(r, gold) for r in rows]
    merged = [[with_patterns(d) for d in fold] for fold in alone]
    tested = [[gold[d.id] for d in fold] for fold in alone]
    every_note = [d for fold in tested for d in fold]

    def fold_f1(predicted) -> list[float]:
        return [micro_f1(document_counts(t, p)) for t, p in zip(tested, predicted)]

    pooled_alone, pooled_merged = ([d for fold in predicted for d in fold] for predicted in (alone, merged))
    gain = f1_difference_interval([(document_counts(every_note, pooled_merged),
                                    document_counts(every_note, pooled_alone))])
    return {"folds": [r["fold"] for r in rows],
            "counts": {"": document_counts(every_note, pooled_alone),
                       " + patterns": document_counts(every_note, pooled_merged)},
            "pooled": score_row(evaluate_corpus(every_note, pooled_alone), SCORED),
            "pooled_patterns": score_row(evaluate_corpus(every_note, pooled_merged), SCORED),
            "fold_f1": fold_f1(alone), "fold_f1_patterns": fold_f1(merged), "gain_interval": list(gain)}


def cv_table(results: list[dict], documents: list[Document], unseen: set[str]) -> str:
    """The cross-validated report of fold results (`run` on `cv_configurations`): per
    configuration its pooled scores and fold spread alone and with the pattern layer, the layer's
    gain on every fold, the folds' sizes, and each default pattern's precision on the test folds
    (on all of them, on the worst fold, and on the notes of `unseen` ids, those of the `test` split,
    which no pattern was written from). `documents`: the gold notes the folds were drawn from."""
    gold = {d.id: d for d in documents}
    by_configuration: dict[str, list[dict]] = {}
    for result in results:
        by_configuration.setdefault(result["key"].rpartition("/")[0], []).append(result)
    summaries = {f"{rows[0]['name']}, seed {rows[0]['seed']}": cv_summary(rows, gold)
                 for rows in by_configuration.values()}
    k = results[0]["folds"]
    smoke = [r["limit"] for r in results if "limit" in r]
    lines = [f"# Cross-validated baselines: PhysioNet, {k} folds by patient", "",
             f"{provenance(results)}; command: `python experiments/tagger_baselines.py --cv {k}` (its options in the "
             f"JSON rows){f'; SMOKE RUN: at most {smoke[0]} notes per patient' if smoke else ''}. Every patient of "
             f"splits.json is in one fold (deidpool.corpus.folds, seed {results[0]['fold_seed']}, balanced by note "
             "count); each fold is tested by a tagger trained on the other folds minus 10% of their patients "
             "(validation, early stopping). Pooled: scores over the test notes of all folds together (every note "
             "tested once), the interval the 95% bootstrap interval over notes; per fold: mean ± sd of the folds' "
             f"{COLUMN_TITLES[PRIMARY]}.", "",
             f"| configuration | folds | {score_header()} | F1 per fold (mean ± sd) |",
             "|---|---:|" + "---:|" * (len(SCORE_COLUMNS) + 1)]
    for name, summary in summaries.items():
        for label, pooled, per_fold in ((name, summary["pooled"], summary["fold_f1"]),
                                        (f"{name} + patterns", summary["pooled_patterns"],
                                         summary["fold_f1_patterns"])):
            lines.append(f"| {label} | {len(summary['folds'])}/{k} | "
                         + " | ".join(format_score(pooled[c]) for c in SCORE_COLUMNS) + f" | {spread(per_fold, 4)} |")
    lines += ["", f"## Gain of the pattern layer ({COLUMN_TITLES[PRIMARY]})", "",
              "| configuration | pooled gain | 95% paired bootstrap CI over notes | gain per fold | "
              "positive on every fold |", "|---|---:|---:|---|---|"]
    for name, summary in summaries.items():
        gains = [m - a for m, a in zip(summary["fold_f1_patterns"], summary["fold_f1"])]
        pooled = summary["pooled_patterns"][PRIMARY] - summary["pooled"][PRIMARY]
        lines.append(f"| {name} | {pooled:+.4f} | {format_score(summary['gain_interval'])} | "
                     + " ".join(f"{fold}: {gain:+.4f}" for fold, gain in zip(summary["folds"], gains))
                     + f" | {'yes' if all(g > 0 for g in gains) else 'NO'} |")
    lines += paired_configuration_lines(summaries)
    folds = {r["fold"]: [gold[i] for i in r["predicted"]] for r in results}
    lines += ["", "## Folds", "", "| fold | patients | notes | gold PHI spans |", "|---:|---:|---:|---:|"]
    lines += [f"| {fold} | {len({patient(d) for d in notes})} | {len(notes)} | {sum(len(d.spans) for d in notes)} |"
              for fold, notes in sorted(folds.items())]
    lines += pattern_lines(sorted(folds.items()), unseen)
    lines += lookalike_lines([d for r in results for d in fold_predictions(r, gold)], gold, unseen)
    return "\n".join(lines)


def paired_configuration_lines(summaries: dict[str, dict]) -> list[str]:
    """Every configuration tested on all folds against the first one, alone and with the pattern
    layer: the pooled F1 difference with its paired bootstrap interval over the same notes."""
    first, *others = summaries.items()
    others = [(name, summary) for name, summary in others if summary["folds"] == first[1]["folds"]]
    if not others:
        return []
    lines = ["", f"## Against {first[0]} ({COLUMN_TITLES[PRIMARY]}, pooled over the folds)", "",
             "| configuration | tagger | difference | 95% paired bootstrap CI over notes |", "|---|---|---:|---:|"]
    for name, summary in others:
        for suffix, title in (("", "alone"), (" + patterns", "+ pattern layer")):
            ours, theirs = summary["counts"][suffix], first[1]["counts"][suffix]
            difference = micro_f1(ours) - micro_f1(theirs)
            lines.append(f"| {name} | {title} | {difference:+.4f} | "
                         f"{format_score(list(f1_difference_interval([(ours, theirs)])))} |")
    return lines


def lookalike_lines(predicted: list[Document], gold: dict[str, Document], unseen: set[str]) -> list[str]:
    """The table of what each look-alike (`deidpool.client.patterns.LOOKALIKES`) takes from the
    tagger's `predicted` spans: the spans it drops and how many of them overlap a gold PHI span
    (PHI the layer then misses), on all test folds and on the `test` split's notes (`unseen` ids)."""
    lines = ["", "## Look-alikes: the tagger spans each one drops", "",
             "A dropped span that overlaps a gold PHI span is PHI lost to the look-alike; one that overlaps none "
             "is a false positive removed. Counted over each tagger's own test fold.", "",
             "| look-alike | spans dropped, all folds | of them gold PHI | spans dropped, `test` split | "
             "of them gold PHI |", "|---|---:|---:|---:|---:|"]
    for lookalike in LOOKALIKES:
        counts = [0, 0, 0, 0]
        for document in predicted:
            refused = list(lookalike.spans(document.text))
            for span in document.spans:
                if any(other.start <= span.start and span.end <= other.end for other in refused):
                    phi = any(span.start < g.end and g.start < span.end for g in gold[document.id].spans)
                    counts[0] += 1
                    counts[1] += phi
                    if document.id in unseen:
                        counts[2] += 1
                        counts[3] += phi
        lines.append(f"| {lookalike.name} | " + " | ".join(map(str, counts)) + " |")
    return lines


def pattern_lines(folds: list[tuple[int, list[Document]]], unseen: set[str]) -> list[str]:
    """The table of each default pattern's spans and precision (pattern_layer.pattern_scores: the
    share of its spans that overlap a gold PHI span) on the test notes of `folds`."""
    every_note = [d for _, notes in folds for d in notes]
    overall = each_pattern(every_note)
    per_fold = [each_pattern(notes) for _, notes in folds]
    on_test = each_pattern([d for d in every_note if d.id in unseen])
    lines = ["", "## Each default pattern on the test folds", "",
             "A pattern span that overlaps no gold PHI span (of any type) is a false positive. All folds: every "
             "note, including those of the provider and site splits the patterns were written on; `test` split: "
             "only the notes of its patients, which no pattern was written from.", "",
             "| pattern | label | spans | precision, all folds | lowest fold precision (fold, its spans) | "
             "spans, `test` split | precision, `test` split |", "|---|---|---:|---:|---:|---:|---:|"]

    def cell(value):
        return "n/a" if value is None else format_score(value)

    default = {p.name for p in DEFAULT_PATTERNS if not p.refuses}
    for index, row in enumerate(overall):
        if row["pattern"] not in default:
            continue
        precision, fold, spans = min(((scores[index]["precision"], fold, scores[index]["spans"])
                                      for (fold, _), scores in zip(folds, per_fold) if scores[index]["spans"]),
                                     default=(None, None, 0))
        lowest = f"{format_score(precision)} (fold {fold}, {spans} spans)" if spans else "n/a"
        lines.append(f"| {row['pattern']} | {row['label']} | {row['spans']} | {cell(row['precision'])} | {lowest} | "
                     f"{on_test[index]['spans']} | {cell(on_test[index]['precision'])} |")
    return lines


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
    parser.add_argument("--monitor", choices=MONITORS, default=TaggerSettings.monitor,
                        help="what early stopping and the kept epoch go by (recorded in each row)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--only", help="run only the configurations whose key contains this text")
    parser.add_argument("--report-only", action="store_true", help="rewrite the table and plot from the JSON results")
    parser.add_argument("--against", metavar="NAME",
                        help="with --report-only: each configuration against the same one and seeds of results NAME")
    parser.add_argument("--rescore-patterns", action="store_true",
                        help="score every saved tagger merged with its corpus's current pattern layer again (after "
                             "the patterns changed), rewrite the table and plot, train nothing")
    parser.add_argument("--results-name",
                        help="results/<name>.{md,json} and <name>_f1_vs_n.png, runs in runs/baselines/<name> "
                             "(a rerun with another name starts afresh; default: baselines, with --cv "
                             "baselines_cv<K>[_limit<NOTES>])")
    parser.add_argument("--cv", type=int, metavar="K",
                        help="cross-validate the PhysioNet configurations over K folds by patient instead")
    parser.add_argument("--limit", type=int, metavar="NOTES",
                        help="with --cv: only the first NOTES notes of each patient (a smoke run)")
    args = parser.parse_args()
    if args.limit and not args.cv:
        parser.error("--limit needs --cv")
    if args.against and not args.report_only:
        parser.error("--against needs --report-only")
    if args.cv and args.rescore_patterns:
        parser.error("the cross-validated report scores the pattern layer afresh each time: use --report-only")
    if not DATA.exists():
        sys.exit(f"reference corpora not found at {DATA} (they live in ../shared/data beside the repository)")
    name = args.results_name or (f"baselines_cv{args.cv}{f'_limit{args.limit}' if args.limit else ''}"
                                 if args.cv else "baselines")
    stored, table_file, plot_file = (results_file(name, ending) for ending in (".json", ".md", "_f1_vs_n.png"))
    stored.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(stored.read_text()) if stored.exists() else []
    if args.cv:
        cross_validate(args, name, results)
        return
    data = {}
    done = {r["key"] for r in results}
    if args.report_only:
        text = table(results)
        if args.against:
            other = json.loads(results_file(args.against, ".json").read_text())
            gold = {corpus: {d.id: d for d in load_data(corpus)[2]} for corpus in {r["corpus"] for r in results}}
            text += "\n" + "\n".join(against_lines(results, other, args.against, gold))
        table_file.write_text(text + "\n")
        plot(results, plot_file)
        return
    for index, result in enumerate(results):
        if ("patterns" in result and not args.rescore_patterns) or (args.only and args.only not in result["key"]):
            continue
        if not run_folder(RUNS / name, result).exists():
            print(f"no saved tagger for {result['key']}: its scores with the pattern layer stay missing")
            continue
        data.setdefault(result["corpus"], load_data(result["corpus"]))
        results[index] = add_pattern_scores(result, data[result["corpus"]][2], RUNS / name)
        stored.write_text(json_text(results))
    if args.rescore_patterns:
        table_file.write_text(table(results) + "\n")
        plot(results, plot_file)
        return
    for config in configurations(args.seeds):
        if config["key"] in done or (args.only and args.only not in config["key"]):
            continue
        data.setdefault(config["corpus"], load_data(config["corpus"]))
        print(f"== {config['key']}", flush=True)
        results.append(run(config, data[config["corpus"]], args.max_epochs, args.patience, RUNS / name, args.monitor))
        stored.write_text(json_text(results))
        table_file.write_text(table(results) + "\n")
        plot(results, plot_file)
        print(table(results), flush=True)


def cross_validate(args: argparse.Namespace, name: str, results: list[dict]) -> None:
    """--cv: train and test every selected PhysioNet configuration on each fold not in `results`,
    appending the fold's result to results/<name>.json (as stored then: processes on other folds may share it)
    and rewriting the report after each."""
    stored, table_file = results_file(name, ".json"), results_file(name, ".md")
    documents, unseen = cv_documents(args.limit)

    def report() -> None:
        text = cv_table(results, documents, unseen)
        table_file.write_text(text + "\n")
        print(text, flush=True)

    if args.report_only:
        if results:
            report()
        return
    done = {r["key"] for r in results}
    for config in cv_configurations(args.seeds, args.cv):
        if config["key"] in done or (args.only and args.only not in config["key"]):
            continue
        print(f"== {config['key']}", flush=True)
        config = {**config, **({"limit": args.limit} if args.limit else {})}
        result = run(config, cv_data(documents, config["fold"], args.cv), args.max_epochs, args.patience, RUNS / name,
                     args.monitor)
        # Re-read before writing: another process may have added its own folds (--only fold2 beside --only fold3).
        results[:] = [r for r in json.loads(stored.read_text()) if r["key"] != result["key"]] if stored.exists() else []
        results.append(result)
        stored.write_text(json_text(results))
        report()


if __name__ == "__main__":
    main()
