"""The Spanish pattern layer on MEDDOCAN: (a) every pattern alone, precision and recall per
MEDDOCAN type on the training splits (provider, site_a, site_b, site_c: where the patterns were
written) and on `dev` (notes they were not written from); (b) a trained MEDDOCAN tagger
alone and merged with the layer on `dev` (with the layer's merge rules undone one at a time, and
with the English layer it got before): entity strict with the source types and official token
HIPAA F1, overall and per type, with paired bootstrap intervals of the differences over notes.

The tagger is one of a federation.py run's seed folder (runs/RUN/seed-S), RUN:NAME as
type_breakdown.py names it: the raw-text tagger on all notes by default, or e.g. the pooled
pipeline `diagnosis/surrogates-at-export`; its `dev` spans are kept in the seed folder.

    python experiments/spanish_patterns.py [--tagger federation_meddocan_valloss:raw] [--seed 0] \
        [--results-name spanish_patterns]
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace
from datetime import date
from operator import attrgetter
from pathlib import Path

from deidpool.representer.threads import configure_threads

configure_threads()

import federation  # noqa: E402
from deidpool.client.patterns import SPANISH_PATTERNS, patterns_for, with_patterns  # noqa: E402
from deidpool.corpus.document import Document  # noqa: E402
from deidpool.corpus.errors import CorpusWarning  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.corpus.metrics import (  # noqa: E402
    Counts,
    document_counts,
    entity_counts,
    evaluate_corpus,
    f1_difference_interval,
    format_score,
    micro_f1,
    score_row,
    strict_match,
)
from results_files import commit_text, git_commit, record, write_results  # noqa: E402
from type_breakdown import found_documents, seed_folder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "meddocan"
TRAIN_SPLITS = ("provider", "site_a", "site_b", "site_c")
KEY = "source_type"  # entity scores compare MEDDOCAN's own types
ENGLISH = "tagger + English layer (before)"  # the layer a MEDDOCAN note got before it knew its language
MEASURES = {"entity_strict": "entity strict (source types)", "token_official_hipaa": "token HIPAA (official)"}


def unlabeled(documents: list[Document]) -> list[Document]:
    return [Document(d.id, d.text) for d in documents]


def per_type(gold: list[Document], predicted: list[Document], key: str = KEY) -> dict[str, dict]:
    """Entity strict counts and scores of each type (the spans' `key`, MEDDOCAN's own types by
    default) on either side."""
    by_id = {d.id: d for d in predicted}
    match = strict_match(attrgetter(key))
    types = sorted({getattr(s, key) for d in [*gold, *predicted] for s in d.spans})
    return {name: sum((entity_counts([s for s in d.spans if getattr(s, key) == name],
                                     [s for s in by_id[d.id].spans if getattr(s, key) == name], match)
                       for d in gold), Counts()).as_dict() for name in types}


def pattern_rows(documents: list[Document], patterns) -> list[dict]:
    """Each pattern alone on `documents`: its spans, the share of them that are a gold span of its
    type (strict precision) or overlap a gold span of any type (overlap precision), and the
    share of the gold spans of its type it finds exactly (recall)."""
    rows = []
    for pattern in patterns:
        spans = exact = overlapping = gold = 0
        for document in documents:
            found = set(pattern.spans(document.text))
            of_type = {(s.start, s.end) for s in document.spans if s.source_type == pattern.label}
            spans += len(found)
            gold += len(of_type)
            exact += sum((s.start, s.end) in of_type for s in found)
            overlapping += sum(any(g.start < s.end and s.start < g.end for g in document.spans) for s in found)
        rows.append({"pattern": pattern.name, "label": pattern.label, "spans": spans, "gold": gold,
                     "precision": exact / spans if spans else None,
                     "overlap_precision": overlapping / spans if spans else None,
                     "recall": exact / gold if gold else None})
    return rows


def difference(gold: list[Document], alone: list[Document], merged: list[Document], measure: str) -> dict:
    """F1 of `merged` minus that of `alone` under `measure`, with its paired bootstrap interval over notes."""
    first, second = (document_counts(gold, found, measure, KEY) for found in (merged, alone))
    f1 = [micro_f1(counts) for counts in (first, second)]
    return {"difference": f1[0] - f1[1], "interval": list(f1_difference_interval([(first, second)]))}


def type_rows(gold: list[Document], systems: dict[str, list[Document]]) -> list[dict]:
    """Per MEDDOCAN type, each system's entity strict P/R/F1 and counts."""
    scored = {name: per_type(gold, found) for name, found in systems.items()}
    types = sorted({name for scores in scored.values() for name in scores})
    return [{"type": name, **{system: scores.get(name, Counts().as_dict()) for system, scores in scored.items()}}
            for name in types]


def _cell(value) -> str:
    return "n/a" if value is None else format_score(value)


