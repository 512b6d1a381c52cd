"""Can PhysioNet's test notes tell the federation's taggers apart? For every finished seed of the
federation experiment, the taggers in its run folder score `test` again, and each difference that
issue #20's targets name gets its paired bootstrap interval over the notes (both taggers scored on
the same resampled notes: `deidpool.corpus.metrics.f1_difference_interval`): pooled - provider-only (target
>= +3 F1 points in every seed), non-private - pooled (target <= 1.5) and the non-private tagger
on all training notes - the one on the provider's notes (what pooling gains without privacy), alone
and merged with the pattern layer. With --baseline OTHER, also each representation tagger against the same tagger
of the experiment OTHER (same seeds and notes, say another selection of the representer's
epochs). The mean over seeds resamples the notes once for all seeds, so its interval holds the
notes' sampling error only, not the spread between seeds.

    python experiments/federation_paired.py [--seeds 0 1 2] [--results-name federation_reference]
        [--baseline federation_reference]

Needs the run folders runs/<results name>/seed-S (published pipelines and text taggers); every
rescored F1 must equal the one the run recorded. Writes results/federation/<results name>_paired.{md,json}.
"""

from __future__ import annotations

import argparse
import json

from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, document_counts
from federation import CORPORA, PATTERNS, REPO, f1, paired_rows, paired_table, predictions
from results_files import commit_text, record, seeds_as_numbers, write_results

COMPARISONS = (("pooled", "provider-only", "pooled - provider-only", "target >= +3 in every seed"),
               ("raw", "pooled", "non-private - pooled", "target <= +1.5"),
               ("raw", "raw-provider", "non-private: all notes - provider's notes", "what pooling could gain"))
DATA = CORPORA["physionet"].notes
REPRESENTATION_TAGGERS = ("pooled", "provider-only")


def comparisons(baseline: str | None) -> list[tuple[str, str, str, str]]:
    """The targets' comparisons, and with a `baseline` experiment each representation tagger
    against its namesake there (named "<tagger> (<baseline>)")."""
    against = [(name, f"{name} ({baseline})", f"{name} - {name} ({baseline})", "-")
               for name in REPRESENTATION_TAGGERS] if baseline else []
    return [*COMPARISONS, *against]


def report(data: dict) -> str:
    """The page of results JSON `data` (its paired rows, the number of test notes and the run's
    record: date, commit, "trained_at" where its run folders recorded it, command, seeds, results
    name and baseline)."""
    run = data["record"]
    recorded_in = " and ".join(f"{name}.json" for name in (run["results_name"], run["baseline"]) if name)
    lines = [f"# Federation experiment: paired differences on PhysioNet `test` ({run['results_name']})\n",
             f"{run['date']}, {commit_text(run)}; {data['notes']} test notes. Command: `{run['command']}`. Each "
             "cell: the F1 difference in points [paired 95% percentile bootstrap interval over the notes, 1000 "
             "resamples]; the mean over seeds resamples the notes once for all seeds (the notes' sampling error, not "
             f"the spread between seeds). Every rescored F1 equals the one in {recorded_in}.\n",
             *paired_table(seeds_as_numbers(data["rows"]), run["seeds"], COLUMN_TITLES[PRIMARY])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--results-name", default="federation_reference")
    parser.add_argument("--baseline", help="another federation experiment (results name) to compare the "
                                           "representation taggers with")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"{DATA} is absent: the experiment needs the PhysioNet split")
    from deidpool.client.patterns import with_patterns
    from deidpool.corpus.formats import read_corpus
    from deidpool.representer.embeddings import load_embeddings

    test = read_corpus(DATA, "physionet", split="test")
    vectors = load_embeddings("glove")
    compared = comparisons(args.baseline)
    # per experiment: (tagger, its key in counts)
    taggers = [(args.results_name, [(name, name) for name in sorted({name for c in COMPARISONS for name in c[:2]})])]
    if args.baseline:
        taggers.append((args.baseline, [(name, f"{name} ({args.baseline})") for name in REPRESENTATION_TAGGERS]))
    counts, folders = {}, []
    for seed in args.seeds:
        for results_name, named in taggers:
            folder = REPO / "runs" / results_name / f"seed-{seed}"
            folders.append(folder)
            if not (folder / "rows.json").exists():
                raise SystemExit(f"seed {seed} has not finished: {folder / 'rows.json'} is missing")
            recorded = json.loads((folder / "rows.json").read_text())
            for name, key in named:
                predicted = predictions(folder, name, {"test": test}, vectors)["test"]
                for suffix, found in (("", predicted), (PATTERNS, [with_patterns(d) for d in predicted])):
                    counts[seed, key, suffix] = document_counts(test, found)
                    stored = recorded[f"{name}{suffix}@test"][PRIMARY]
                    if abs(f1(counts[seed, key, suffix]) - stored) > 1e-9:
                        raise SystemExit(f"seed {seed}, {key}{suffix}: rescored F1 "
                                         f"{f1(counts[seed, key, suffix]):.6f} differs from the recorded {stored:.6f}")
                print(f"seed {seed}: {key} rescored", flush=True)
    data = {"notes": len(test), "rows": paired_rows(counts, args.seeds, compared),
            "record": record(run_folders=folders, seeds=args.seeds, results_name=args.results_name,
                             baseline=args.baseline)}
    write_results(f"{args.results_name}_paired", report(data), data)


if __name__ == "__main__":
    main()
