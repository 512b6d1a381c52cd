"""One institution's tagger as `client deidentify` runs it (issue #39: one model at the field's
level): the non-private taggers of a `tagger_baselines.py` results file, from the spans they
predicted on the test notes (kept in its JSON rows), scored alone, merged with the corpus's
pattern layer, and with the layer and the PHI memory of the training notes (`client remember`
on them, `client deidentify --memory`); each configuration against a base configuration on the
same seeds and notes, and each layer's gain, as paired 95% bootstrap intervals over the notes;
and the errors per source type of the base alone against the best configuration with every layer.
The seed ensembles of `tagger_ensemble.py` (<results name>_ensemble.json) are scored the same way.
`--drop PATTERN` also scores the layer without that pattern (an ablation of one of its rules).

MEDDOCAN is scored with entity strict F1 on its own types (the MEDDOCAN script's measure),
PhysioNet with the official i2b2 2014 token HIPAA F1. Nothing is trained.

    python experiments/tagger_layers.py --results-name baselines_meddocan --corpus meddocan \\
        [--base "FastText + casing"] [--drop es_city]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from datetime import date

import federation
from phi_memory import LAYERS, layered
from results_files import git_commit, results_file, write_results

LAYER_TITLES = {"": "alone", "+patterns": "+ pattern layer", "+patterns+memory": "+ pattern layer + PHI memory"}


def headline(corpus: str) -> tuple[str, str]:
    """(measure, span key) of the corpus's headline F1."""
    settings = federation.CORPORA[corpus]
    return federation.MEASURES[settings.headline], settings.entity_key


def seed_rows(results: list[dict], corpus: str) -> dict[str, dict[int, dict]]:
    """{configuration: {seed: result}} of the corpus's results that kept their predictions."""
    rows: dict[str, dict[int, dict]] = {}
    for result in results:
        if result["corpus"] == corpus and "predicted" in result and "fold" not in result:
            rows.setdefault(result["name"], {})[result["seed"]] = result
    return rows


def layered_notes(rows: dict[str, dict[int, dict]], test: list, language: str, memory: dict,
                  drop: str | None = None) -> dict[tuple[int, str], list]:
    """notes[seed, CONFIGURATION+LAYER]: each stored tagger's spans on the test notes under each
    layer; with `drop` (a pattern's name) also the layers without it, CONFIGURATION+LAYER-DROP."""
    from deidpool.client.patterns import patterns_for
    from tagger_baselines import fold_predictions

    gold = {d.id: d for d in test}
    variants = {"": None}
    if drop:
        variants[f"-{drop}"] = tuple(p for p in patterns_for(language) if p.name != drop)
    notes = {}
    for name, by_seed in rows.items():
        for seed, result in by_seed.items():
            found = fold_predictions(result, gold)
            for suffix, patterns in variants.items():
                for layer, documents in layered(found, language, memory, patterns).items():
                    if layer or not suffix:
                        notes[seed, f"{name}{layer}{suffix}"] = documents
    return notes


def note_counts(notes: dict[tuple[int, str], list], test: list, measure: str,
                key: str) -> dict[tuple[int, str, str], list]:
    """counts[seed, tagger, ""]: the per-note counts of `layered_notes`, `federation.paired_rows`'s input."""
    from deidpool.corpus.metrics import document_counts

    return {(seed, name, ""): document_counts(test, found, measure, key) for (seed, name), found in notes.items()}


def ensemble_lines(ensembles: list[dict], test: list, language: str, memory: dict, measure: str,
                   key: str) -> tuple[list[str], dict]:
    """The seed ensembles' F1 under each layer, with its bootstrap interval over the notes."""
    from deidpool.corpus.metrics import document_counts, f1_interval, format_score, micro_f1
    from tagger_baselines import fold_predictions

    gold = {d.id: d for d in test}
    lines = ["", "## Seed ensembles (tagger_ensemble.py)", "",
             "| configuration | layer | F1 | 95% bootstrap CI over notes |", "|---|---|---:|---:|"]
    scores = {}
    for ensemble in ensembles:
        name = f"{ensemble['name']}, ensemble of seeds {', '.join(map(str, ensemble['seeds']))}"
        for layer, notes in layered(fold_predictions(ensemble, gold), language, memory).items():
            counts = document_counts(test, notes, measure, key)
            scores[f"{name}{layer}"] = micro_f1(counts)
            lines.append(f"| {name} | {LAYER_TITLES[layer]} | {scores[f'{name}{layer}']:.4f} | "
                         f"{format_score(list(f1_interval(counts)))} |")
    return lines, scores


def per_type_errors(test: list, notes_by_seed: list[list], key: str) -> Counter:
    """(label, "tp"|"fp"|"fn") -> entity strict counts summed over the seeds' notes."""
    from spanish_patterns import per_type

    totals: Counter = Counter()
    for notes in notes_by_seed:
        for label, scores in per_type(test, notes, key).items():
            totals.update({(label, part): scores[part] for part in ("tp", "fp", "fn")})
    return totals


