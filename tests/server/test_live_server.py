"""The server's own behaviour at its edges, against real `deidpool server run` processes on
loopback: an idle API process without TensorFlow, private files, a disabled institution refused
everywhere, raw-socket clients that go away mid-upload or hold uploads open with and without a
valid request signature, and a full database volume (a size-limited SQLite file)."""

import hashlib
import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from deidpool.client.transport import UploadError, upload_contribution
from deidpool.contribution.container import CONTENT_TYPE
from deidpool.contribution.signed_requests import signed_headers, url_host
from deidpool.demo import free_port, wait_until
from deidpool.representer import keys
from deidpool.server.initialize import init_data_dir
from deidpool.server.settings import Layout

from .conftest import contribution_file

PATH = "/api/contributions"
MAX_IDLE_MB = 200
# `deidpool ARGS...` whose SQLite databases may hold no more pages than the file named by the first
# argument says, when it exists: the volume of the database is full past them (SQLite answers
# SQLITE_FULL, "database or disk is full", as on a full disk)
LIMITED_PAGES = """
import sys
from pathlib import Path

from sqlalchemy import Engine, event

limit = Path(sys.argv.pop(1))


@event.listens_for(Engine, "begin")
def _limit_pages(connection):
    pages = int(limit.read_text()) if limit.exists() else 1073741823
    connection.exec_driver_sql(f"PRAGMA max_page_count = {pages}")


from deidpool.cli import app

app(prog_name="deidpool")
"""


class Server:
    """A `deidpool server run --no-worker` process (with `launcher` code in front of the CLI, if
    given) on a data directory with institution site-a registered and a current representer."""

    def __init__(self, folder: Path, key_files, pipeline_path: Path, launcher: tuple[str, ...] = ()):
        self.data_dir, self.log = folder / "server", folder / "server.log"
        self.token = init_data_dir(self.data_dir, key_files.provider.public)
        self.url = f"http://127.0.0.1:{free_port()}"
        command = ["-c", *launcher] if launcher else ["-m", "deidpool"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, *command, "server", "run", "--data-dir", str(self.data_dir), "--port",
                 self.url.rsplit(":", 1)[1], "--no-worker", "--log-format", "json"],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "DATABASE_URL": ""})
        wait_until(self._healthy, 120, "the server to answer")
        self.admin = {"Authorization": f"Bearer {self.token}"}
        public = key_files.institution.public.read_text()
        httpx.post(self.url + "/api/institutions", headers=self.admin, json={"id": "site-a", "public_key": public},
                   timeout=30).raise_for_status()
        reply = httpx.post(self.url + "/api/representers", headers=self.admin, content=pipeline_path.read_bytes(),
                           timeout=60)
        reply.raise_for_status()
        layout = Layout(self.data_dir)
        self.layout, self.representer_sha = layout, reply.json()["payload_sha256"]
        self.site = SimpleNamespace(representer=reply.json()["representer_id"],
                                    key=keys.load_private_key(key_files.institution.private, keys.SIGNING),
                                    server_key=keys.load_public_key(layout.encryption_public_key, keys.ENCRYPTION))

    def _healthy(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()
        try:
            return httpx.get(self.url + "/api/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)

    def log_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]

    def upload(self, body: bytes) -> httpx.Response:
        headers = signed_headers(self.site.key, "site-a", "POST", PATH, host=url_host(self.url),
                                 content_sha256=hashlib.sha256(body).hexdigest())
        return httpx.post(self.url + PATH, content=body, headers={"Content-Type": CONTENT_TYPE, **headers}, timeout=60)

    def listing(self) -> httpx.Response:
        headers = signed_headers(self.site.key, "site-a", "GET", PATH, host=url_host(self.url))
        return httpx.get(self.url + PATH, headers=headers, timeout=30)

    def server_error_counts(self) -> dict:
        """{(route, status): requests} of every answer with a 5xx status, from /metrics."""
        reply = httpx.get(self.url + "/metrics", headers=self.admin, timeout=30)
        return {(sample.labels["route"], sample.labels["status"]): sample.value
                for family in text_string_to_metric_families(reply.text) for sample in family.samples
                if sample.name == "deidpool_http_requests_total" and sample.labels["status"].startswith("5")}

    def staged_bytes(self) -> int:
        """Bytes in temporary upload files (payloads/.staged-*)."""
        return sum(path.stat().st_size for path in self.layout.payloads.glob(".staged-*"))


@pytest.fixture(scope="module")
def server(tmp_path_factory, key_files, pipeline_path):
    server = Server(tmp_path_factory.mktemp("live"), key_files, pipeline_path)
    yield server
    server.stop()


def test_an_idle_api_process_holds_no_tensorflow_and_little_memory(server, tmp_path):
    """After serving uploads, listings, the dashboard and metrics the API process has not loaded
    TensorFlow (only the training worker needs it) and stays under MAX_IDLE_MB."""
    assert server.upload(contribution_file(tmp_path / "a.dpc", server.site).read_bytes()).status_code == 201
    for path, headers in (("/", server.admin), ("/metrics", server.admin), ("/api/keys", {}),
                          ("/api/representers/current", {})):
        assert httpx.get(server.url + path, headers=headers, timeout=30).status_code == 200
    assert server.listing().status_code == 200
    pid = server.process.pid
    assert "tensorflow" not in Path(f"/proc/{pid}/maps").read_text()
    memory = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in
              Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith(("VmRSS", "VmHWM"))}
    assert memory["VmHWM"] <= MAX_IDLE_MB, memory


