"""Measure how often a gold PHI boundary falls inside a token of the plain tokenizer (the
labels `prepare_document` saves by cutting tokens there), and the sentence statistics of
the prepared data, on PhysioNet (all patients) and MEDDOCAN (train + dev).

Run `python experiments/span_boundaries.py`; it prints a Markdown report and writes it to
experiments/results/quality/span_boundaries.md, the numbers to span_boundaries.json beside it.
"""

from __future__ import annotations

import json
import time
from bisect import bisect_right
from collections import Counter
from pathlib import Path

from deidpool.corpus.document import Document
from deidpool.corpus.formats import read_corpus
from deidpool.corpus.prepare import prepare_document, prepare_text
from deidpool.corpus.sentences import split_sentences
from deidpool.corpus.tagging import decode, encode
from deidpool.corpus.tokenize import Token, tokenize
from results_files import results_file

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
EXAMPLES = 10
LONG = 100  # sentences with more tokens than this are reported as long


def load() -> dict[str, list[Document]]:
    meddocan = DATA / "meddocan"
    return {
        "PhysioNet (all)": read_corpus(DATA / "physionet-deid", "physionet"),
        "MEDDOCAN (train+dev)": (read_corpus(meddocan / "train" / "brat", "brat")
                                 + read_corpus(meddocan / "dev" / "brat", "brat")),
    }


def _token_around(tokens: list[Token], starts: list[int], offset: int) -> Token | None:
    """The token that `offset` falls strictly inside, if any."""
    i = bisect_right(starts, offset) - 1
    return tokens[i] if i >= 0 and tokens[i].start < offset < tokens[i].end else None


def boundary_stats(documents: list[Document]) -> dict:
    counts = Counter()
    examples = []
    for document in documents:
        tokens = tokenize(document.text)
        starts = [t.start for t in tokens]
        for span in document.spans:
            start, end = (_token_around(tokens, starts, offset) for offset in (span.start, span.end))
            counts["spans"] += 1
            counts["start_inside"] += start is not None
            counts["end_inside"] += end is not None
            counts["either"] += start is not None or end is not None
            if (start or end) and len(examples) < EXAMPLES:
                pieces = " + ".join(sorted({repr(t.text) for t in (start, end) if t}))
                examples.append(f"{document.id}: {span.source_type} {span.text!r} inside token {pieces}")
    return {**counts, "examples": examples}


def _spans_cut_without_keep_together(document: Document) -> int:
    """Gold spans that the sentence splitter would cut if it did not keep them together."""
    text, spans = document.text, document.spans
    tokens = tokenize(text, breaks=[offset for span in spans for offset in (span.start, span.end)])

    def decoded(keep_together) -> set:
        return {found for sentence in split_sentences(text, tokens, keep_together)
                for found in decode(sentence, encode(sentence, spans))}

    return len(decoded(spans) - decoded(()))


def sentence_stats(documents: list[Document]) -> dict:
    started = time.perf_counter()
    for document in documents:
        prepare_text(document.text)
    seconds = time.perf_counter() - started
    lengths = [len(s.tokens) for document in documents for s in prepare_document(document)]
    return {
        "documents": len(documents),
        "sentences": len(lengths),
        "tokens": sum(lengths),
        "mean_length": sum(lengths) / len(lengths),
        "max_length": max(lengths),
        "long_sentences": sum(n > LONG for n in lengths),
        "spans_cut_without_keep_together": sum(map(_spans_cut_without_keep_together, documents)),
        "prepare_text_seconds": seconds,
    }


def _percent(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.2f} %)"


def report(results: dict[str, dict]) -> str:
    lines = ["# Gold span boundaries inside plain tokens", "",
             "| corpus | spans | start inside token | end inside token | either |", "|---|---:|---:|---:|---:|"]
    for name, r in results.items():
        b = r["boundaries"]
        lines.append(f"| {name} | {b['spans']} | {_percent(b['start_inside'], b['spans'])} | "
                     f"{_percent(b['end_inside'], b['spans'])} | {_percent(b['either'], b['spans'])} |")
    for name, r in results.items():
        lines += ["", f"Examples, {name}:", *(f"- {example}" for example in r["boundaries"]["examples"])]
    lines += ["", "# Sentences of the prepared data (tokens cut at gold span boundaries)", "",
              f"| corpus | documents | sentences | tokens | mean length | max length | > {LONG} tokens | "
              "spans cut without keep_together | prepare_text time (s) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        s = r["sentences"]
        lines.append(f"| {name} | {s['documents']} | {s['sentences']} | {s['tokens']} | {s['mean_length']:.1f} | "
                     f"{s['max_length']} | {s['long_sentences']} | {s['spans_cut_without_keep_together']} | "
                     f"{s['prepare_text_seconds']:.2f} |")
    lines += ["", f"Long: sentences of more than {LONG} tokens (the cap is 200). Spans cut without "
              "keep_together: gold spans that a sentence break would cut at inference-style splitting; "
              "training keeps them together, so the prepared data loses none. prepare_text time: "
              "tokenizing, splitting and casing every note as unlabeled text."]
    return "\n".join(lines) + "\n"


def main() -> None:
    results = {name: {"boundaries": boundary_stats(documents), "sentences": sentence_stats(documents)}
               for name, documents in load().items()}
    text = report(results)
    print(text)
    results_file("span_boundaries", ".md").parent.mkdir(parents=True, exist_ok=True)
    results_file("span_boundaries", ".md").write_text(text)
    results_file("span_boundaries", ".json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
