"""What a site's stack misses when it is pushed for recall (issue #61's `--min-recall 0.99` target).

For each party's stack of a federation run (experiments/federation.py's stacks stage, its weight
chosen again on the party's validation notes as the federation report does), on the run's test
notes and with the pattern layer and the party's memory in the stack's output:

- precision and recall at a list of thresholds (the combination's threshold on the PHI score,
  `deidpool.client.combination`), on two token measures with the official i2b2 2014 tokens:
  token HIPAA (the stack's operating point's measure: a token counts when a span of a HIPAA
  type covers it on both sides) and token all (any PHI type on both sides: what a release
  replaces);
- at the lowest threshold, the gold HIPAA tokens the stack misses, by gold label: found under a
  non-HIPAA type (a span of the stack covers the token, e.g. an institution it reads as a
  hospital: replaced in a release, missed by the measure) or not found at all.

    python experiments/stack_misses.py --federation federation_meddocan_stack --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import date
from pathlib import Path

from deidpool.representer.threads import configure_threads

configure_threads()

import federation  # noqa: E402
from deidpool.corpus.document import Document  # noqa: E402
from deidpool.corpus.i2b2_official import is_hipaa, phi_tokens  # noqa: E402
from deidpool.corpus.metrics import Counts, document_counts  # noqa: E402
from results_files import commit_text, record, write_results  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
THRESHOLDS = (0.5, 0.2, 0.1, 0.05, 0.02)
MEASURES = {"token_official_hipaa": "token HIPAA", "token_official_all": "token all"}
FOUND_AS_OTHER, NOT_FOUND = "found under a non-HIPAA type", "not found"


def missed_tokens(gold: Sequence[Document], found: Sequence[Document]) -> Counter:
    """The gold HIPAA tokens (official tokens) that no HIPAA-typed span of `found` covers, counted
    by (gold label, `FOUND_AS_OTHER` or `NOT_FOUND`); documents paired by id."""
    predicted = {document.id: document for document in found}
    missed = Counter()
    for document in gold:
        spans = predicted[document.id].spans
        hipaa = phi_tokens(document.text, [span for span in spans if is_hipaa(span)])
        covered = phi_tokens(document.text, spans)
        for span in filter(is_hipaa, document.spans):
            for token in phi_tokens(document.text, [span]) - hipaa:
                missed[span.source_type, FOUND_AS_OTHER if token in covered else NOT_FOUND] += 1
    return missed


def party_rows(gold: Sequence[Document], documents_at, thresholds: Sequence[float]) -> dict:
    """{"points": each threshold's precision and recall on `MEASURES`, "missed": `missed_tokens`
    at the lowest threshold as [label, kind, count] rows}; `documents_at(threshold)` gives the
    stack's output."""
    points, lowest = [], None
    for threshold in sorted(thresholds, reverse=True):
        lowest = documents_at(threshold)
        point = {"threshold": threshold}
        for measure in MEASURES:
            counts = sum(document_counts(gold, lowest, measure), Counts()).as_dict()
            point[measure] = {key: counts[key] for key in ("precision", "recall", "tp", "fp", "fn")}
        points.append(point)
    missed = missed_tokens(gold, lowest)
    return {"points": points, "missed": [[label, kind, count] for (label, kind), count in sorted(missed.items())]}



def seed_folder(run: str, seed: int) -> Path:
    """The seed folder of seed `seed` of the federation run `run`: its stacks and its run record."""
    return REPO / "runs" / run / f"seed-{seed}"

def seed_rows(corpus: federation.Corpus, run: str, seed: int, parties: Sequence[str],
              thresholds: Sequence[float]) -> dict[str, dict]:
    """`party_rows` of each party's stack in the federation run `run`'s seed `seed`, on the test
    notes that run scored."""
    from deidpool.client.stack import STACK_FILE
    from deidpool.demo import unlabeled
    from deidpool.representer.bundle import open_bundle

    folder = seed_folder(run, seed)
    missing = [party for party in parties if not (folder / federation.STACK / party / STACK_FILE).is_file()]
    if missing:
        sys.exit(f"{folder}: no stack of {', '.join(missing)} (run experiments/federation.py's stacks stage first)")
    test_notes = json.loads((folder / "rows.json").read_text())["budget"]["test"]  # what the run scored
    documents, provider_split = federation.seed_notes(corpus, tuple(test_notes), seed)
    _, vectors = federation.provider_embeddings(corpus, folder, documents["provider"], seed)
    pipeline = open_bundle(folder / "pipelines" / "pooled.tar", federation.seed_provider(folder).keys.public())
    test = list(unlabeled(documents["test"]))
    rows = {}
    for party in parties:
        federation.progress(f"seed {seed}: {party}'s stack on {len(test)} test notes")
        _, valid = federation.stack_notes(documents, provider_split, party, seed)
        stack, _, sentences, combined = federation.opened_stack(folder / federation.STACK / party, pipeline,
                                                                vectors, valid, test)
        rows[party] = party_rows(documents["test"], lambda threshold: stack.documents_at(
            test, sentences, combined, threshold), thresholds)
    return rows


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.3f}"


