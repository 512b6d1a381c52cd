"""Does a tagger lose the PHI its training never showed it? Recall of the test notes' gold spans by
where their text was seen as PHI in the federation's training notes: in the provider's (the notes
the representer was trained on), only in a site's (the pooled tagger saw them only through the
frozen representation), or nowhere (new to every tagger).

    python experiments/novelty_breakdown.py --corpus meddocan --seeds 0 1 2 \\
        --taggers federation_meddocan_valloss:raw federation_meddocan_valloss:pooled \\
        --results-name novelty_breakdown_meddocan_valloss

Taggers are RUN:NAME as in type_breakdown.py (the first is the reference). A gold span is found
when a predicted span has its offsets and label; its text is compared case-folded, with runs of
white space as one space. Counts are summed over the seeds. The table goes to
experiments/results/federation/<name>.md and .json.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import federation
from results_files import commit_text, record, write_results
from type_breakdown import found_documents, tagger_arguments, tagger_folders, test_notes

CLASSES = ("PHI in the provider's notes", "PHI in a site's notes only", "in no training span")


def span_text(text: str) -> str:
    """A span's text as it is compared: case-folded, white space collapsed."""
    return " ".join(text.casefold().split())


def seen_texts(documents: Iterable) -> set[str]:
    """The texts of the gold spans of `documents`."""
    return {span_text(span.text) for document in documents for span in document.spans}


def novelty(text: str, provider: set[str], sites: set[str]) -> str:
    """Which of `CLASSES` a gold span's text falls in."""
    key = span_text(text)
    return CLASSES[0] if key in provider else CLASSES[1] if key in sites else CLASSES[2]


def recall_counts(gold: list, found: list, entity_key: str, provider: set[str],
                  sites: set[str]) -> dict[str, dict[str, int]]:
    """{class: {"gold": spans, "found": spans found with their offsets and label}} over the notes."""
    counts = {name: Counter() for name in CLASSES}
    for note, predicted in zip(gold, found, strict=True):
        hits = {(span.start, span.end, getattr(span, entity_key)) for span in predicted.spans}
        for span in note.spans:
            row = counts[novelty(span.text, provider, sites)]
            row["gold"] += 1
            row["found"] += (span.start, span.end, getattr(span, entity_key)) in hits
    return {name: dict(row) for name, row in counts.items()}


def recall_table(counts: dict[str, list[dict]]) -> dict:
    """The numbers of the table of `counts` ({tagger: [per seed `recall_counts`]}, the reference
    first): {"gold": {class, and "all": the reference's gold spans over the seeds}, "recall":
    {class, and "all": {tagger: recall with the counts summed over the seeds}}}."""
    reference = next(iter(counts))

    def summed(spec: str, name: str | None) -> tuple[int, int]:
        rows = [row for seed in counts[spec] for key, row in seed.items() if name in (None, key)]
        return sum(row.get("gold", 0) for row in rows), sum(row.get("found", 0) for row in rows)

    recall = {name or "all": {spec: (found / gold if gold else 0.0) for spec in counts
                              for gold, found in [summed(spec, name)]} for name in (*CLASSES, None)}
    return {"gold": {name or "all": summed(reference, name)[0] for name in (*CLASSES, None)}, "recall": recall}


def report(data: dict) -> str:
    """The page of results JSON `data` (`recall_table`'s numbers, the seeds and the run's record:
    date, commit, "trained_at" where its run folders recorded it, command, corpus, test notes): a
    row per class and one for all spans, each tagger's recall and the others' difference to the
    reference in points."""
    run, recall = data["record"], data["recall"]
    reference, *others = recall["all"]
    lines = [f"# Recall of the test notes' PHI by where the training notes had it "
             f"({federation.CORPORA[run['corpus']].title})\n",
             f"{run['date']}, {commit_text(run)}; seeds {data['seeds']}; test notes `{run['test_notes']}`. "
             f"Command: `{run['command']}`. A gold span's text (case-folded) was PHI "
             "in the provider's training notes, only in a site's, or in none; each cell: the share of those spans "
             f"found exactly (offsets and label), counts summed over the seeds, and in parentheses the difference to "
             f"`{reference}` in points.\n",
             "| gold span's text | gold spans | " + " | ".join(f"`{spec}`" for spec in recall["all"]) + " |",
             "|---|---:|" + "---:|" * len(recall["all"])]
    for name, row in recall.items():
        cells = [f"{row[reference]:.3f}", *(f"{row[spec]:.3f} ({100 * (row[spec] - row[reference]):+.1f})"
                                            for spec in others)]
        lines.append(f"| {'**all**' if name == 'all' else name} | {data['gold'][name]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    from deidpool.corpus.formats import read_corpus

    args = tagger_arguments(__doc__.splitlines()[0], "novelty_breakdown")
    corpus = federation.CORPORA[args.corpus]
    test = test_notes(corpus)
    provider = seen_texts(read_corpus(corpus.notes, corpus.fmt, split="provider"))
    sites = set().union(*(seen_texts(read_corpus(corpus.notes, corpus.fmt, split=site)) for site in federation.SITES))
    counts = {spec: [recall_counts(test, found_documents(corpus, spec, seed, test), corpus.entity_key, provider, sites)
                     for seed in args.seeds] for spec in args.taggers}
    data = {"seeds": args.seeds, **recall_table(counts),
            "record": record(run_folders=tagger_folders(args.taggers, args.seeds), corpus=args.corpus,
                             test_notes=corpus.test[0])}
    write_results(args.results_name, report(data), data)


if __name__ == "__main__":
    main()
