"""Hand-crafted token features shared by the CRF (CEGS N-GRID 2016, Table 2) and the SVM
(Sibanda & Uzuner 2006) baselines: per-token surface features, the whitespace-delimited word
around a token, the section heading a token is in, and context windows of neighbours.

Features are python-crfsuite/DictVectorizer style dicts: a string value is one categorical
feature, `True` an indicator (false indicators are left out rather than stored)."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

from deidpool.corpus.casing import CASING, casing_id
from deidpool.corpus.tokenize import Token

AFFIX_LENGTHS = (2, 3, 4)
# A heading opens a line: letter words (joined by spaces or "/") then ":" ("HISTORY OF PRESENT
# ILLNESS:", "Neuro:", "a/p:"); the pattern of the section rule of corpus.sentences, plus spaces.
_HEADING = re.compile(r"^[ \t]*([^\W\d_]+(?:[ /][^\W\d_]+){0,5})[ \t]*:", re.MULTILINE)
_NO_HEADING = "<none>"


def word_shape(text: str) -> str:
    """The long shape: upper-case letters as "A", other letters "a", digits "0", the rest kept."""
    return "".join("A" if c.isupper() else "a" if c.isalpha() else "0" if c.isdigit() else c for c in text)


def lexical_features(text: str) -> dict[str, str]:
    """The features both baselines use: lower-cased word, length and the casing class."""
    return {"lower": text.lower(), "length": str(len(text)), "casing": CASING[casing_id(text)]}


def orthographic_features(text: str) -> dict[str, str | bool]:
    """CEGS Table 2 without POS, chunk, lemma and dictionaries: lexical, long shape, letter,
    digit and punctuation indicators, and prefixes and suffixes of 2-4 characters."""
    letter = any(c.isalpha() for c in text)
    digit = any(c.isdigit() for c in text)
    punct = any(not c.isalnum() and not c.isspace() for c in text)
    indicators = {
        "has_letter": letter, "has_upper": any(c.isupper() for c in text), "init_upper": text[:1].isupper(),
        "all_upper": text.isupper(), "has_digit": digit, "all_digit": text.isdigit(), "has_punct": punct,
        "letters_and_digits": text.isalnum() and letter and digit,
        "digits_and_punct": digit and punct and not letter,
    }
    affixes = {f"{side}{n}": part for n in AFFIX_LENGTHS if len(text) >= n
               for side, part in (("prefix", text[:n]), ("suffix", text[-n:]))}
    return {**lexical_features(text), "shape": word_shape(text), **affixes,
            **{name: True for name, value in indicators.items() if value}}


def in_window(per_token: Sequence[dict], window: int) -> list[dict]:
    """Each token's features plus those of its neighbours up to `window` tokens away, named
    "-1:lower", "+2:shape", ...; "BOS"/"EOS" mark a window that runs past the sentence."""
    result = []
    for i, own in enumerate(per_token):
        features = dict(own)
        for offset in (*range(-window, 0), *range(1, window + 1)):
            j = i + offset
            if 0 <= j < len(per_token):
                features.update({f"{offset:+d}:{name}": value for name, value in per_token[j].items()})
            elif j == -1:
                features["BOS"] = True
            elif j == len(per_token):
                features["EOS"] = True
        result.append(features)
    return result


def enclosing_word(text: str, token: Token) -> str:
    """The whitespace-delimited word that contains `token` ("09/14/2067" for the token "14")."""
    start, end = token.start, token.end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end]


class SectionHeadings:
    """The section headings of a note, to look up the one in force at a character offset."""

    def __init__(self, text: str):
        found = [(m.start(), " ".join(m.group(1).lower().split())) for m in _HEADING.finditer(text)]
        self.starts = [start for start, _ in found]
        self.names = [name for _, name in found]

    def at(self, offset: int) -> str:
        """The last heading starting at or before `offset`, or "<none>" before the first one."""
        i = bisect_right(self.starts, offset)
        return self.names[i - 1] if i else _NO_HEADING