def table(result: dict) -> str:
    """The results page: per party, each threshold's precision and recall on both measures (mean
    over seeds), then the missed HIPAA tokens at the lowest threshold, summed over seeds."""
    seeds = result["seeds"]
    per_seed = [result["rows"][str(seed)] for seed in seeds]
    lowest = min(result["thresholds"])
    lines = [f"# What a site's stack misses when pushed for recall ({result['federation']}, seeds "
             f"{', '.join(map(str, seeds))})", "",
             f"{result['date']}, {commit_text(result['record'])}; command `{result['command']}`. Each party's stack "
             "(pooled pipeline + its own character tagger + memory + pattern layer, the weight chosen again on its "
             "validation notes) on the run's test notes, official i2b2 2014 tokens. Token HIPAA: a token counts "
             "where a span of a HIPAA type covers it, on both sides (the operating point's measure); token all: "
             "any PHI type on both sides (what a release replaces). Precision and recall are means over seeds.", "",
             "| party | threshold | " + " | ".join(f"{title} P | {title} R" for title in MEASURES.values()) + " |",
             "|---|---|" + "---|---|" * len(MEASURES)]
    for party in result["parties"]:
        for index, threshold in enumerate(point["threshold"] for point in per_seed[0][party]["points"]):
            cells = [_mean([rows[party]["points"][index][measure][part] for rows in per_seed])
                     for measure in MEASURES for part in ("precision", "recall")]
            lines.append(f"| {party} | {threshold:g} | " + " | ".join(cells) + " |")
    lines += ["", f"Gold HIPAA tokens missed at threshold {lowest:g}, by gold label, summed over the seeds: "
                  f"{FOUND_AS_OTHER} (a span of the stack covers the token: replaced in a release, a miss for the "
                  f"measure) or {NOT_FOUND}.", "",
              "| party | gold label | " + f"{FOUND_AS_OTHER} | {NOT_FOUND} |", "|---|---|---|---|"]
    for party in result["parties"]:
        missed = Counter()
        for rows in per_seed:
            missed.update({(label, kind): count for label, kind, count in rows[party]["missed"]})
        labels = sorted({label for label, _ in missed}, key=lambda label: (-sum(
            missed[label, kind] for kind in (FOUND_AS_OTHER, NOT_FOUND)), label))
        for label in labels:
            lines.append(f"| {party} | {label} | {missed[label, FOUND_AS_OTHER]} | {missed[label, NOT_FOUND]} |")
        lines.append(f"| {party} | all | {sum(missed[key] for key in missed if key[1] == FOUND_AS_OTHER)} | "
                     f"{sum(missed[key] for key in missed if key[1] == NOT_FOUND)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=federation.CORPORA, default="meddocan")
    parser.add_argument("--federation", required=True, help="results name of the federation runs with stacks")
    parser.add_argument("--parties", nargs="+", choices=federation.STACK_PARTIES, default=list(federation.SITES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--thresholds", type=float, nargs="+", default=list(THRESHOLDS))
    parser.add_argument("--results-name", default="stack_misses_meddocan")
    args = parser.parse_args()
    corpus = federation.CORPORA[args.corpus]
    rows = {str(seed): seed_rows(corpus, args.federation, seed, args.parties, args.thresholds)
            for seed in args.seeds}
    folders = [seed_folder(args.federation, seed) for seed in args.seeds]
    result = {"date": str(date.today()), "command": "python experiments/stack_misses.py " + " ".join(sys.argv[1:]),
              "federation": args.federation, "seeds": args.seeds, "parties": args.parties,
              "thresholds": args.thresholds, "rows": rows,
              "record": record(run_folders=folders, corpus=args.corpus)}
    write_results(args.results_name, table(result), result)


if __name__ == "__main__":
    main()
