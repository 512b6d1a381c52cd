"""Recovery: an upload killed between storing its payload and committing its row is completed
by the client's retry or at the next start-up, a full disk or database is answered 507 and
leaves nothing behind, and temporary files of killed uploads are removed at start-up."""

import errno
import hashlib
import os
import sqlite3
import tempfile

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from deidpool.client.transport import upload_contribution
from deidpool.contribution.signed_requests import signed_headers
from deidpool.server import payloads
from deidpool.server.app import create_app, storage_full
from deidpool.server.database import Contribution
from deidpool.server.payloads import PayloadStore

from .conftest import contribution_file, stored, upload


def _listed(client, site) -> list[str]:
    headers = signed_headers(site.key, "site-a", "GET", "/api/contributions", host="testserver")
    reply = client.get("/api/contributions", headers=headers)
    return [row["sha256"] for row in reply.json()]


def _store_without_row(server_dir, body: bytes, name: str | None = None) -> str:
    """Put `body` in the payload store under `name` (default its SHA-256) without a row, as a
    server killed between the two leaves it; returns the name."""
    name = name or hashlib.sha256(body).hexdigest()
    path = server_dir.layout.payloads / name[:2] / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(body)
    return name


def test_a_killed_upload_is_completed_by_the_clients_retry_which_checks_the_listing(api, site, server_dir,
                                                                                    tmp_path, monkeypatch):
    path = contribution_file(tmp_path / "a.dpc", site)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    commit, killed = PayloadStore.commit, []

    def commit_then_die(self, staged):
        commit(self, staged)
        if not killed:
            killed.append(self.path(digest).is_file())
            raise RuntimeError("killed")  # before the row is committed

    monkeypatch.setattr(PayloadStore, "commit", commit_then_die)
    monkeypatch.setattr(PayloadStore, "remove", lambda self, sha256: None)  # a killed server cleans nothing up
    server = TestClient(api.app, raise_server_exceptions=False)
    forward = httpx.MockTransport(lambda request: server.request(request.method, request.url.path,
                                                                 headers=request.headers, content=request.read()))
    reply = upload_contribution(path, "http://testserver", signing_key=site.key, transport=forward, backoff=0,
                                allow_insecure_http=True)
    assert killed == [True]  # the payload was stored, its row rolled back
    assert reply["sha256"] == digest and _listed(api, site) == [digest]
    assert upload(api, path.read_bytes(), site.key).status_code == 409


def test_a_retry_replaces_a_damaged_payload_left_without_row(api, site, server_dir, tmp_path):
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    digest = _store_without_row(server_dir, body[:-10], hashlib.sha256(body).hexdigest())
    assert upload(api, body, site.key).status_code == 201
    assert (server_dir.layout.payloads / digest[:2] / digest).read_bytes() == body and _listed(api, site) == [digest]


def test_start_up_restores_rows_of_stored_contributions_and_removes_orphans_and_leftovers(api, site, server_dir,
                                                                                          tmp_path):
    accepted = contribution_file(tmp_path / "a.dpc", site, seed=1).read_bytes()
    assert upload(api, accepted, site.key).status_code == 201
    before = stored(server_dir)
    bound = {"overall": {"mean_success": {"empirical": 0.5}}}  # in the sealed summary: restored with the server key
    restored = _store_without_row(server_dir, contribution_file(tmp_path / "b.dpc", site, seed=2,
                                                                bound=bound).read_bytes())
    orphans = [_store_without_row(server_dir, b"a bundle whose row was never committed"),
               _store_without_row(server_dir, contribution_file(tmp_path / "c.dpc", site, seed=3).read_bytes()[:-10],
                                  "0" * 64),
               _store_without_row(server_dir, contribution_file(tmp_path / "d.dpc", site,
                                                                institution="site-x").read_bytes())]
    layout = server_dir.layout
    (layout.payloads / ".staged-killed").write_bytes(b"half an upload")
    (layout.payloads / ".publish-killed").mkdir()
    (layout.payloads / ".publish-killed" / "pipeline.tar").write_bytes(b"half a pipeline")
    with TestClient(create_app(server_dir.path)) as restarted:
        assert _listed(restarted, site) == [hashlib.sha256(accepted).hexdigest(), restored]
        with restarted.app.state.server.sessions() as session:
            row = session.get(Contribution, restored)
            assert (row.reidentification_bound, row.bound_empirical) == (bound, 0.5)
    counts, files = stored(server_dir)
    assert counts == {**before[0], "contributions": 2}
    assert files == sorted(before[1] + [f"{restored[:2]}/{restored}"])
    assert not any(name in "".join(files) for name in orphans)


