"""Which PHI types a tagger loses: entity strict F1 per source type on the test notes, for taggers
kept in experiment run folders, each against a reference tagger of the same seeds.

    python experiments/type_breakdown.py --corpus meddocan --seeds 0 1 2 \\
        --taggers federation_meddocan_short:raw federation_meddocan_short:pseudo federation_meddocan_short:pooled \\
        --results-name type_breakdown_meddocan_short

A tagger is RUN:NAME, read from runs/RUN/seed-S: a text tagger (taggers/NAME: federation.py's or
pseudonymization_utility.py's), a published pool of federation.POOLS (pipelines/NAME.tar) or a
diagnosis variant (diagnosis/FOLDER, representation_diagnosis.py's pipeline). The first tagger is
the reference. Each seed's counts per type are kept in runs/RUN/seed-S/type_breakdown/; the F1 of
a type pools its counts over the seeds. The table goes to experiments/results/federation/<name>.md
and .json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import federation
from results_files import commit_text, record, write_results

REPO = federation.REPO
COUNTS = ("tp", "fp", "fn")


def tagger_counts(corpus: federation.Corpus, spec: str, seed: int, test: list) -> dict[str, dict[str, int]]:
    """{source type: {tp, fp, fn}} of the tagger `spec` (RUN:NAME) of one seed on the test notes,
    computed once and kept in the seed folder."""
    from deidpool.corpus.metrics import evaluate_corpus

    run, _, name = spec.partition(":")
    kept = REPO / "runs" / run / f"seed-{seed}" / "type_breakdown" / f"{name.replace('/', '-')}.json"
    if kept.exists():
        return json.loads(kept.read_text())
    per_type = evaluate_corpus(test, found_documents(corpus, spec, seed, test), corpus.entity_key)[
        "entity_strict"]["per_type"]
    counts = {kind: {key: int(row[key]) for key in COUNTS} for kind, row in per_type.items()}
    kept.parent.mkdir(exist_ok=True)
    kept.write_text(json.dumps(counts, indent=1) + "\n")
    return counts


def found_documents(corpus: federation.Corpus, spec: str, seed: int, test: list) -> list:
    """The test notes with the spans that the tagger `spec` (RUN:NAME) of one seed finds (the
    tagger alone, no pattern layer), tagged once and kept in the seed folder's found/ (by the test
    notes' ids) until the tagger changes."""
    from deidpool.corpus.formats import read_corpus, write_corpus

    folder, name = seed_folder(spec, seed)
    if not folder.is_dir():
        raise SystemExit(f"{folder} is absent: run the experiment that trains {spec} for seed {seed} first")
    source = (folder / name / "pipeline.tar" if name.startswith("diagnosis/") else
              folder / "pipelines" / f"{name}.tar" if name in federation.POOLS else folder / "taggers" / name)
    notes = hashlib.sha256("\n".join(document.id for document in test).encode()).hexdigest()[:12]
    kept = folder / "found" / f"{name.replace('/', '-')}-{notes}.json"
    if kept.exists() and source.exists() and kept.stat().st_mtime > source.stat().st_mtime:
        return read_corpus(kept, "json", overlaps=True)
    _, vectors = federation.provider_embeddings(corpus, folder, [], seed)
    federation.progress(f"seed {seed}: {spec} tags the test notes")
    if name.startswith("diagnosis/"):
        provider = federation.seed_provider(folder)
        found = federation.pipeline_predictions(source, provider, {"test": test}, vectors)["test"]
    else:
        found = federation.predictions(folder, name, {"test": test}, vectors)["test"]
    write_corpus(found, kept, "json", replace=True)
    return found


def tagger_folders(specs: list[str], seeds: list[int]) -> list[Path]:
    """The run folders the taggers `specs` (RUN:NAME) of `seeds` are read from: each seed folder
    runs/RUN/seed-S, and a diagnosis variant's own folder in it (whose run record names what trained it)."""
    folders = []
    for spec in specs:
        for seed in seeds:
            folder, name = seed_folder(spec, seed)
            folders += [folder, *([folder / name] if name.startswith("diagnosis/") else [])]
    return folders


def seed_folder(spec: str, seed: int) -> tuple[Path, str]:
    """(runs/RUN/seed-S, NAME) of the tagger `spec` (RUN:NAME) of seed `seed`."""
    run, _, name = spec.partition(":")
    return REPO / "runs" / run / f"seed-{seed}", name


