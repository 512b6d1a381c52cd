"""PHI replacement in one document: `[**CATEGORY**]` markers, or surrogates consistent within
the document (the same mention gets the same surrogate, names word by word, and every date
moves by one random per-document offset, so intervals between dates are kept)."""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable
from datetime import date, timedelta
from functools import lru_cache
from operator import methodcaller

from faker import Faker

from deidpool.corpus.document import Document, Span

MAX_SHIFT_DAYS = 365
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_MONTH_NAME = r"(?P<month_name>(?i:(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*))\.?"
_DATE_PATTERNS = [re.compile(pattern) for pattern in (
    r"(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})",
    r"(?P<month>\d{1,2})(?P<sep>[/-])(?P<day>\d{1,2})(?:(?P=sep)(?P<year>\d{4}|\d{2}))?",
    rf"{_MONTH_NAME} (?P<day>\d{{1,2}})(?P<ordinal>st|nd|rd|th)?(?:,? (?P<year>\d{{4}}))?",
    rf"(?P<day>\d{{1,2}})[ -]{_MONTH_NAME}[ -](?P<year>\d{{4}})",
    rf"{_MONTH_NAME},? (?P<year>\d{{4}})",
    r"(?P<year>\d{4})",
)]
_FAKES: dict[str, Callable[[Faker], str]] = {
    "CITY": methodcaller("city"), "LOCATION-OTHER": methodcaller("city"), "STREET": methodcaller("street_address"),
    "STATE": methodcaller("state"), "COUNTRY": methodcaller("country"), "ORGANIZATION": methodcaller("company"),
    "HOSPITAL": lambda faker: f"{faker.last_name()} Hospital", "PROFESSION": methodcaller("job"),
    "EMAIL": methodcaller("email"), "URL": methodcaller("url"), "IPADDR": methodcaller("ipv4"),
}
_SHAPED = {"PHONE", "FAX", "ZIP", "SSN", "MEDICALRECORD", "HEALTHPLAN", "ACCOUNT", "LICENSE", "VEHICLE", "DEVICE",
           "BIOID", "IDNUM", "USERNAME", "ROOM"}
_NAMES = {"PATIENT", "DOCTOR"}
_WORD = re.compile(r"[^\W\d_]+")


def marker(span: Span) -> str:
    return f"[**{span.category}**]"


def replace_spans(document: Document, replacement: Callable[[Span], str]) -> str:
    """The document's text with every span replaced by `replacement(span)`."""
    pieces, position = [], 0
    for span in sorted(document.spans):
        pieces += [document.text[position:span.start], replacement(span)]
        position = span.end
    return "".join(pieces) + document.text[position:]


def redacted_text(document: Document) -> str:
    return replace_spans(document, marker)


def surrogate_text(document: Document, rng: random.Random) -> str:
    return replace_spans(document, Surrogates(rng).replace)


@lru_cache(maxsize=1)
def _faker() -> Faker:
    return Faker("en_US")