def _full_disk(monkeypatch):
    """Staged payloads are written to /dev/full (each write fails with ENOSPC) until the
    returned function frees the space."""
    mkstemp = tempfile.mkstemp

    def staged_on_full_disk(**options):
        descriptor, name = mkstemp(**options)
        os.close(descriptor)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(payloads.tempfile, "mkstemp", staged_on_full_disk)
    return lambda: monkeypatch.setattr(payloads.tempfile, "mkstemp", mkstemp)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_gives_507_leaves_nothing_and_service_resumes_once_freed(api, site, admin, server_dir,
                                                                              pipeline_path, tmp_path, monkeypatch):
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    before = stored(server_dir)
    free = _full_disk(monkeypatch)
    for reply in (upload(api, body, site.key),
                  api.post("/api/representers", headers=admin, content=pipeline_path.read_bytes())):
        assert reply.status_code == 507 and "storage is full" in reply.json()["detail"]
    assert stored(server_dir) == before
    free()
    assert upload(api, body, site.key).status_code == 201


def _sqlite_full() -> OperationalError:
    """What SQLAlchemy raises when SQLite finds its volume full (SQLITE_FULL, raised here by SQLite)."""
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE filler (x)")
    connection.execute("PRAGMA max_page_count = 1")  # no page more than it has
    try:
        connection.execute("INSERT INTO filler VALUES (zeroblob(100000))")
    except sqlite3.OperationalError as error:
        return OperationalError("COMMIT", {}, error)
    finally:
        connection.close()
    raise AssertionError("SQLite stored a blob past max_page_count")


def test_full_volumes_are_told_from_other_errors():
    """ENOSPC and EDQUOT, SQLite's SQLITE_FULL and PostgreSQL's disk_full are a full volume (507);
    other database errors are not (500)."""
    full = [OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EDQUOT, "Disk quota exceeded"),
            _sqlite_full(), OperationalError("COMMIT", {}, psycopg.errors.DiskFull("could not extend file"))]
    other = [OSError(errno.EACCES, "Permission denied"), OperationalError("COMMIT", {}, sqlite3.OperationalError(
        "database is locked")), OperationalError("COMMIT", {}, psycopg.errors.AdminShutdown("terminating"))]
    assert [storage_full(error) for error in full + other] == [True] * len(full) + [False] * len(other)


def test_a_full_database_gives_507_and_leaves_no_payload_without_its_row(api, site, server_dir, tmp_path):
    """When the database volume is full at the commit of an upload's row, after its payload was
    moved into place, the payload goes again; a full database refuses signed requests too (their
    nonce is not recorded). Service resumes once freed."""
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    before, full, moved = stored(server_dir), ["everything"], []

    def commit_on_a_full_volume(session):
        rows = list(session.identity_map.values())
        if full == ["everything"] or any(isinstance(row, Contribution) for row in rows):
            moved.extend(server_dir.layout.payloads.glob(f"??/{digest}"))
            raise _sqlite_full()

    event.listen(Session, "before_commit", commit_on_a_full_volume)
    try:
        replies = [upload(api, body, site.key),
                   api.get("/api/contributions", headers=signed_headers(site.key, "site-a", "GET",
                                                                        "/api/contributions", host="testserver"))]
        assert moved == []  # refused at the nonce, before the body was read
        full[:] = ["the contribution's row"]
        replies.append(upload(api, body, site.key))
        assert len(moved) == 1  # refused at the commit, after its payload was moved into place
    finally:
        event.remove(Session, "before_commit", commit_on_a_full_volume)
    for reply in replies:
        assert reply.status_code == 507 and "storage is full" in reply.json()["detail"], reply.text
    assert stored(server_dir) == before
    assert upload(api, body, site.key).status_code == 201 and _listed(api, site) == [digest]
