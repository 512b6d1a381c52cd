"""BIO / BIOES tags over tokens: encode labeled character spans as one tag per token, and
decode tag sequences (repairing ill-formed ones) back to spans."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter

from deidpool.corpus.document import Span
from deidpool.corpus.tokenize import Token

SCHEMES = {"BIO": ("B", "I"), "BIOES": ("B", "I", "E", "S")}  # scheme -> its prefixes besides "O"


def encode(tokens: Sequence[Token], spans: Iterable[Span], scheme: str = "BIO",
           label: Callable[[Span], str] = attrgetter("source_type")) -> list[str]:
    """One tag per token: a token is in a span if it overlaps it; spans covering none of
    `tokens` (e.g. those of other sentences) are ignored."""
    _check(scheme)
    tags = ["O"] * len(tokens)
    starts = [t.start for t in tokens]
    ends = [t.end for t in tokens]
    for span in spans:
        first, last = bisect_right(ends, span.start), bisect_left(starts, span.end) - 1
        if first <= last:
            tags[first:last + 1] = _chunk(label(span), last - first + 1, scheme)
    return tags


def _chunk(name: str, length: int, scheme: str) -> list[str]:
    if scheme == "BIOES":
        if length == 1:
            return [f"S-{name}"]
        return [f"B-{name}", *[f"I-{name}"] * (length - 2), f"E-{name}"]
    return [f"B-{name}", *[f"I-{name}"] * (length - 1)]


def decode(tokens: Sequence[Token], tags: Sequence[str], scheme: str = "BIO") -> list[tuple[int, int, str]]:
    """Spans (start, end, label) in character offsets. Ill-formed sequences are repaired the
    usual way: an I- or E- tag that does not continue an open span of its label starts a
    new one; a span ends at O, B-, S-, E- or a change of label."""
    prefixes = SCHEMES[_check(scheme)]
    spans: list[tuple[int, int, str]] = []
    open_label: str | None = None
    for token, tag in zip(tokens, tags, strict=True):
        if tag == "O":
            open_label = None
            continue
        prefix, _, name = tag.partition("-")
        if prefix not in prefixes or not name:
            raise ValueError(f"tag {tag!r} is not a {scheme} tag")
        if prefix in ("I", "E") and name == open_label:
            spans[-1] = (spans[-1][0], token.end, name)
        else:
            spans.append((token.start, token.end, name))
        open_label = name if prefix in ("B", "I") else None
    return spans


def tag_vocabulary(labels: Iterable[str], scheme: str = "BIO") -> list[str]:
    """All tags of `scheme` over `labels`: "O" first, then per label (sorted) its prefixes."""
    prefixes = SCHEMES[_check(scheme)]
    return ["O", *(f"{prefix}-{name}" for name in sorted(set(labels)) for prefix in prefixes)]


def _check(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown tag scheme {scheme!r}; choose one of: {', '.join(SCHEMES)}")
    return scheme
