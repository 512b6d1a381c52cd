"""Do the exports' surrogates look like the PHI the tagger meets on test notes? Per source type of a
corpus, the words of the test notes' gold PHI against what a tagger trained on each side sees:

- raw text: the share of the test words (occurrences) that the training notes' gold spans of the
  same type contain (what the non-private tagger saw);
- surrogates: the share that the surrogate pool of the type's kind contains at all
  (`deidpool.pseudonymization.surrogates.pool`), and, for the type's five most frequent test words, their
  share of the test words beside the probability that a one-word surrogate of the type is that
  word (`word_distribution`): a value the test notes name often but the draw rarely gives is one
  the pooled tagger hardly ever sees labelled.

    python experiments/surrogate_coverage.py --corpus meddocan [--results-name surrogate_coverage_meddocan]

Nothing is trained (about a minute). The table goes to results/federation/<name>.md and .json.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

import federation
from results_files import record, write_results

TOP = 5  # the most frequent test words listed per type


def span_words(documents, language: str) -> dict[str, Counter]:
    """{source type: Counter of its gold spans' words}: tokens of two letters or more, case-folded,
    but the words a surrogate span keeps as they are (`kept_words`)."""
    from deidpool.corpus.tokenize import tokenize
    from deidpool.pseudonymization.surrogates import kept_words, token_kind

    kept = kept_words(language)
    words: dict[str, Counter] = defaultdict(Counter)
    for document in documents:
        for span in document.spans:
            for token in tokenize(span.text):
                word = token.text.casefold()
                if token_kind(token.text) == "word" and word not in kept:
                    words[span.source_type][word] += 1
    return words


def coverage_rows(train: dict[str, Counter], test: dict[str, Counter], language: str) -> list[dict]:
    """One row per source type of `test` (most words first): its test words, the shares of them the
    training spans and the surrogate pool contain, and its TOP words' test share and one-word draw
    probability (None where the kind's one-word surrogates cannot be drawn alone)."""
    from deidpool.pseudonymization.surrogates import generator_kind, pool, word_distribution

    rows = []
    for source_type, words in sorted(test.items(), key=lambda item: -sum(item[1].values())):
        total = sum(words.values())
        kind = generator_kind(source_type)
        pooled = {word.casefold() for value in pool(language, kind) for word in value}
        try:
            draw = word_distribution(language, kind, 0, 1)
        except ValueError:
            draw = None
        rows.append({"type": source_type, "kind": kind, "test_words": total,
                     "in_training_spans": sum(n for w, n in words.items() if w in train.get(source_type, {})) / total,
                     "in_surrogate_pool": sum(n for w, n in words.items() if w in pooled) / total,
                     "top": [{"word": word, "test_share": n / total,
                              "draw_probability": None if draw is None else draw.get(word, 0.0)}
                             for word, n in words.most_common(TOP)]})
    return rows


def table(data: dict) -> str:
    """The page of results JSON `data` (its corpus, rows and the run's record)."""
    run = data["record"]
    lines = [f"# Surrogates against the test notes' PHI ({federation.CORPORA[data['corpus']].title})", "",
             f"{run['date']}, commit {run['commit']}. Command: `{run['command']}`. Words: gold PHI tokens of two "
             "letters or more, case-folded, less the words a surrogate span keeps (function and structure words). "
             "Shares count "
             "occurrences in the test notes. Top words: share of the type's test words / probability that a one-word "
             "surrogate of the type is that word (- where the kind has no one-word draw).", "",
             "| type | surrogate kind | test words | in training spans (raw text) | in surrogate pool | "
             "top test words |",
             "|---|---|---:|---:|---:|---|"]
    for row in data["rows"]:
        top = ", ".join(f"{t['word']} {t['test_share']:.3f} / "
                        + ("-" if t["draw_probability"] is None else f"{t['draw_probability']:.4f}")
                        for t in row["top"])
        lines.append(f"| {row['type']} | {row['kind']} | {row['test_words']} | {row['in_training_spans']:.3f} | "
                     f"{row['in_surrogate_pool']:.3f} | {top} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=federation.CORPORA, default="meddocan")
    parser.add_argument("--results-name", help="default: surrogate_coverage_<corpus>")
    args = parser.parse_args()
    from deidpool.corpus.formats import read_corpus

    corpus = federation.CORPORA[args.corpus]
    if not corpus.notes.exists():
        raise SystemExit(f"{corpus.notes} is absent: the experiment needs the shared {args.corpus} corpus")
    train = [d for party in federation.PARTIES for d in read_corpus(corpus.notes, corpus.fmt, split=party)]
    path, fmt, split = corpus.test
    test = read_corpus(federation.REPO.parent / path, fmt, split=split)
    rows = coverage_rows(span_words(train, corpus.language), span_words(test, corpus.language), corpus.language)
    data = {"corpus": args.corpus, "rows": rows, "record": record()}
    write_results(args.results_name or f"surrogate_coverage_{args.corpus}", table(data), data)


if __name__ == "__main__":
    main()