def report(args, rows: dict[str, dict[int, dict]], notes: dict, test: list, memory_size: int,
           ensembles: tuple[list[str], dict] = ([], {})) -> tuple[str, dict]:
    """The Markdown report and its numbers (`notes`: of `layered_notes`; `ensembles`: of
    `ensemble_lines`)."""
    from deidpool.corpus.metrics import Counts

    measure, key = headline(args.corpus)
    counts = note_counts(notes, test, measure, key)
    seeds = sorted(set.intersection(*(set(by_seed) for by_seed in rows.values())))
    names = [args.base, *(name for name in rows if name != args.base)]
    f1 = {(name, layer): [federation.f1(counts[seed, f"{name}{layer}", ""]) for seed in seeds]
          for name in names for layer in LAYERS}
    lines = [f"# One institution's tagger with the pattern layer and its PHI memory ({args.corpus})\n",
             f"{date.today()}, commit {git_commit()}; taggers of `{results_file(args.results_name, '.json').name}` "
             f"(trained at {', '.join(sorted({r['commit'] for by_seed in rows.values() for r in by_seed.values()}))}"
             f"), seeds {seeds}. Command: `python experiments/tagger_layers.py --results-name {args.results_name} "
             f"--corpus {args.corpus} --base {json.dumps(args.base)}"
             f"{f' --drop {args.drop}' if args.drop else ''}`. Score: {measure} F1 (labels: {key}). The "
             f"memory holds {memory_size} PHI strings of the training notes (`client remember`, default bar).\n",
             "| configuration | layer | " + " | ".join(f"seed {seed}" for seed in seeds) + " | mean ± sd |",
             "|---|---|" + "---:|" * (len(seeds) + 1)]
    for name in names:
        for layer in LAYERS:
            values = f1[name, layer]
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            lines.append(f"| {name} | {LAYER_TITLES[layer]} | " + " | ".join(f"{v:.4f}" for v in values)
                         + f" | {statistics.mean(values):.4f} ± {sd:.4f} |")
    compared = [(f"{name}{layer}", f"{args.base}{layer}", f"{name} - {args.base}", "-", LAYER_TITLES[layer])
                for name in names[1:] for layer in LAYERS]
    compared += [(f"{name}{layer}", f"{name}{previous}", f"{LAYER_TITLES[layer]} against {LAYER_TITLES[previous]}",
                  "-", name) for name in names for previous, layer in zip(LAYERS, LAYERS[1:])]
    if args.drop:
        compared += [(f"{name}{layer}", f"{name}{layer}-{args.drop}", f"{args.drop}'s gain: with it - without it",
                      "-", f"{name} {LAYER_TITLES[layer]}") for name in names for layer in LAYERS[1:]]
    paired = federation.paired_rows(counts, seeds, [row[:4] for row in compared])
    for row, (*_, layer) in zip(paired, compared, strict=True):
        row["layer"] = layer
    lines += ["", "## Paired differences", "", *federation.paired_table(paired, seeds, f"{measure} F1")]
    lines += ensembles[0]
    best = max(names, key=lambda name: statistics.mean(f1[name, LAYERS[-1]]))
    before = per_type_errors(test, [notes[s, args.base] for s in seeds], key)
    after = per_type_errors(test, [notes[s, f"{best}{LAYERS[-1]}"] for s in seeds], key)
    lines += ["", f"## Errors per type, summed over the seeds: {args.base} alone against {best} "
                  f"{LAYER_TITLES[LAYERS[-1]]}", "",
              "| type | gold | false negatives before | after | false positives before | after | F1 before | after |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label in sorted({label for label, _ in before}, key=lambda t: -(before[t, "fn"] + before[t, "fp"])):
        cells = [before[label, "tp"] + before[label, "fn"], before[label, "fn"], after[label, "fn"],
                 before[label, "fp"], after[label, "fp"]]
        f1s = [Counts(c[label, "tp"], c[label, "fp"], c[label, "fn"]).as_dict()["f1"] for c in (before, after)]
        lines.append(f"| {label} | " + " | ".join(map(str, cells)) + " | " + " | ".join(f"{v:.3f}" for v in f1s) + " |")
    data = {"date": str(date.today()), "commit": git_commit(), "seeds": seeds, "measure": measure, "key": key,
            "f1": {f"{name}{layer}": f1[name, layer] for name in names for layer in LAYERS}, "paired": paired,
            "ensembles": ensembles[1]}
    return "\n".join(lines), data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results-name", required=True, help="the tagger_baselines.py results file's stem")
    parser.add_argument("--corpus", choices=sorted(federation.CORPORA), default="meddocan")
    parser.add_argument("--base", default="FastText + casing", help="the configuration the others are compared with")
    parser.add_argument("--drop", metavar="PATTERN", help="also score the layer without this pattern (e.g. es_city)")
    args = parser.parse_args()
    from deidpool.client.memory import remembered_phi
    from deidpool.client.patterns import patterns_for
    from tagger_baselines import LANGUAGES, load_data

    stored = results_file(args.results_name, ".json")
    rows = seed_rows(json.loads(stored.read_text()), args.corpus)
    if args.base not in rows:
        raise SystemExit(f"{stored}: no {args.corpus} row of {args.base!r} kept its predictions")
    if args.drop and args.drop not in {pattern.name for pattern in patterns_for(LANGUAGES[args.corpus])}:
        raise SystemExit(f"--drop {args.drop}: not a default pattern of the {args.corpus} notes' layer")
    train, valid, test = load_data(args.corpus)
    memory = remembered_phi([*train, *valid])
    measure, key = headline(args.corpus)
    notes = layered_notes(rows, test, LANGUAGES[args.corpus], memory, args.drop)
    ensemble_file = results_file(f"{args.results_name}_ensemble", ".json")
    ensembles = [e for e in json.loads(ensemble_file.read_text())["results"] if e["corpus"] == args.corpus
                 and "predicted" in e] if ensemble_file.exists() else []
    text, data = report(args, rows, notes, test, len(memory),
                        ensemble_lines(ensembles, test, LANGUAGES[args.corpus], memory, measure, key))
    write_results(f"{args.results_name}_layers", text, data)


if __name__ == "__main__":
    main()
