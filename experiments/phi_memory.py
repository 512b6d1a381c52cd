"""What does an institution's PHI memory (`client remember`, `client deidentify --memory`) add to
the published pipeline and to a raw-text tagger? The federation's taggers (nothing is trained)
score the test notes alone, with the pattern layer, and with the pattern layer and a memory:

- the representation gap with the same layers on both sides: the pooled pipeline against the
  raw-text tagger on all notes, each with the memory of all parties' notes (the notes both
  taggers were trained on);
- the memory's own gain on each;
- the site's view: each site's published pipeline against its own raw-text tagger, each with the
  site's own memory (what a hospital has in hand).

    python experiments/phi_memory.py --corpus meddocan --federation federation_meddocan_valloss \\
        --pooled diagnosis/surrogates-at-export --seeds 0 1 2 --results-name phi_memory_meddocan

Paired 95% bootstrap intervals over the test notes (federation.paired_rows). The table goes to
experiments/results/federation/<name>.md and .json.
"""

from __future__ import annotations

import argparse

import federation
from results_files import commit_text, record, seeds_as_numbers, write_results
from type_breakdown import REPO, found_documents, tagger_folders, test_notes

LAYERS = ("", "+patterns", "+patterns+memory")
LAYER_TITLES = {"": "alone", "+patterns": "+ patterns", "+patterns+memory": "+ patterns + memory of all parties"}


def layered(found: list, language: str, memory: dict, patterns: tuple | None = None) -> dict[str, list]:
    """The tagger's found notes under each of `LAYERS` (`memory`: the one the last layer merges;
    `patterns`: the layer, by default the language's)."""
    from deidpool.client.memory import memory_patterns
    from deidpool.client.patterns import patterns_for, with_patterns

    patterns = patterns_for(language) if patterns is None else patterns
    with_memory = (*patterns, *memory_patterns(memory))
    return {"": found, "+patterns": [with_patterns(d, patterns) for d in found],
            "+patterns+memory": [with_patterns(d, with_memory) for d in found]}


def comparisons(sites: list[str]) -> list[tuple[str, str, str, str, str]]:
    """(first, second, title, target, layers) of the report; the taggers' names are
    TAGGER+LAYER[@MEMORY]: spans merged with the pattern layer and the memory of all parties
    (or of one site)."""
    rows = [(f"pooled{layer}", f"raw{layer}", "representation gap: pooled pipeline - raw text (all notes)", "> -1.0",
             LAYER_TITLES[layer]) for layer in LAYERS]
    rows += [(f"{tagger}+patterns+memory", f"{tagger}+patterns", f"the memory's gain: {title}", "-",
              "+ patterns + memory against + patterns")
             for tagger, title in (("pooled", "pooled pipeline"), ("raw", "raw text (all notes)"))]
    for site in sites:
        rows += [(f"pooled+patterns+memory@{site}", f"raw-{site}+patterns+memory@{site}",
                  f"{site}'s view: pooled pipeline - its own raw-text tagger", "> 0",
                  f"+ patterns + {site}'s memory"),
                 (f"pooled+patterns+memory@{site}", "pooled+patterns", f"{site}'s memory's gain: pooled pipeline",
                  "-", f"+ patterns + {site}'s memory against + patterns")]
    return rows


def taggers(run: str, pooled: str, sites: list[str]) -> dict[str, str]:
    """{name in the report: RUN:NAME (type_breakdown.py's)} of the taggers the federation `run`
    lends the report: its raw-text tagger on all notes, the pooled pipeline `pooled` and each of
    `sites`' own raw-text tagger."""
    return {"raw": f"{run}:raw", "pooled": f"{run}:{pooled}", **{f"raw-{site}": f"{run}:raw-{site}" for site in sites}}