def table(result: dict) -> str:
    alone, merged = result["systems"]
    made = commit_text(result.get("record", result))  # where the results were trained and reported
    lines = [f"# The Spanish pattern layer on MEDDOCAN ({result['dev_notes']} `dev` notes)", "",
             f"{result['date']}, {made}; tagger `{result['tagger']}` of seed {result['seed']} (the "
             f"provider's FastText); command `{result['command']}`. Patterns: `patterns_for(\"es\")`, the default "
             f"Spanish set of client/patterns.py ({', '.join(result['patterns'])}); merged with the tagger by "
             "`with_patterns` (the union, overlapping spans joined and labelled like the longest; the forms cut "
             "the tagger's spans that run past them, the country list adds spans where the tagger marks none and "
             "relabels a tagger's country it lacks as a city, a time span drops a tagger's age inside it).", "",
             "## The tagger alone and with the layer (dev)", "",
             "| system | " + " | ".join(f"{title} {part}" for title in MEASURES.values() for part in ("P", "R", "F1"))
             + " |", "|---|" + "---|" * 3 * len(MEASURES)]
    for name in (alone, merged, *(name for name in result["overall"] if name.startswith(f"{merged}, ")), ENGLISH,
                 "patterns alone"):
        row = result["overall"][name]
        lines.append(f"| {name} | " + " | ".join(format_score(row[f"{measure}_{part}"]) for measure in MEASURES
                                                 for part in ("precision", "recall", "f1")) + " |")
    lines += [""] + [f"Adding the layer: {title} F1 {gain['difference'] * 100:+.2f} points, 95% paired bootstrap "
                     f"interval over notes [{gain['interval'][0] * 100:+.2f}, {gain['interval'][1] * 100:+.2f}]."
                     for title, gain in ((MEASURES[m], result["differences"][m]) for m in MEASURES)]
    lines += ["", "## Per MEDDOCAN type, entity strict (dev)", "",
              f"| type | {alone} P | R | F1 | {merged} P | R | F1 | F1 change | patterns alone P | R |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["per_type"]:
        before, after, patterns = row[alone], row[merged], row["patterns alone"]
        lines.append(f"| {row['type']} | " + " | ".join(format_score(cell[part]) for cell in (before, after)
                                                       for part in ("precision", "recall", "f1"))
                     + f" | {(after['f1'] - before['f1']) * 100:+.1f} | "
                     + (f"{format_score(patterns['precision'])} | {format_score(patterns['recall'])} |"
                        if patterns["tp"] + patterns["fp"] else "- | - |"))
    lines += ["", "## Each pattern alone", "",
              "precision: share of its spans that are a gold span of its type (exact offsets); overlap: share that "
              "overlap a gold span of any type; recall: share of the gold spans of its type it finds exactly. Train: "
              f"the federation's parties ({', '.join(TRAIN_SPLITS)}), where the patterns were written; dev: notes "
              "they were not written from. Not in the default set: marked (off).", "",
              "| pattern | type | train spans | precision | overlap | recall | dev spans | precision | overlap | "
              "recall |", "|---|---|---|---|---|---|---|---|---|---|"]
    for train, dev in zip(result["patterns_on_train"], result["patterns_on_dev"]):
        name = train["pattern"] + ("" if train["pattern"] in result["patterns"] else " (off)")
        lines.append(f"| {name} | {train['label']} | " + " | ".join(
            f"{row['spans']} | {_cell(row['precision'])} | {_cell(row['overlap_precision'])} | {_cell(row['recall'])}"
            for row in (train, dev)) + " |")
    return "\n".join(lines)


def ablations(patterns) -> dict[str, tuple]:
    """The layer with one of its merge rules undone: the forms joined with the tagger's spans
    instead of cutting them, and no country list."""
    return {"tagger + layer, forms joined (no cut)": tuple(replace(p, cuts=False) for p in patterns),
            "tagger + layer, no country list": tuple(p for p in patterns if p.name != "es_country")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tagger", default="federation_meddocan_valloss:raw",
                        help="RUN:NAME, a tagger of a MEDDOCAN federation run (type_breakdown.py)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results-name", default="spanish_patterns")
    args = parser.parse_args()
    warnings.simplefilter("ignore", CorpusWarning)
    started = time.perf_counter()
    train = [d for split in TRAIN_SPLITS for d in read_corpus(DATA / "train" / "xml", "meddocan", split=split)]
    dev = read_corpus(DATA / "dev" / "xml", "meddocan")
    patterns = patterns_for("es")
    alone = found_documents(federation.CORPORA["meddocan"], args.tagger, args.seed, dev)
    systems = {"tagger alone": alone, "tagger + layer": [with_patterns(d, patterns) for d in alone],
               ENGLISH: [with_patterns(d, patterns_for("en")) for d in alone],
               **{title: [with_patterns(d, layer) for d in alone] for title, layer in ablations(patterns).items()},
               "patterns alone": [with_patterns(d, patterns) for d in unlabeled(dev)]}
    command = f"python experiments/spanish_patterns.py --tagger {args.tagger} --seed {args.seed}"
    result = {"date": str(date.today()), "commit": git_commit(), "command": command, "tagger": args.tagger,
              "seed": args.seed,
              "dev_notes": len(dev), "train_notes": len(train), "patterns": [p.name for p in patterns],
              "systems": list(systems)[:2],
              "overall": {name: score_row(evaluate_corpus(dev, found, KEY), tuple(MEASURES))
                          for name, found in systems.items()},
              "differences": {measure: difference(dev, alone, systems["tagger + layer"], measure)
                              for measure in MEASURES},
              "per_type": type_rows(dev, systems),
              "patterns_on_train": pattern_rows(train, SPANISH_PATTERNS),
              "patterns_on_dev": pattern_rows(dev, SPANISH_PATTERNS)}
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["record"] = record([seed_folder(args.tagger, args.seed)[0]])
    write_results(args.results_name, table(result), result)


if __name__ == "__main__":
    main()
