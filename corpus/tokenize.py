"""Aggressive tokenization with character offsets (docs/method.md, Inputs): a token is a run of
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
    tokens = [Token(m.group(), m.start(), m.end())
              for m in _TOKEN.finditer(text, start, len(text) if end is None else end)]
    cuts = sorted(set(breaks), reverse=True)  # from the last, so that the tokens before keep their index
    starts = [t.start for t in tokens] if cuts else []
    for cut in cuts:
        i = bisect_right(starts, cut) - 1
        if i >= 0 and tokens[i].start < cut < tokens[i].end:
            a, b = tokens[i].start, tokens[i].end
            tokens[i:i + 1] = [Token(text[a:cut], a, cut), Token(text[cut:b], cut, b)]
    return tokens
