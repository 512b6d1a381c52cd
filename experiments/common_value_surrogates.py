"""A candidate surrogate pool, tried before it enters the product: Faker's values mixed with the
values of each PHI kind that are common in the provider's own notes (in at least MIN_DOCUMENTS
of its documents: "España", "Madrid", "años"), weighted so that the common values carry the
share of the provider's spans they cover. Drawn surrogates still do not depend on the original
(only on kind and shape), and no original is exported as it is (the redraw stays); what changes is
that the values a tagger meets most in real notes are also frequent among the surrogates it is
trained on (with Faker's uniform pool "España" is one country in 193, and the tagger trained on
surrogates misses 23 % of the real ones on MEDDOCAN dev).

    python experiments/common_value_surrogates.py --corpus meddocan --seeds 0 1 2 --taggers raw groups-100 \\
        surrogates --tagger-epochs 10 --patience 3 --results-name pseudonymization_utility_meddocan_common

Every argument goes to experiments/pseudonymization_utility.py, whose "surrogates" text tagger then
draws from the mixed pool (only for the Spanish corpus, whose provider split it reads).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from functools import lru_cache

import federation
from deidpool.pseudonymization import surrogates

MIN_DOCUMENTS = 10  # a value is common when at least this many of the provider's documents hold it


def common_values(documents: list, language: str) -> dict[str, tuple[dict[tuple[str, ...], int], int]]:
    """By generator kind: ({value: spans} of the values (their drawn words, as `surrogates.pool`
    holds them) found in at least MIN_DOCUMENTS documents, the kind's spans in all)."""
    from deidpool.corpus.prepare import prepare_document
    from deidpool.pseudonymization.pseudonymize import tag_category

    spans, holders, total = defaultdict(Counter), defaultdict(lambda: defaultdict(set)), Counter()
    for document in documents:
        for sentence in prepare_document(document):
            words = [token.text for token in sentence.tokens]
            for span in surrogates.phi_spans(sentence.tags):
                kind = surrogates.generator_kind(tag_category(sentence.tags[span.start]))
                span_words = words[span.start:span.stop]
                value = tuple(word for word, drawn in zip(span_words, surrogates.span_kinds(span_words, language))
                              if drawn == "word")
                if value:
                    total[kind] += 1
                    spans[kind][value] += 1
                    holders[kind][value].add(document.id)
    common = {}
    for kind, counts in spans.items():
        kept = {value: n for value, n in counts.items() if len(holders[kind][value]) >= MIN_DOCUMENTS}
        if kept:
            common[kind] = (kept, total[kind])
    return common


def mixed_pool(values: tuple, kept: dict[tuple[str, ...], int], total: int) -> tuple:
    """`values` (Faker's, each once) followed by every common value repeated in proportion to its
    spans, so that a uniform draw picks a common value with the share of the spans they cover."""
    share = sum(kept.values()) / total
    if share >= 1:
        raise ValueError("every span of the kind holds a common value: no room for Faker's")
    scale = share * len(values) / ((1 - share) * sum(kept.values()))
    return values + tuple(value for value, n in kept.items() for _ in range(max(1, round(n * scale))))


def main() -> None:
    import pseudonymization_utility
    from deidpool.corpus.formats import read_corpus

    named = sys.argv[sys.argv.index("--corpus") + 1] if "--corpus" in sys.argv[:-1] else None
    if named != "meddocan":
        raise SystemExit("the mixed pool is made from MEDDOCAN's provider split: pass --corpus meddocan")
    corpus = federation.CORPORA["meddocan"]
    common = common_values(read_corpus(corpus.notes, corpus.fmt, split="provider"), corpus.language)
    faker_pool = surrogates.pool.__wrapped__

    @lru_cache(maxsize=None)
    def pool(language: str, kind: str) -> tuple:
        values = faker_pool(language, kind)
        return mixed_pool(values, *common[kind]) if language == corpus.language and kind in common else values

    surrogates.pool = pool
    for cached in (surrogates.matched_values, surrogates.word_distribution):
        cached.cache_clear()
    for kind, (kept, total) in sorted(common.items()):
        federation.progress(f"common {kind}: {len(kept)} values, {sum(kept.values())} of {total} provider spans")
    sys.argv = ["pseudonymization_utility.py", *sys.argv[1:]]
    pseudonymization_utility.main()


if __name__ == "__main__":
    main()
