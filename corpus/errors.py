"""The one error type for bad corpus input; it always says where (file, line or tag)."""

from __future__ import annotations

import warnings
from pathlib import Path


class CorpusError(ValueError):
    """Bad input: the message names the file and, when known, the line or tag."""

    def __init__(self, message: str, path: str | Path | None = None, where: str | None = None):
        self.path = str(path) if path is not None else None
        self.where = where
        self.reason = message
        location = ": ".join(part for part in (self.path, where) if part)
        super().__init__(f"{location}: {message}" if location else message)


class CorpusWarning(UserWarning):
    """Suspicious but readable input; `--strict` turns these into CorpusError."""


def warn_or_raise(message: str, path: str | Path | None, where: str | None, strict: bool) -> None:
    """Raise in strict mode, else emit a CorpusWarning with the same location prefix."""
    error = CorpusError(message, path, where)
    if strict:
        raise error
    warnings.warn(str(error), CorpusWarning, stacklevel=3)
