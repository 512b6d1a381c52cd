"""Can PhysioNet's test notes tell the federation's taggers apart? For every finished seed of the
federation experiment, the taggers in its run folder score `test` again, and each difference that
issue #20's targets name gets its paired bootstrap interval over the notes (both taggers scored on
the same resampled notes: `corpus.metrics.f1_difference_interval`): pooled - provider-only (target
>= +3 F1 points in every seed), non-private - pooled (target <= 1.5) and the non-private tagger
on all training notes - the one on the provider's notes (what pooling gains without privacy), alone
and merged with the pattern layer. With --baseline OTHER, also each representation tagger against the same tagger
of the experiment OTHER (same seeds and notes, say another selection of the representer's
epochs). The mean over seeds resamples the notes once for all seeds, so its interval holds the
notes' sampling error only, not the spread between seeds.

    python experiments/federation_paired.py [--seeds 0 1 2] [--results-name federation_reference]
        [--baseline federation_reference]

Needs the run folders runs/<results name>/seed-S (published pipelines and text taggers); every
rescored F1 must equal the one the run recorded. Writes results/<results name>_paired.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus.metrics import COLUMN_TITLES, PRIMARY, Counts, document_counts, f1_difference_interval  # noqa: E402
from federation import DATA, PATTERNS, REPO, RESULTS, predictions  # noqa: E402

COMPARISONS = (("pooled", "provider-only", "pooled - provider-only", "target >= +3 in every seed"),
               ("raw", "pooled", "non-private - pooled", "target <= +1.5"),
               ("raw", "raw-provider", "non-private: all notes - provider's notes", "what pooling could gain"))
REPRESENTATION_TAGGERS = ("pooled", "provider-only")


def comparisons(baseline: str | None) -> list[tuple[str, str, str, str]]:
    """The targets' comparisons, and with a `baseline` experiment each representation tagger
    against its namesake there (named "<tagger> (<baseline>)")."""
    against = [(name, f"{name} ({baseline})", f"{name} - {name} ({baseline})", "-")
               for name in REPRESENTATION_TAGGERS] if baseline else []
    return [*COMPARISONS, *against]


def f1(per_note: list[Counts]) -> float:
    return sum(per_note, Counts()).as_dict()["f1"]


def paired_rows(counts: dict[tuple[int, str, str], list[Counts]], seeds: list[int],
                compared=COMPARISONS) -> list[dict]:
    """One row per comparison of `compared` and tagger kind (alone, with the pattern layer): each seed's F1
    difference in points with its paired 95% interval, and their mean with the interval of the
    mean. `counts[seed, tagger, suffix]` holds the tagger's per-note counts on `test`."""
    rows = []
    for first, second, title, target in compared:
        for suffix in ("", PATTERNS):
            pairs = {seed: (counts[seed, first, suffix], counts[seed, second, suffix]) for seed in seeds}
            per_seed = {seed: {"difference": 100 * (f1(a) - f1(b)),
                               "interval": [100 * bound for bound in f1_difference_interval([(a, b)])]}
                        for seed, (a, b) in pairs.items()}
            rows.append({"comparison": title, "patterns": bool(suffix), "target": target, "seeds": per_seed,
                         "mean": {"difference": statistics.mean(s["difference"] for s in per_seed.values()),
                                  "interval": [100 * bound for bound in f1_difference_interval(list(pairs.values()))]}})
    return rows


def _cell(value: dict) -> str:
    low, high = value["interval"]
    return f"{value['difference']:+.1f} [{low:+.1f}, {high:+.1f}]"


def table(rows: list[dict], seeds: list[int]) -> list[str]:
    lines = [f"| difference ({COLUMN_TITLES[PRIMARY]}, points) | tagger | "
             + " | ".join(f"seed {seed}" for seed in seeds) + " | mean over seeds | target |",
             "|---|---|" + "---:|" * (len(seeds) + 1) + "---|"]
    for row in rows:
        lines.append(f"| {row['comparison']} | {'+ pattern layer' if row['patterns'] else 'alone'} | "
                     + " | ".join(_cell(row["seeds"][seed]) for seed in seeds)
                     + f" | {_cell(row['mean'])} | {row['target']} |")
    widths = [high - low for row in rows for low, high in [s["interval"] for s in row["seeds"].values()]]
    lines += ["", f"A single seed's paired 95% interval spans {min(widths):.1f} to {max(widths):.1f} points: a "
                  "difference has to be about half that large before these notes tell the two taggers apart."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--results-name", default="federation_reference")
    parser.add_argument("--baseline", help="another federation experiment (results name) to compare the "
                                           "representation taggers with")
    args = parser.parse_args()
    if not DATA.exists():
        raise SystemExit(f"{DATA} is absent: the experiment needs the PhysioNet split")
    from client.patterns import with_patterns
    from corpus.formats import read_corpus
    from representer.embeddings import load_embeddings

    test = read_corpus(DATA, "physionet", split="test")
    vectors = load_embeddings("glove")
    compared = comparisons(args.baseline)
    # per experiment: (tagger, its key in counts)
    taggers = [(args.results_name, [(name, name) for name in sorted({name for c in COMPARISONS for name in c[:2]})])]
    if args.baseline:
        taggers.append((args.baseline, [(name, f"{name} ({args.baseline})") for name in REPRESENTATION_TAGGERS]))
    counts = {}
    for seed in args.seeds:
        for results_name, named in taggers:
            folder = REPO / "runs" / results_name / f"seed-{seed}"
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
    rows = paired_rows(counts, args.seeds, compared)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    command = (f"python experiments/federation_paired.py --seeds {' '.join(map(str, args.seeds))} --results-name "
               f"{args.results_name}" + (f" --baseline {args.baseline}" if args.baseline else ""))
    recorded_in = " and ".join(f"{name}.json" for name in (args.results_name, args.baseline) if name)
    lines = [f"# Federation experiment: paired differences on PhysioNet `test` ({args.results_name})\n",
             f"{date.today()}, commit {commit}; {len(test)} test notes. Command: `{command}`. Each cell: the F1 "
             "difference in points [paired 95% percentile bootstrap interval over the notes, 1000 resamples]; the "
             "mean over seeds resamples the notes once for all seeds (the notes' sampling error, not the spread "
             f"between seeds). Every rescored F1 equals the one in {recorded_in}.\n", *table(rows, args.seeds)]
    text = "\n".join(lines) + "\n"
    print(text)
    (RESULTS / f"{args.results_name}_paired.md").write_text(text)
    (RESULTS / f"{args.results_name}_paired.json").write_text(
        json.dumps({"date": str(date.today()), "commit": commit, "notes": len(test), "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