def test_the_data_directory_keys_and_database_are_private(server):
    layout = server.layout
    paths = [layout.root, layout.keys, layout.signing_key, layout.encryption_key, layout.settings,
             *layout.root.glob("deidpool.sqlite*")]
    modes = {path.name: oct(stat.S_IMODE(path.stat().st_mode)) for path in paths}
    assert {name for name in modes if name.startswith("deidpool.sqlite")} >= {"deidpool.sqlite"}
    assert modes == {name: "0o700" if name in ("server", "keys") else "0o600" for name in modes}


def test_a_disabled_institution_is_refused_on_every_route_until_enabled(server, tmp_path):
    path = contribution_file(tmp_path / "a.dpc", server.site, seed=1)
    assert httpx.post(server.url + "/api/institutions/site-a/disable", headers=server.admin).status_code == 200
    try:
        for reply in (server.upload(path.read_bytes()), server.listing()):
            assert reply.status_code == 403 and "site-a is disabled" in reply.json()["detail"]
        with pytest.raises(UploadError, match="answered 403: .*site-a is disabled"):
            upload_contribution(path, server.url, signing_key=server.site.key, retries=0)
    finally:
        assert httpx.post(server.url + "/api/institutions/site-a/enable", headers=server.admin).status_code == 200
    assert upload_contribution(path, server.url, signing_key=server.site.key)["sha256"] == \
        hashlib.sha256(path.read_bytes()).hexdigest()


