"""Aggressive tokenization with character offsets (METHOD.md, Inputs): a token is a run of
letters, a run of digits, or one single other non-space character, so "25yo" -> "25", "yo"
and "09/14/2067CPT" -> "09", "/", "14", "/", "2067", "CPT"."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from typing import NamedTuple

_TOKEN = re.compile(r"[^\W\d_]+|\d+|\S")


class Token(NamedTuple):
    text: str
    start: int
    end: int


def tokenize(text: str, breaks: Iterable[int] = (), start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of `text[start:end]` with offsets into `text`.

    `breaks` are extra character offsets at which a token must be cut (gold span
    boundaries during training-data preparation, so that no label falls inside a token).
    """
    tokens = [Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text, start, len(text) if end is None else end)]
    cuts = sorted(set(breaks))
    if not cuts:
        return tokens
    result: list[Token] = []
    for token in tokens:
        first = bisect_right(cuts, token.start)
        inside = cuts[first:bisect_right(cuts, token.end - 1)]
        bounds = [token.start, *inside, token.end]
        result.extend(Token(text[a:b], a, b) for a, b in zip(bounds, bounds[1:]))
    return result