def seed_counts(corpus: federation.Corpus, run: str, pooled: str, seed: int, test: list, memories: dict,
                sites: list[str]) -> dict[str, dict[str, list]]:
    """{measure: {TAGGER+LAYER[@MEMORY]: per-note [tp, fp, fn]}} of one seed."""
    from deidpool.corpus.metrics import document_counts

    found = {name: found_documents(corpus, spec, seed, test) for name, spec in taggers(run, pooled, sites).items()}
    scored = {}
    for tagger in ("raw", "pooled"):
        for layer, notes in layered(found[tagger], corpus.language, memories["all"]).items():
            scored[f"{tagger}{layer}"] = notes
    for site in sites:
        own = layered(found[f"raw-{site}"], corpus.language, memories[site])
        scored[f"raw-{site}+patterns"] = own["+patterns"]
        scored[f"raw-{site}+patterns+memory@{site}"] = own["+patterns+memory"]
        scored[f"pooled+patterns+memory@{site}"] = layered(found["pooled"], corpus.language,
                                                           memories[site])["+patterns+memory"]
    return {measure: {name: [[c.tp, c.fp, c.fn] for c in document_counts(test, notes, measure, corpus.entity_key)]
                      for name, notes in scored.items()} for measure in federation.MEASURES.values()}


def paired(per_seed: dict[int, dict], seeds: list[int], sites: list[str]) -> dict[str, list[dict]]:
    """{measure: the paired rows of `comparisons(sites)`, each with the "layer" it compares}."""
    rows = {}
    for measure in federation.MEASURES.values():
        counts = {(seed, name, ""): notes for seed in seeds for name, notes in per_seed[seed][measure].items()}
        compared = comparisons(sites)
        rows[measure] = federation.paired_rows(counts, seeds, [row[:4] for row in compared])
        for row, (*_, layers) in zip(rows[measure], compared, strict=True):
            row["layer"] = layers
    return rows


def report(data: dict) -> str:
    """The page of results JSON `data` (its `paired` rows, the seeds and the run's record: date,
    commit, "trained_at" where its run folders recorded it, command, corpus, test notes, federation,
    pooled pipeline, the memories' sizes): a table per measure."""
    run, seeds = data["record"], data["seeds"]
    corpus = federation.CORPORA[run["corpus"]]
    lines = [f"# What an institution's PHI memory adds ({corpus.title})\n",
             f"{run['date']}, {commit_text(run)}; seeds {seeds}; test notes `{run['test_notes']}`. Command: "
             f"`{run['command']}`. The pooled pipeline is `{run['federation']}:{run['pooled']}`. PHI strings in the "
             "memories (`client remember` at its default precision): "
             + ", ".join(f"{'all parties' if name == 'all' else name} {size}"
                         for name, size in run["memory_sizes"].items())
             + ". Cells: F1 difference in points [paired 95% bootstrap interval over the notes].\n"]
    for key, measure in federation.MEASURES.items():
        title = federation.titled(corpus, federation.COLUMN_TITLES[key])
        lines += ["", f"## {title}", "", *federation.paired_table(seeds_as_numbers(data["paired"][measure]), seeds,
                                                                  title)]
    return "\n".join(lines)


def main() -> None:
    from deidpool.client.memory import remembered_phi
    from deidpool.corpus.formats import read_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=federation.CORPORA, default="meddocan")
    parser.add_argument("--federation", required=True, help="results name of the federation runs")
    parser.add_argument("--pooled", default="pooled", help="the pooled pipeline: a pool of federation.POOLS or "
                                                          "diagnosis/FOLDER (type_breakdown.py's NAME)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--results-name", required=True, help="stem of the result files (phi_memory_...)")
    args = parser.parse_args()
    corpus = federation.CORPORA[args.corpus]
    test = test_notes(corpus)
    notes = {party: read_corpus(corpus.notes, corpus.fmt, split=party) for party in federation.PARTIES}
    memories = {site: remembered_phi(notes[site]) for site in federation.SITES}
    memories["all"] = remembered_phi(document for party in federation.PARTIES for document in notes[party])
    sites = [site for site in federation.SITES
             if all((REPO / "runs" / args.federation / f"seed-{seed}" / "taggers" / f"raw-{site}").is_dir()
                    for seed in args.seeds)]
    per_seed = {seed: seed_counts(corpus, args.federation, args.pooled, seed, test, memories, sites)
                for seed in args.seeds}
    read = list(taggers(args.federation, args.pooled, sites).values())
    run = record(run_folders=tagger_folders(read, args.seeds), corpus=args.corpus, test_notes=corpus.test[0],
                 federation=args.federation, pooled=args.pooled,
                 memory_sizes={name: len(memory) for name, memory in memories.items()})
    data = {"seeds": args.seeds, "paired": paired(per_seed, args.seeds, sites), "record": run}
    write_results(args.results_name, report(data), data)


if __name__ == "__main__":
    main()