def _held_upload(server: Server, headers: dict, declared: int, send: int) -> socket.socket:
    """A raw connection that sent an upload's request line and `headers` declaring a body of
    `declared` bytes, then up to `send` bytes of it (fewer once the server stops taking them),
    and is held open."""
    connection = socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    head = {"Host": url_host(server.url), "Content-Type": CONTENT_TYPE, "Content-Length": str(declared), **headers}
    connection.sendall(f"POST {PATH} HTTP/1.1\r\n".encode() + b"".join(
        f"{name}: {value}\r\n".encode() for name, value in head.items()) + b"\r\n")
    connection.settimeout(1)
    try:
        for _ in range(send // 65536):
            connection.sendall(bytes(65536))
    except OSError:  # the server answered and closed, or takes nothing more
        pass
    return connection


def _signed(server: Server, key=None) -> dict:
    return signed_headers(key or server.site.key, "site-a", "POST", PATH, content_sha256="0" * 64,
                          host=url_host(server.url))


def test_held_uploads_stage_no_byte_without_a_valid_request_signature(server, tmp_path):
    """Strangers naming a registered institution, unsigned or signed with another key, are answered
    401 before their body is read; only the institution's signed uploads are staged."""
    declared, sent = 4 << 20, 1 << 20
    stranger = keys.load_private_key(keys.create_provider_keys(tmp_path / "stranger").private, keys.SIGNING)
    unsigned = {"X-Deidpool-Institution": "site-a", "X-Deidpool-Content-SHA256": "0" * 64}
    strangers = [_held_upload(server, headers, declared, sent) for headers in [unsigned] * 4 + [
        _signed(server, stranger) for _ in range(4)]]
    try:
        wait_until(lambda: sum(line["message"] == f"POST {PATH} 401" for line in server.log_lines()) >= 8, 60,
                   "the server to answer the 8 strangers")
        assert server.staged_bytes() == 0
        institution = [_held_upload(server, _signed(server), declared, sent) for _ in range(2)]
        try:
            wait_until(lambda: server.staged_bytes() >= sent, 60, "the institution's uploads to be staged")
        finally:
            for connection in institution:
                connection.close()
    finally:
        for connection in strangers:
            connection.close()
    wait_until(lambda: not list(server.layout.payloads.glob(".staged-*")), 60, "the staged files to go")


def test_a_client_that_goes_away_mid_upload_is_no_server_error(server):
    """5,000 of 10,000 declared bytes, then the socket closed: the access log and metrics say 499
    (client closed request), no error is logged, and nothing stays staged."""
    before = sum(line["message"] == f"POST {PATH} 499" for line in server.log_lines())
    _held_upload(server, _signed(server), 10_000, 0).close()  # the headers only
    connection = _held_upload(server, _signed(server), 10_000, 0)
    connection.sendall(bytes(5_000))
    connection.close()
    wait_until(lambda: sum(line["message"] == f"POST {PATH} 499" for line in server.log_lines()) == before + 2, 60,
               "the server to see both clients go")
    assert [line for line in server.log_lines() if line["level"] in ("ERROR", "CRITICAL")] == []
    assert server.server_error_counts() == {}
    assert not list(server.layout.payloads.glob(".staged-*"))


def _stored(server: Server) -> tuple[list[str], list[str]]:
    """The contribution rows (sha256) and the payload files (but the representer bundle's, and
    temporary ones by their names) the server holds."""
    with sqlite3.connect(server.layout.root / "deidpool.sqlite") as database:
        rows = sorted(sha256 for (sha256,) in database.execute("SELECT sha256 FROM contributions"))
    files = sorted(path.name for path in server.layout.payloads.rglob("*")
                   if path.is_file() and path.name != server.representer_sha)
    return rows, files


def test_a_full_database_answers_507_and_leaves_no_payload_without_its_row(tmp_path, key_files, pipeline_path):
    """The SQLite file limited, at each fill level, to the pages it has plus a few more: every
    upload and listing is answered 201/200 or 507, never 500, and rows == payload files, nothing
    staged; once freed, the client's retries store every upload that was refused."""
    limit = tmp_path / "max-pages"
    server = Server(tmp_path, key_files, pipeline_path, launcher=(LIMITED_PAGES, str(limit)))
    try:
        # a re-identification bound by category, as large as a real one: the row needs pages of its own
        bound = {"neighbours": 100, "overall": {"mean_success": {"uniform": 0.01, "frequency": 0.04}},
                 "categories": {f"CATEGORY-{number}": {"tokens": number, "mean_success": {"uniform": 0.01}}
                                for number in range(300)}}
        paths = [contribution_file(tmp_path / f"{level}.dpc", server.site, seed=level, bound=bound)
                 for level in range(6)]
        answers = []
        for level, path in zip((0, 1, 2, 4, 8, 32), paths):
            with sqlite3.connect(server.layout.root / "deidpool.sqlite") as database:
                limit.write_text(str(database.execute("PRAGMA page_count").fetchone()[0] + level))
            answers.append((server.upload(path.read_bytes()).status_code, server.listing().status_code))
            rows, files = _stored(server)
            assert rows == files, (level, answers)
        assert {upload for upload, _ in answers} == {201, 507} and {listing for _, listing in answers} <= {200, 507}
        limit.unlink()
        for path in paths:
            upload_contribution(path, server.url, signing_key=server.site.key, backoff=0.1)
        expected = sorted(hashlib.sha256(path.read_bytes()).hexdigest() for path in paths)
        assert _stored(server) == (expected, expected)
        assert set(server.server_error_counts()) <= {(PATH, "507")}
        errors = [line["message"] for line in server.log_lines() if line["level"] in ("ERROR", "CRITICAL")]
        assert errors and all("the server's storage is full" in message for message in errors), errors
    finally:
        server.stop()
