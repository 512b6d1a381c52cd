"""What pseudonymization costs a tagger: federation.py's text tagger trained on all parties' notes,
raw or with every gold PHI token pseudonymized under each scheme, scored on the raw test notes.

    python experiments/pseudonymization_utility.py --corpus meddocan --seeds 0 1 2 [--time-budget SECONDS]
    python experiments/pseudonymization_utility.py --corpus physionet --seeds 0 1 2 --limit 20 --tagger-epochs 1 \\
        --results-name pseudonymization_utility_physionet_smoke      # a check that everything runs
    python experiments/pseudonymization_utility.py --corpus meddocan --seeds 0 1 2 --report-only
    python experiments/pseudonymization_utility.py --corpus meddocan --seeds 0 --taggers raw surrogates
    python experiments/pseudonymization_utility.py --corpus meddocan --taggers surrogates --before NAME
        # today's surrogates paired with those of runs/NAME (the same command run at an earlier commit)

Taggers (`TAGGERS`): raw text, "groups" at N = 100 and N = 500 (the export default's scheme until
these results made it "surrogates") and "surrogates" (realistic values of each PHI type in the
corpus's language, drawn whatever the original), each on the same split of the parties' notes
(federation.CORPORA, its embeddings: GloVe, or the provider's FastText on MEDDOCAN) and with
federation.py's tagger configuration and budget (--tagger-epochs, --patience). The report gives
each F1 per seed and the paired differences scheme - raw and surrogates - groups N = 100 with their
paired bootstrap intervals, on the corpus's headline and other measure, alone and merged with
the pattern layer. Runs live in runs/<results name>/seed-S (each tagger kept in the seed's
rows.json when done; a rerun resumes); the tables go to experiments/results/privacy/<results name>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import date
from pathlib import Path

import federation
from deidpool.corpus.metrics import COLUMN_TITLES
from results_files import commit_text, git_commit, json_text, over_seeds, record, results_file, spread, write_run_record

REPO = federation.REPO
# name: (pseudonymization scheme, N) of its training notes, None for raw text
TAGGERS = {"raw": None, "groups-100": ("groups", 100), "surrogates": ("surrogates", federation.NEIGHBOURS),
           "groups-500": ("groups", 500)}  # trained in this order
# The "surrogates" tagger of another results name (--before): the same notes, seeds and budget
# under the surrogate scheme of an earlier commit, against which today's scheme is paired.
BEFORE = "surrogates-before"
TITLES = {"raw": "raw text", "groups-100": "groups, N = 100", "groups-500": "groups, N = 500",
          "surrogates": "surrogates", BEFORE: "surrogates of --before"}
# (first, second, what the difference means, what we hope for), as federation.COMPARISONS
COMPARISONS = (*((name, "raw", f"{TITLES[name]} - raw text", "> -1.0") for name in TAGGERS if name != "raw"),
               ("surrogates", "groups-100", "surrogates - groups, N = 100", "> 0"),
               ("surrogates", BEFORE, "surrogates today - surrogates of --before", ">= -0.5 strict"))
BUDGET = ("tagger_epochs", "patience", "limit")


def progress(message: str) -> None:
    print(f"[pseudonymization utility] {message}", flush=True)


def run_seed(seed: int, args) -> dict:
    """Every tagger's rows of one seed; each is stored in the seed folder's rows.json when done,
    and a rerun trains only what is missing."""
    import keras

    from deidpool.corpus.formats import read_corpus
    from deidpool.pseudonymization.pseudonymize import Pseudonymizer
    from deidpool.representer.tagger_runs import TaggerSettings, split_documents, train_tagger_run

    corpus = federation.CORPORA[args.corpus]
    folder = REPO / "runs" / args.results_name / f"seed-{seed}"
    cache = folder / "rows.json"
    rows = federation.stored_rows(cache, {key: getattr(args, key) for key in BUDGET})
    if all(f"{name}@test" in rows for name in args.taggers):
        return rows
    documents = {party: read_corpus(corpus.notes, corpus.fmt, split=party)[:args.limit] for party in federation.PARTIES}
    path, fmt, split = corpus.test
    test = read_corpus(REPO.parent / path, fmt, split=split)[:args.limit]
    write_run_record(folder, seed=seed, budget=rows["budget"], data=args.corpus, taggers=args.taggers)
    spec, vectors = federation.provider_embeddings(corpus, folder, documents["provider"], seed)
    train, valid = split_documents([d for party in federation.PARTIES for d in documents[party]], 0.1, seed)
    for name in args.taggers:
        scheme = TAGGERS[name]
        if f"{name}@test" in rows:
            continue
        progress(f"seed {seed}: text tagger {name} on {len(train)} + {len(valid)} notes")
        keras.utils.set_random_seed(seed)
        pseudonymizer = scheme and Pseudonymizer(vectors, scheme[1], scheme[0], corpus.language)
        training = train_tagger_run(train, valid, folder / "taggers" / name,
                                    TaggerSettings(embeddings=spec, max_epochs=args.tagger_epochs,
                                                   patience=args.patience, seed=seed),
                                    pseudonymizer=pseudonymizer, loaded_embeddings=vectors, progress=False)
        predicted = federation.predictions(folder, name, {"test": test}, vectors)["test"]
        found = federation.test_rows(corpus, test, predicted, {"epochs": training["epochs"]})
        rows.update({f"{name}{suffix}@test": row for suffix, row in found.items()})
        cache.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def finished_seeds(seeds: list[int], runs: Path, stored: Path, before: str | None = None) -> dict[int, dict]:
    """The seeds the results file `stored` holds and those among `seeds` under `runs` with two
    taggers done, counting the "surrogates" tagger of the results name `before` as `BEFORE` (their
    run folders' rows win)."""
    per_seed = {int(seed): rows for seed, rows in
                (json.loads(stored.read_text())["seeds"] if stored.exists() else {}).items()}
    for seed in seeds:
        cache = runs / f"seed-{seed}" / "rows.json"
        rows = {**(json.loads(cache.read_text()) if cache.exists() else {}),
                **(before_rows(REPO / "runs" / before / f"seed-{seed}" / "rows.json") if before else {})}
        if sum(f"{name}@test" in rows for name in TITLES) > 1:
            per_seed[seed] = rows
    return per_seed


def before_rows(cache: Path) -> dict[str, dict]:
    """The "surrogates" rows of another results name's seed as `BEFORE`'s (none where not done)."""
    rows = json.loads(cache.read_text()) if cache.exists() else {}
    return {key.replace("surrogates", BEFORE, 1): row for key, row in rows.items() if key.startswith("surrogates")}


def report_text(per_seed: dict[int, dict], corpus_name: str, results_name: str,
                stamp: dict | None = None, before: str | None = None) -> tuple[str, dict]:
    """The report of the seeds `per_seed` (their rows.json) run at `stamp` (date, commit, machine, and
    "trained_at" where their run folders recorded it; by default now, here) as Markdown, and the
    paired rows by measure: the taggers every seed has (a comparison with one missing is left out);
    `before`: the results name --before paired."""
    stamp = stamp or run_stamp()
    corpus = federation.CORPORA[corpus_name]
    done = sorted(per_seed)
    budget = per_seed[done[0]]["budget"]
    headline = federation.titled(corpus, COLUMN_TITLES[corpus.headline])
    keys = [corpus.headline, *(key for key in federation.MEASURES if key != corpus.headline)]
    titles = [federation.titled(corpus, COLUMN_TITLES[key]) for key in keys]
    limit = f" --limit {budget['limit']}" if budget["limit"] else ""
    lines = [f"# Pseudonymization's cost in utility ({corpus.title})\n",
             f"{stamp['date']}, {commit_text(stamp)}, {stamp['machine']}; seeds {done}. Text taggers "
             "(federation.py's configuration) on all parties' notes, "
             f"{'the first ' + str(budget['limit']) + ' of each party and of the test notes, ' if limit else ''}"
             f"scored on the raw test notes `{corpus.test[0]}`. Headline: {headline}.",
             f"Command: `python experiments/pseudonymization_utility.py --corpus {corpus_name} --seeds "
             f"{' '.join(map(str, done))} --tagger-epochs {budget['tagger_epochs']} --patience {budget['patience']}"
             f"{limit} --results-name {results_name}{f' --before {before}' if before else ''}`.\n",
             "| training notes | tagger | " + " | ".join(titles) + " | epochs |",
             "|---|---|" + "---|" * (len(keys) + 1)]
    for name in (name for name in (*TAGGERS, BEFORE) if all(f"{name}@test" in per_seed[seed] for seed in done)):
        for suffix in ("", federation.PATTERNS):
            rows = [per_seed[seed][f"{name}{suffix}@test"] for seed in done]
            epochs = spread([row["epochs"] for row in rows], 1)
            lines.append(f"| {TITLES[name]} | {'+ pattern layer' if suffix else 'alone'} | "
                         + " | ".join(over_seeds(rows, key) for key in keys) + f" | {epochs} |")
    paired = {}
    for key, title in zip(keys, titles):
        measure = federation.MEASURES[key]
        paired[measure] = federation.paired_rows(federation.note_counts(per_seed, done, measure), done, COMPARISONS)
        lines += ["", f"Paired differences on the test notes, {title}: each cell the F1 difference in points [paired "
                      "95% percentile bootstrap interval over the notes, 1000 resamples]; the mean over seeds "
                      "resamples the notes once for all seeds.", "",
                  *federation.paired_table(paired[measure], done, title)]
    return "\n".join(lines) + "\n", paired


def report(seeds: list[int], results_name: str, corpus_name: str, before: str | None = None) -> None:
    """Write the results files <results_name>.md and .json over the finished seeds."""
    stored = results_file(results_name, ".json")
    per_seed = finished_seeds(seeds, REPO / "runs" / results_name, stored, before)
    if not per_seed:
        raise SystemExit(f"no finished seed under runs/{results_name} or in {stored}")
    done = sorted(per_seed)
    folders = [REPO / "runs" / name / f"seed-{seed}" for name in (results_name, before) if name for seed in done]
    run = record(folders, **run_stamp(), seeds=done, budget=per_seed[done[0]]["budget"], data=corpus_name,
                 before=before)
    stamp = {key: run[key] for key in ("date", "commit", "machine", "trained_at") if key in run}
    text, paired = report_text(per_seed, corpus_name, results_name, stamp, before)
    print(text)
    stored.parent.mkdir(parents=True, exist_ok=True)
    results_file(results_name, ".md").write_text(text)
    stored.write_text(json_text({**stamp, "corpus": corpus_name, "paired": paired, "seeds": per_seed, "record": run}))


def run_stamp() -> dict:
    """The date, commit and machine of a report written now."""
    return {"date": str(date.today()), "commit": git_commit(),
            "machine": f"Python {platform.python_version()}, {os.cpu_count()} CPUs, no GPU"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=federation.CORPORA, default="meddocan")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tagger-epochs", type=int, default=25, help="most epochs of every tagger")
    parser.add_argument("--patience", type=int, default=5, help="the taggers' early-stopping patience")
    parser.add_argument("--taggers", nargs="+", choices=TAGGERS, default=list(TAGGERS),
                        help="train only these taggers (default: all); the report shows those every seed has")
    parser.add_argument("--limit", type=int, help="only the first LIMIT notes of each party and of the test notes "
                                                  "(a check that everything runs)")
    parser.add_argument("--results-name", help="stem of the result files and folder under runs/ (default: "
                                               "pseudonymization_utility_<corpus>)")
    parser.add_argument("--time-budget", type=float, help="seconds this process may train: stop after the last "
                                                          "epoch that fits, exit 75; a rerun resumes")
    parser.add_argument("--before", metavar="RESULTS_NAME",
                        help="pair this run's surrogates tagger with the one of runs/RESULTS_NAME (the same "
                             "seeds and budget run at an earlier commit: what a change of the scheme costs)")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    args.results_name = args.results_name or f"pseudonymization_utility_{args.corpus}"
    if not args.report_only:
        if not federation.CORPORA[args.corpus].notes.exists():
            raise SystemExit(f"{federation.CORPORA[args.corpus].notes} is absent: the shared {args.corpus} corpus")
        federation.run_seeds(run_seed, args)
    report(args.seeds, args.results_name, args.corpus, args.before)


if __name__ == "__main__":
    main()
