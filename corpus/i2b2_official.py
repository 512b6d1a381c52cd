"""What the official i2b2 2014 de-identification scorer (kotfic/i2b2_evaluation_scripts,
`evaluate.py phi`) counts as a PHI token and as HIPAA PHI, for `deidpool.corpus.metrics`.

Tokens: each span is tokenized on its own: its tokens are the runs of ASCII letters and digits
(`[a-zA-Z0-9]+`) inside the span's offsets, clipped at them, so a boundary inside a word gives
a partial-word token that no whole-word token equals. A span without any letter or digit gives
one empty token at its end offset. A token is its (start, end) offsets: overlapping or repeated
spans contribute each token once.

HIPAA: the scorer's filter keeps the i2b2 types below (it checks the tag name too, which each
i2b2 type determines). It leaves out DOCTOR, USERNAME, PROFESSION, ROOM, DEPARTMENT, HOSPITAL,
STATE, COUNTRY, LOCATION-OTHER, URL, IPADDR, OTHER, and IDNUM too (its IDNUM pattern ends in a
space and so never matches), but keeps ORGANIZATION. This differs from `Span.hipaa`
(`deidpool.corpus.categories`), the project's Safe-Harbor reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from deidpool.corpus.document import Span

HIPAA_TYPES = frozenset({
    "PATIENT", "CITY", "STREET", "ZIP", "ORGANIZATION", "DATE", "AGE", "PHONE", "FAX", "EMAIL",
    "SSN", "MEDICALRECORD", "HEALTHPLAN", "ACCOUNT", "LICENSE", "VEHICLE", "DEVICE", "BIOID",
})

_TOKEN = re.compile("[a-zA-Z0-9]+")


def is_hipaa(span: Span) -> bool:
    return span.type in HIPAA_TYPES


def phi_tokens(text: str, spans: Iterable[Span]) -> set[tuple[int, int]]:
    """The (start, end) of every token of every span (see the module doc)."""
    tokens = set()
    for span in spans:
        found = [match.span() for match in _TOKEN.finditer(text, span.start, span.end)]
        tokens.update(found or [(span.end, span.end)])
    return tokens
