"""The server's logs (server/logs.py, `--log-format json`): one JSON object per line with time,
level, logger and message, an access line per request with its fields, and no credential in any
line, whichever credentials the requests carried and wherever they put them."""

import base64
import io
import json
import logging
import secrets
from urllib.parse import quote

import pytest

from deidpool.contribution.signed_requests import signed_headers
from deidpool.server.initialize import rotate_metrics_token, rotate_viewer_token
from deidpool.server.logs import INFO_LOGGERS, configure_logging

from .conftest import contribution_file, upload


@pytest.fixture
def captured_log():
    """`configure_logging(format, buffer)` for the test, the logging set-up restored after."""
    root = logging.getLogger()
    handlers, levels = root.handlers[:], {name: logging.getLogger(name).level for name in ("", *INFO_LOGGERS)}
    buffer = io.StringIO()

    def capture(log_format: str) -> io.StringIO:
        configure_logging(log_format, buffer)
        return buffer

    yield capture
    root.handlers[:] = handlers
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_json_lines_hold_the_request_fields_and_no_credential(captured_log, api, admin, site, server_dir, tmp_path):
    log = captured_log("json")
    viewer, metrics = rotate_viewer_token(server_dir.path), rotate_metrics_token(server_dir.path)
    wrong, in_query = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    basic = base64.b64encode(f"someone:{viewer}".encode()).decode()
    signed = signed_headers(site.key, "site-a", "GET", "/api/contributions", host="testserver")
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    replies = [api.get("/api/institutions", headers=admin), api.get("/", headers={"Authorization": f"Basic {basic}"}),
               api.get("/metrics", headers={"Authorization": f"Bearer {metrics}"}),
               api.get("/api/runs", headers={"Authorization": f"Bearer {wrong}"}),
               api.get(f"/api/health?token={in_query}"), api.get("/api/contributions", headers=signed),
               upload(api, body, site.key)]
    assert [reply.status_code for reply in replies] == [200, 200, 200, 401, 200, 200, 201]
    logging.getLogger("deidpool.server.test").warning("a careless line: Authorization: Bearer %s", wrong)

    text = log.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    access = [line for line in lines if line["logger"] == "deidpool.server.access"]
    assert [(line["method"], line["route"], line["status"]) for line in access] == [
        ("GET", "/api/institutions", 200), ("GET", "/", 200), ("GET", "/metrics", 200), ("GET", "/api/runs", 401),
        ("GET", "/api/health", 200), ("GET", "/api/contributions", 200), ("POST", "/api/contributions", 201)]
    assert all(line["duration_ms"] >= 0 and line["client"] and line["level"] == "INFO" for line in access)
    assert access[4]["path"] == "/api/health" and access[4]["message"] == "GET /api/health 200"  # no query string
    assert lines[-1]["message"] == "a careless line: Authorization: Bearer [masked]"
    for secret in (server_dir.token, viewer, metrics, wrong, in_query, basic, signed["X-Deidpool-Signature"],
                   signed["X-Deidpool-Nonce"]):
        assert secret not in text


def test_text_lines_mask_credentials_too(captured_log):
    log = captured_log("text")
    token = secrets.token_urlsafe(32)
    logging.getLogger("deidpool.server.test").info("retrying with basic %s", token)
    logging.getLogger("some.library").info("not shown: other libraries log from WARNING")
    (line,) = log.getvalue().splitlines()
    assert line.endswith("INFO deidpool.server.test retrying with basic [masked]") and token not in line


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_path_with_control_characters_forges_no_access_line(captured_log, api, log_format):
    """A decoded path holds what its %XX said: newlines, a terminal's escape sequence, and what
    str.splitlines takes for line ends (NEL, U+2028). Each request stays one line."""
    log = captured_log(log_format)
    forged = "2026-01-01 00:00:00,000 INFO deidpool.server.access GET /api/runs 200"
    path = f"/api/nothing\n{forged}\r\x1b[2K\x85\u2028\x7f"
    assert api.get(quote(path)).status_code == 404
    (line,) = log.getvalue().splitlines()
    if log_format == "json":
        fields = json.loads(line)
        assert fields["path"] == path and fields["message"] == f"GET {path} 404"
    else:
        assert line.endswith(" INFO deidpool.server.access GET /api/nothing\\n" + forged +
                             "\\r\\x1b[2K\\x85\\u2028\\x7f 404"), line


def test_text_tracebacks_are_indented_and_escaped_and_masked(captured_log):
    log = captured_log("text")
    token = secrets.token_urlsafe(32)
    try:
        raise ValueError(f"not a path\nbearer {token}\x1b[2K")
    except ValueError:
        logging.getLogger("deidpool.server.test").exception("failed:\n%s", "forged")
    first, *rest = log.getvalue().splitlines()
    assert first.endswith("ERROR deidpool.server.test failed:\\nforged") and token not in log.getvalue()
    assert rest[0] == "  Traceback (most recent call last):" and all(line.startswith("  ") for line in rest)
    assert rest[-2:] == ["  ValueError: not a path", "  bearer [masked]\\x1b[2K"]


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="one of text, json"):
        configure_logging("xml")
