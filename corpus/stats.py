"""Descriptive statistics of an annotated corpus: sizes, PHI per category/type, OOV rate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from deidpool.corpus.document import Document
from deidpool.corpus.prepare import prepare_document


def corpus_stats(documents: Iterable[Document], is_known: Callable[[str], bool] | None = None) -> dict:
    """Count documents, sentences, tokens, PHI spans and tokens; with `is_known` (an
    embedding vocabulary test) also the out-of-vocabulary rate over all and PHI tokens."""
    counts = Counter()
    per_category, per_type, per_source = Counter(), Counter(), Counter()
    for document in documents:
        counts["documents"] += 1
        counts["characters"] += len(document.text)
        for span in document.spans:
            per_category[span.category] += 1
            per_type[span.type] += 1
            per_source[span.source_type] += 1
        for sentence in prepare_document(document):
            counts["sentences"] += 1
            counts["tokens"] += len(sentence.tokens)
            for token, tag in zip(sentence.tokens, sentence.tags):
                is_phi = tag != "O"
                counts["phi_tokens"] += is_phi
                if is_known is not None and not is_known(token.text):
                    counts["oov_tokens"] += 1
                    counts["oov_phi_tokens"] += is_phi
    stats = {key: counts[key] for key in ("documents", "characters", "sentences", "tokens", "phi_tokens")}
    stats["spans"] = sum(per_category.values())
    stats["spans_per_category"] = dict(per_category.most_common())
    stats["spans_per_type"] = dict(per_type.most_common())
    stats["spans_per_source_type"] = dict(per_source.most_common())
    if is_known is not None:
        stats["oov_rate"] = counts["oov_tokens"] / max(counts["tokens"], 1)
        stats["oov_rate_phi"] = counts["oov_phi_tokens"] / max(counts["phi_tokens"], 1)
    return stats


def format_stats(stats: dict) -> str:
    """A short Markdown report of `corpus_stats` output."""
    lines = ["| measure | value |", "|---|---|"]
    for key in ("documents", "sentences", "tokens", "phi_tokens", "spans"):
        lines.append(f"| {key} | {stats[key]:,} |")
    for key in ("oov_rate", "oov_rate_phi"):
        if key in stats:
            lines.append(f"| {key} | {stats[key]:.2%} |")
    lines += ["", "| category | spans |", "|---|---|"]
    lines += [f"| {name} | {count:,} |" for name, count in stats["spans_per_category"].items()]
    lines += ["", "| source type | spans |", "|---|---|"]
    lines += [f"| {name} | {count:,} |" for name, count in stats["spans_per_source_type"].items()]
    return "\n".join(lines)