class Surrogates:
    """The surrogates of one document, drawn from `rng`; `offset` is its date shift (never 0).

    The same mention (up to case) gets the same surrogate, in the mention's case; names are
    mapped word by word, so "John Smith" and "Mr. SMITH" share the surrogate of "Smith".
    """

    def __init__(self, rng: random.Random):
        self._rng = rng
        self.offset = timedelta(days=rng.choice((-1, 1)) * rng.randint(1, MAX_SHIFT_DAYS))
        self._mentions: dict[tuple[str, str], str] = {}
        self._words: dict[str, str] = {}

    def replace(self, span: Span) -> str:
        """The surrogate of `span`; a type without a surrogate generator gets its marker."""
        kind, text = span.type, span.text
        if kind == "DATE":
            return shift_date(text, self.offset) or marker(span)
        if kind == "AGE":
            return ("90+" if int(text) >= 90 else text) if text.isdigit() else marker(span)
        if kind in _NAMES:
            words = list(_WORD.finditer(text))
            first = words[0].start() if len(words) > 1 else None
            return _WORD.sub(lambda match: self._name_word(match.group(), match.start() == first), text)
        if kind not in _SHAPED and kind not in _FAKES:
            return marker(span)
        key = (kind, text.casefold())
        if key not in self._mentions:
            self._mentions[key] = self._shaped(text) if kind in _SHAPED else self._fake(_FAKES[kind])
        return _cased(self._mentions[key], text)

    def _name_word(self, word: str, first_name: bool) -> str:
        """The same surrogate for a name word wherever it occurs in the document."""
        key = word.casefold()
        if key not in self._words:
            self._words[key] = (self._rng.choice(string.ascii_uppercase) if len(word) == 1
                                else self._fake(methodcaller("first_name" if first_name else "last_name")))
        return _cased(self._words[key], word)

    def _shaped(self, text: str) -> str:
        """Random digits for digits and letters for letters, other characters kept."""
        return "".join(self._rng.choice(_ALIKE[_class(char)]) if _class(char) else char for char in text)

    def _fake(self, generator: Callable[[Faker], str]) -> str:
        faker = _faker()
        faker.seed_instance(self._rng.getrandbits(64))
        return generator(faker)


_ALIKE = {"digit": string.digits, "upper": string.ascii_uppercase, "lower": string.ascii_lowercase}


def _class(char: str) -> str | None:
    if char in string.digits:
        return "digit"
    if char in string.ascii_uppercase:
        return "upper"
    return "lower" if char in string.ascii_lowercase else None


def _cased(surrogate: str, original: str) -> str:
    """`surrogate` in the casing of `original` (all upper or all lower when it is)."""
    if original.isupper() and len(original) > 1:
        return surrogate.upper()
    if original.islower():
        return surrogate.lower()
    return surrogate


def shift_date(text: str, offset: timedelta) -> str | None:
    """`text` as a date moved by `offset`, written in the same format; None if it is not a
    date format known here. Dates without a year are taken in a leap year, year-only and
    month-year dates from their middle."""
    for pattern in _DATE_PATTERNS:
        match = pattern.fullmatch(text)
        if match:
            break
    else:
        return None
    found = {name: value for name, value in match.groupdict().items() if value is not None and name != "sep"}
    year = int(found.get("year", "2000"))
    if len(found.get("year", "")) == 2:
        year += 2000 if year < 50 else 1900
    month = int(found["month"]) if "month" in found else _month_number(found.get("month_name"))
    try:
        original = date(year, month or 7, int(found.get("day", 15 if month else 2)))
    except ValueError:
        return None
    moved = original + offset
    numeric = "month_name" not in found
    values = {"year": moved.year, "month": moved.month, "day": moved.day, "month_name": moved.month,
              "ordinal": moved.day}
    pieces, position = [], 0
    for name in sorted(found, key=match.start):
        pieces += [text[position:match.start(name)], _formatted(name, found[name], values[name], numeric)]
        position = match.end(name)
    return "".join(pieces) + text[position:]


def _month_number(name: str | None) -> int | None:
    if name is None:
        return None
    prefix = name[:3].lower()
    return next((number for number, month in enumerate(_MONTHS, 1) if month[:3].lower() == prefix), None)


def _formatted(name: str, original: str, value: int, numeric: bool) -> str:
    """`value` written like `original`: abbreviated or full month name and its case, two-digit
    year, and two-digit month or day when `original` has them in an all-numeric date or has a
    leading zero."""
    if name == "month_name":
        full = _MONTHS[_month_number(original) - 1]
        return _cased(_MONTHS[value - 1][:3] if len(original) < len(full) else _MONTHS[value - 1], original)
    if name == "ordinal":
        return "th" if 10 < value % 100 < 14 else {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")
    if name == "year" and len(original) == 2:
        return f"{value % 100:02d}"
    return f"{value:02d}" if len(original) == 2 and (numeric or original.startswith("0")) else str(value)
