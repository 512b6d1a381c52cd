"""The log output of `deidpool server run` and `deidpool server worker` (docs/server.md, Logs):
plain text lines, or one JSON object per line (`--log-format json`) with time, level, logger and
message, and the request fields of access lines (server/metrics.py). Credentials never reach a
log: no code logs a request's headers or query string, and what looks like an Authorization value
(`Bearer ...`, `Basic ...`) in a message is masked all the same. Nothing a client sends (a decoded
request path holds any character) can forge a line or a field: control characters and line
separators are escaped, in both formats."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import datetime, timezone
from typing import TextIO

FORMATS = ("text", "json")
INFO_LOGGERS = ("deidpool", "uvicorn")  # the rest (TensorFlow, Alembic, httpx) from WARNING
REQUEST_FIELDS = "request"  # the `extra=` key of an access line's fields
_CREDENTIALS = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}")
# What ends or rewrites a line in some reader (str.splitlines, a terminal): C0 and C1 controls,
# DEL, and the Unicode line and paragraph separators. JSON escapes C0 itself.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_JSON_UNESCAPED = re.compile(r"[\x7f-\x9f\u2028\u2029]")


def mask_credentials(text: str) -> str:
    """`text` with what follows `Bearer ` or `Basic ` replaced by `[masked]`."""
    return _CREDENTIALS.sub(r"\1\2[masked]", text)


def escape_controls(text: str) -> str:
    """`text` with each control character written as Python writes it in a string literal
    (`\\n`, `\\x1b`, `\\u2028`): one line, whatever the text held."""
    return _CONTROLS.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def _continued(text: str) -> str:
    """A traceback or stack kept on its own lines, each indented (so that only a record's first
    line starts at the margin), masked and escaped."""
    return "\n".join(f"  {escape_controls(line)}" for line in mask_credentials(text).split("\n"))


class TextFormatter(logging.Formatter):
    """`time level logger message` on one line, credentials masked (before escaping, which would
    hide the white space after `Bearer`), control characters escaped; a traceback follows on
    indented lines."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape_controls(mask_credentials(super().formatMessage(record)))

    def formatException(self, exc_info) -> str:
        return _continued(super().formatException(exc_info))

    def formatStack(self, stack_info: str) -> str:
        return _continued(super().formatStack(stack_info))


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, message, the fields of
    `extra={"request": {...}}` when given, and the exception's traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
                "level": record.levelname, "logger": record.name, "message": mask_credentials(record.getMessage())}
        fields = getattr(record, REQUEST_FIELDS, None)
        if isinstance(fields, dict):
            line.update({name: value for name, value in fields.items() if name not in line})
        if record.exc_info:
            line["exception"] = mask_credentials(self.formatException(record.exc_info))
        return _JSON_UNESCAPED.sub(lambda found: f"\\u{ord(found.group()):04x}",
                                   json.dumps(line, default=str, ensure_ascii=False))


class _StandardError(logging.StreamHandler):
    """Writes to sys.stderr as it is at each record (like logging.lastResort)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def configure_logging(log_format: str = "text", stream: TextIO | None = None) -> logging.Handler:
    """Send every log record to `stream` (standard error) in `log_format` ("text" or "json"),
    replacing the root logger's handlers; INFO and above from the server, the CLI and Uvicorn,
    WARNING and above from everything else. Returns the handler."""
    if log_format not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {log_format!r}")
    handler = logging.StreamHandler(stream) if stream is not None else _StandardError()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    for name in INFO_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
    return handler
