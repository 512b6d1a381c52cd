"""The institution id rule, shared by the institution's key generation and the server's
registration (and declared as a pattern in the server's OpenAPI schema)."""

from __future__ import annotations

import re

INSTITUTION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
_VALID_ID = re.compile(INSTITUTION_ID_PATTERN)


def check_institution_id(institution: str) -> None:
    if not _VALID_ID.fullmatch(institution):
        raise ValueError(f"institution id {institution!r} must be 1-64 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit")
