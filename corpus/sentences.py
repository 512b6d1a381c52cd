"""Sentence splitting for clinical notes (docs/method.md, Inputs): ordinary sentence ends plus
breaks at blank lines, list items, section headers and separator runs, with a hard cap on
sentence length. The rules, written for nursing notes:

- A run of blank lines (at least one empty or whitespace-only line) ends a sentence; a single
  line break does not (the lines of notes are often wrapped text).
- A line that starts a list item (a bullet, or a marker such as ``1.``, ``(3)``, ``a)``) or a
  section header (letter words joined by "/" then ``:``, ``-`` or ``=``: "GI:", "a/p-") ends the
  sentence before it.
- A run of three or more ``-``, ``=`` or ``_`` is a separator: it ends the sentence and is
  dropped, unless it overlaps a `keep_together` span.
- ``.``, ``!`` or ``?`` followed by whitespace and a letter (lower case too), digit, opening
  bracket or quote ends a sentence, unless the period closes a list marker, an abbreviation
  (`ABBREVIATIONS`, case insensitive, and "C/.") or an initial ("J. Smith") on the same line.
  ``?`` and ``!`` count only when attached to the preceding word (a detached "?" means
  "questionable"); ``;`` never ends a sentence.
- A sentence longer than `max_tokens` is cut greedily at the best gap in the second half of the
  allowed window (after ``;`` or ``.``, else a line break, after ``,`` or ``:``, any whitespace).

`keep_together` spans (gold PHI during training) are never cut by any of these rules."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from typing import Protocol

from deidpool.corpus.tokenize import Token

MAX_TOKENS = 200

ABBREVIATIONS = frozenset({
    "dr.", "mr.", "mrs.", "ms.", "st.", "p.o.", "b.i.d.", "t.i.d.", "q.i.d.", "q.d.", "q.h.s.",
    "p.r.n.", "i.v.", "e.g.", "i.e.", "vs.", "approx.", "no.", "pt.", "etc.",
    # Spanish (MEDDOCAN): titles, and words of addresses, which a break would otherwise cut
    "dra.", "sr.", "sra.", "srta.", "dña.", "prof.", "gral.", "núm.", "aprox.", "univ.",
    "av.", "avd.", "avda.", "ctra.", "crta.", "carr.", "cra.", "pso.", "pza.", "pl.", "urb.",
    "edif.", "edf.", "esc.", "apto.", "km.", "col.", "cdad.", "sta.", "sto.",
})
_BULLETS = frozenset("-*•·o")
_OPENERS = frozenset("([\"'¿¡")
# gaps where a rule may apply (they end where the next token starts) and separator runs
_CANDIDATE = re.compile(r"[.!?]\s+|\n\s*")
_SEPARATOR_RUN = re.compile(r"-{3,}|={3,}|_{3,}")
# gap preference when cutting an over-long sentence: lower is better
_AFTER_STOP, _LINE_BREAK, _AFTER_COMMA, _SPACE, _NO_SPACE = range(5)


class _Extent(Protocol):
    start: int
    end: int


def split_sentences(text: str, tokens: list[Token], keep_together: Iterable[_Extent] = (),
                    max_tokens: int = MAX_TOKENS) -> list[list[Token]]:
    """Group `tokens` into sentences, leaving separator runs out (see the module docstring).

    `tokens` must be all tokens of `text` (or of one slice of it) as `tokenize` returns
    them, so that the text between two tokens is whitespace.
    """
    if not tokens:
        return []
    starts = [t.start for t in tokens]
    locked, covered = _protected(tokens, starts, keep_together)
    first, last = tokens[0].start, tokens[-1].end
    cuts = set()
    for match in _CANDIDATE.finditer(text, first, last):
        i = bisect_left(starts, match.end())
        if 0 < i < len(tokens) and i not in locked and _breaks_before(text, tokens, i):
            cuts.add(i)
    dropped = set()
    for match in _SEPARATOR_RUN.finditer(text, first, last):
        a = bisect_left(starts, match.start())
        b = a + match.end() - match.start()
        if covered.isdisjoint(range(a, b)):
            cuts.update((a, b))
            dropped.add(a)
    bounds = sorted(cuts | {0, len(tokens)})
    sentences: list[list[Token]] = []
    for a, b in zip(bounds, bounds[1:]):
        if a not in dropped:
            sentences.extend(_cap(text, tokens, a, b, locked, max_tokens))
    return sentences


def _protected(tokens: list[Token], starts: list[int], spans: Iterable[_Extent]) -> tuple[set[int], set[int]]:
    """(indices i with no cut allowed before token i, indices of tokens overlapping a span)."""
    ends = [t.end for t in tokens]
    locked: set[int] = set()
    covered: set[int] = set()
    for span in spans:
        first, last = bisect_right(ends, span.start), bisect_left(starts, span.end) - 1
        covered.update(range(first, last + 1))
        locked.update(range(first + 1, last + 1))
    return locked, covered


def _breaks_before(text: str, tokens: list[Token], i: int) -> bool:
    token, previous = tokens[i], tokens[i - 1]
    newlines = text.count("\n", previous.end, token.start)
    if newlines >= 2 or (newlines and (_starts_list_item(text, tokens, i) or _starts_section(tokens, i))):
        return True
    if previous.text not in ".!?" or not (token.text[0].isalnum() or token.text in _OPENERS):
        return False
    if i >= 2 and _starts_line(text, tokens, i - 2) and _starts_list_item(text, tokens, i - 2):
        return False  # the period of a "1." list marker
    return (newlines > 0 and previous.text == ".") or _ends_sentence(tokens, i - 1)


def _starts_line(text: str, tokens: list[Token], i: int) -> bool:
    return i == 0 or "\n" in text[tokens[i - 1].end:tokens[i].start]


def _ends_sentence(tokens: list[Token], i: int) -> bool:
    """Whether punctuation token i, followed by whitespace, closes a sentence (apart from
    the line and list rules)."""
    mark = tokens[i]
    if mark.text != ".":
        return i > 0 and tokens[i - 1].end == mark.start
    # walk back over a word like "b.i.d." made of adjacent letter and period tokens
    first, j = i, i - 1
    while j >= 0 and tokens[j].end == tokens[j + 1].start and tokens[j].text.isalpha():
        first = j
        if j >= 1 and tokens[j - 1].text == "." and tokens[j - 1].end == tokens[j].start:
            j -= 2
        else:
            break
    if first == i:  # no word before the period; "C/." abbreviates "calle"
        return not (i > 0 and tokens[i - 1].text == "/" and tokens[i - 1].end == mark.start)
    word = "".join(t.text for t in tokens[first:i + 1]).lower()
    initial = (first + 1 == i and len(tokens[first].text) == 1 and tokens[first].text.isupper()
               and (first == 0 or tokens[first - 1].end < tokens[first].start))
    return not (initial or word in ABBREVIATIONS)


def _starts_list_item(text: str, tokens: list[Token], i: int) -> bool:
    """Whether token i, the first on its line, opens a bulleted or numbered list item."""
    def attached(k: int) -> bool:
        return k < len(tokens) and tokens[k].start == tokens[k - 1].end

    def spaced(k: int) -> bool:
        return tokens[k].end < len(text) and text[tokens[k].end].isspace()

    first = tokens[i].text
    if first in _BULLETS:
        return tokens[i].end < len(text) and text[tokens[i].end] in " \t"
    if first == "(":
        return (attached(i + 1) and _is_marker(tokens[i + 1].text) and attached(i + 2)
                and tokens[i + 2].text == ")" and spaced(i + 2))
    if not (attached(i + 1) and spaced(i + 1)):
        return False
    closer = tokens[i + 1].text
    return (closer in ".)" and first.isdigit() and len(first) <= 2) or (closer == ")" and _is_marker(first))


def _is_marker(text: str) -> bool:
    return (text.isdigit() and len(text) <= 2) or (len(text) == 1 and text.isalpha())


def _starts_section(tokens: list[Token], i: int) -> bool:
    """Whether token i, the first on its line, opens a header like "GI:", "a/p-", "HEME="."""
    while i + 2 < len(tokens) and tokens[i + 1].text == "/" and tokens[i + 2].text.isalpha():
        i += 2
    return tokens[i].text.isalpha() and i + 1 < len(tokens) and tokens[i + 1].text in (":", "-", "=")


def _cap(text: str, tokens: list[Token], a: int, b: int, locked: set[int], max_tokens: int) -> list[list[Token]]:
    """Cut the sentence tokens[a:b] into pieces of at most `max_tokens` tokens."""
    pieces = []
    while b - a > max_tokens:
        window = range(a + max(1, max_tokens // 2), a + max_tokens + 1)
        cut = min(window, key=lambda i: (_gap_rank(text, tokens, i, locked), -i))
        if cut in locked:  # a span fills the whole window: cut right after it
            cut = next((i for i in range(a + max_tokens + 1, b) if i not in locked), b)
        pieces.append(tokens[a:cut])
        a = cut
    if a < b:
        pieces.append(tokens[a:b])
    return pieces


def _gap_rank(text: str, tokens: list[Token], i: int, locked: set[int]) -> float:
    """How good a cut before token i is: lower is better, infinite where forbidden."""
    if i in locked:
        return float("inf")
    previous, token = tokens[i - 1], tokens[i]
    if previous.end == token.start:
        return _NO_SPACE
    if previous.text in ";.":
        return _AFTER_STOP
    if "\n" in text[previous.end:token.start]:
        return _LINE_BREAK
    return _AFTER_COMMA if previous.text in ",:" else _SPACE