def pooled_f1(per_seed: list[dict[str, dict[str, int]]], kind: str | None = None) -> float:
    """F1 of one type (None: all types) with its counts summed over the seeds."""
    tp, fp, fn = (sum(counts[k][key] for counts in per_seed for k in counts if kind in (None, k)) for key in COUNTS)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def breakdown(counts: dict[str, list[dict]]) -> dict:
    """The numbers of the table of `counts` ({tagger: [per seed {type: tp, fp, fn}]}, the reference
    first): {"gold": {type: gold spans over all seeds}, types by gold spans, most first; "f1":
    {type, and "all": {tagger: F1 with the counts summed over the seeds}}}."""
    reference = next(iter(counts))
    gold: dict[str, int] = {}
    for seed in counts[reference]:
        for kind, row in seed.items():
            gold[kind] = gold.get(kind, 0) + row["tp"] + row["fn"]
    kinds = sorted({kind for per_seed in counts.values() for seed in per_seed for kind in seed},
                   key=lambda kind: (-gold.get(kind, 0), kind))
    return {"gold": {kind: gold.get(kind, 0) for kind in kinds},
            "f1": {kind or "all": {spec: pooled_f1(per_seed, kind) for spec, per_seed in counts.items()}
                   for kind in [*kinds, None]}}


def report(data: dict) -> str:
    """The page of results JSON `data` (`breakdown`'s numbers, the seeds and the run's record:
    date, commit, "trained_at" where its run folders recorded it, command, corpus, test notes): a
    row per type and one for all types, each tagger's F1 and the others' difference to the
    reference in points."""
    run, f1 = data["record"], data["f1"]
    reference, *others = f1["all"]
    lines = [f"# Entity strict F1 per type ({federation.CORPORA[run['corpus']].title})\n",
             f"{run['date']}, {commit_text(run)}; seeds {data['seeds']}; test notes `{run['test_notes']}`. "
             f"Command: `{run['command']}`. Each cell: F1 with the type's counts summed over the seeds, and in "
             f"parentheses its difference to `{reference}` in points. Gold: the type's spans over all seeds' "
             "scorings.\n",
             "| type | gold spans | " + " | ".join(f"`{spec}`" for spec in f1["all"]) + " |",
             "|---|---:|" + "---:|" * len(f1["all"])]
    for kind in [*data["gold"], "all"]:
        cells = [f"{f1[kind][reference]:.3f}"]
        cells += [f"{f1[kind][spec]:.3f} ({100 * (f1[kind][spec] - f1[kind][reference]):+.1f})" for spec in others]
        name, spans = ("**all types**", sum(data["gold"].values())) if kind == "all" else (kind, data["gold"][kind])
        lines.append(f"| {name} | {spans} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tagger_arguments(description: str, stem: str) -> argparse.Namespace:
    """The command line of a script that scores taggers RUN:NAME on a federation's test notes:
    --corpus, --seeds, --taggers (the reference first) and --results-name (`stem`_...)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--corpus", choices=federation.CORPORA, default="meddocan")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--taggers", nargs="+", required=True, help="RUN:NAME, the reference first")
    parser.add_argument("--results-name", required=True, help=f"stem of the result files ({stem}_...)")
    args = parser.parse_args()
    if any(":" not in spec for spec in args.taggers):
        parser.error("every tagger is RUN:NAME, e.g. federation_meddocan_valloss:pooled")
    return args


def test_notes(corpus: federation.Corpus) -> list:
    """The federation's test notes."""
    from deidpool.corpus.formats import read_corpus

    path, fmt, split = corpus.test
    return read_corpus(REPO.parent / path, fmt, split=split)


def main() -> None:
    args = tagger_arguments(__doc__.splitlines()[0], "type_breakdown")
    corpus = federation.CORPORA[args.corpus]
    test = test_notes(corpus)
    counts = {spec: [tagger_counts(corpus, spec, seed, test) for seed in args.seeds] for spec in args.taggers}
    run = record(run_folders=tagger_folders(args.taggers, args.seeds), corpus=args.corpus, test_notes=corpus.test[0])
    data = {"seeds": args.seeds, **breakdown(counts), "record": run}
    write_results(args.results_name, report(data), data)


if __name__ == "__main__":
    main()
