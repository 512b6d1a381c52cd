"""Uploads of contributions (docs/server.md, Uploads): accepted once, every refusal with its
status and nothing stored changed, idempotent re-upload, concurrent uploads, and the signed
listing of an institution's own contributions."""

import hashlib
import json
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from deidpool.contribution import container
from deidpool.contribution.container import MAX_HEADER_BYTES
from deidpool.contribution.signed_requests import CLIENT_VERSION, signed_headers
from deidpool.representer import keys
from deidpool.server.app import create_app
from deidpool.server.auth import UNSIGNED
from deidpool.server.database import Contribution

from ..contribution.conftest import resigned
from .conftest import contribution_file, set_limits, stored, upload


def test_a_valid_contribution_is_stored_once_and_a_repeat_is_idempotent(api, site, server_dir, tmp_path):
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    before = stored(server_dir)
    reply = upload(api, body, site.key)
    assert reply.status_code == 201, reply.text
    digest = hashlib.sha256(body).hexdigest()
    assert reply.json()["sha256"] == digest and reply.json()["sentences"] == 8
    counts, files = stored(server_dir)
    assert counts["contributions"] == before[0]["contributions"] + 1
    assert files == sorted(before[1] + [f"{digest[:2]}/{digest}"])
    assert (server_dir.layout.payloads / digest[:2] / digest).read_bytes() == body
    again = upload(api, body, site.key)
    assert again.status_code == 409 and "already stored" in again.json()["detail"]
    assert stored(server_dir) == (counts, files)


def _other_institution_key():
    return Ed25519PrivateKey.generate()


def _tamper(body: bytes) -> bytes:
    altered = bytearray(body)
    altered[100] ^= 1
    return bytes(altered)


CASES = {
    # name: (how to make the body and headers, expected status, words of the message)
    "unknown institution": (lambda s, p: (contribution_file(p, s, institution="site-x",
                                                            signing_key=_other_institution_key()),
                                          {"institution": "site-x"}), 401, "signed by a registered institution"),
    "header institution differs": (lambda s, p: (contribution_file(p, s, institution="site-b",
                                                                   signing_key=_other_institution_key()), {}), 401,
                                   "is not the"),
    "unregistered header institution": (lambda s, p: (contribution_file(p, s), {"institution": "site-b"}), 401,
                                        "signed by a registered institution"),
    "missing institution header": (lambda s, p: (contribution_file(p, s), {"institution": None}), 401, "missing"),
    "wrong signature": (lambda s, p: (contribution_file(p, s, signing_key=_other_institution_key()), {}), 401,
                        "signature"),
    "altered bytes": (lambda s, p: (_tamper(contribution_file(p, s).read_bytes()), {}), 401, "altered"),
    "truncated": (lambda s, p: (contribution_file(p, s).read_bytes()[:-40], {}), 400, "truncated"),
    "not a contribution": (lambda s, p: (b"hello" * 100, {}), 400, "not a contribution"),
    "wrong hash header": (lambda s, p: (contribution_file(p, s), {"sha256": "0" * 64}), 400,
                          "X-Deidpool-Content-SHA256"),
    "wrong representer": (lambda s, p: (contribution_file(p, s, representer_id="rep-0000000000000000"), {}), 422,
                          "representer id"),
    "wrong dimension": (lambda s, p: (contribution_file(p, s, dim=3), {}), 422, "size 3"),
    "tag id out of range": (lambda s, p: (contribution_file(p, s, num_tags=200), {}), 422, "tag id"),
    "too few neighbours": (lambda s, p: (contribution_file(p, s, neighbours=9), {}), 422, "at least 10"),
    "too many draws": (lambda s, p: (contribution_file(p, s, draws=2), {}), 422, "holds 2 draws of every sentence; "
                                                                                 "this server accepts at most 1"),
    "old format version": (lambda s, p: (resigned(contribution_file(p, s).read_bytes(), s.key, format_version=2), {}),
                           400, "format_version is 2"),
    "format version 3, the bound in its header": (
        lambda s, p: (resigned(contribution_file(p, s).read_bytes(), s.key, format_version=3,
                               reidentification_bound={}), {}), 400,
        "the upload: the header's format_version is 3, but only format_version 4 is read"),
    "sealed summary of the wrong shape": (lambda s, p: (contribution_file(p, s, bound=[0.5]), {}), 422,
                                          "reidentification_bound and safety_net must be JSON objects"),
    "ill-typed header field": (lambda s, p: (resigned(contribution_file(p, s).read_bytes(), s.key, neighbours="100"),
                                             {}), 400, "neighbours must be a whole number >= 1, got '100'"),
    "header nested past the parser": (lambda s, p: (resigned(contribution_file(p, s).read_bytes(), s.key,
                                                             raw_header=b"[" * 100_000 + b"]" * 100_000), {}),
                                      400, "header is malformed"),
    "header past its cap": (lambda s, p: (resigned(contribution_file(p, s).read_bytes(), s.key,
                                                   raw_header=b" " * (MAX_HEADER_BYTES + 1)), {}), 400,
                            f"exceeds the limit of {MAX_HEADER_BYTES:,} bytes"),
}


@pytest.mark.parametrize("case", CASES)
def test_refused_uploads_change_nothing_stored(case, api, site, server_dir, tmp_path):
    make, status, words = CASES[case]
    body, headers = make(site, tmp_path / "a.dpc")
    body = body if isinstance(body, bytes) else body.read_bytes()
    before = stored(server_dir)
    reply = upload(api, body, site.key, **headers)
    assert reply.status_code == status, reply.text
    assert words in reply.json()["detail"]
    assert str(tmp_path) not in reply.json()["detail"] and str(server_dir.path) not in reply.json()["detail"]
    assert stored(server_dir) == before


def test_a_surrogates_contribution_is_not_held_to_the_minimum_n(api, site, tmp_path):
    """N does not apply to surrogates (drawn whatever the original): its header's N is not checked."""
    body = contribution_file(tmp_path / "a.dpc", site, neighbours=1, pseudonymization="surrogates").read_bytes()
    assert upload(api, body, site.key).status_code == 201


def test_a_disabled_institution_gets_403_on_every_route_until_enabled(api, site, admin, server_dir, tmp_path):
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    assert api.post("/api/institutions/site-a/disable", headers=admin).json()["enabled"] is False
    before = stored(server_dir)
    for reply in (upload(api, body, site.key), _listing(api, site.key)):
        assert reply.status_code == 403
        assert reply.json()["detail"] == ("institution site-a is disabled: the server refuses its requests until the "
                                          "coordinator enables it again")
    assert stored(server_dir) == before
    assert api.post("/api/institutions/site-a/enable", headers=admin).status_code == 200
    assert upload(api, body, site.key).status_code == 201 and _listing(api, site.key).status_code == 200


def test_an_upload_is_a_signed_request_and_an_unsigned_one_names_the_client_version_to_use(api, site, server_dir,
                                                                                          tmp_path):
    """The institution's key signs the request (its body's SHA-256 included), checked before the
    body is read; an older client's unsigned upload is told which version signs."""
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    digest = hashlib.sha256(body).hexdigest()
    before = stored(server_dir)
    unsigned = api.post("/api/contributions", content=body, headers={  # what a client before 0.2.0 sent
        "Content-Type": container.CONTENT_TYPE, "X-Deidpool-Institution": "site-a",
        "X-Deidpool-Content-SHA256": digest})
    assert unsigned.status_code == 401 and f"deidpool {CLIENT_VERSION} or later" in unsigned.json()["detail"]
    signed = signed_headers(site.key, "site-a", "POST", "/api/contributions", content_sha256=digest, host="testserver")
    refused = {
        "signed by another key": upload(api, body, Ed25519PrivateKey.generate()),
        "signed for another body": api.post("/api/contributions", content=body, headers={
            **signed, "X-Deidpool-Content-SHA256": "0" * 64}),
        "signed as a listing": api.post("/api/contributions", content=body, headers={
            **signed_headers(site.key, "site-a", "GET", "/api/contributions", host="testserver"),
            "X-Deidpool-Content-SHA256": digest}),
        "without the body's hash": api.post("/api/contributions", content=body, headers={
            key: value for key, value in signed.items() if key != "X-Deidpool-Content-SHA256"}),
        "signed for another server": api.post("/api/contributions", content=body, headers=signed_headers(
            site.key, "site-a", "POST", "/api/contributions", host="other-pool.example", content_sha256=digest)),
        "timestamp past a float": api.post("/api/contributions", content=body, headers={
            **signed, "X-Deidpool-Timestamp": "1" + "0" * 400}),
    }
    for name, reply in refused.items():
        assert (reply.status_code, reply.json()["detail"]) == (401, UNSIGNED), name
    assert stored(server_dir) == before
    assert api.post("/api/contributions", content=body, headers=signed).status_code == 201
    replay = api.post("/api/contributions", content=body, headers=signed)
    assert replay.status_code == 401 and "already received" in replay.json()["detail"]


def test_oversized_upload_gives_413_and_leaves_no_file(server_dir, key_files, pipeline_path, tmp_path):
    from fastapi.testclient import TestClient

    from deidpool.server.app import create_app

    set_limits(server_dir, max_upload_bytes=2000)
    with TestClient(create_app(server_dir.path)) as client:
        admin_headers = {"Authorization": f"Bearer {server_dir.token}"}
        client.post("/api/institutions", headers=admin_headers,
                    json={"id": "site-a", "public_key": key_files.institution.public.read_text()})
        assert client.post("/api/representers", headers=admin_headers,
                           content=pipeline_path.read_bytes()).status_code == 413
        before = stored(server_dir)
        body = b"x" * 5000
        key = keys.load_private_key(key_files.institution.private, keys.SIGNING)
        declared = upload(client, body, key)
        assert declared.status_code == 413 and "2,000" in declared.json()["detail"]
        streamed = client.post("/api/contributions", content=iter([body[:1500], body[1500:]]),
                               headers=signed_headers(key, "site-a", "POST", "/api/contributions", host="testserver",
                                                      content_sha256=hashlib.sha256(body).hexdigest()))
        assert streamed.status_code == 413
        assert stored(server_dir) == before


def test_replayed_nonce_is_refused(api, site, server_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(container.secrets, "token_hex", lambda size: "ab" * size)
    first = contribution_file(tmp_path / "a.dpc", site, seed=1).read_bytes()
    replay = contribution_file(tmp_path / "b.dpc", site, seed=2).read_bytes()
    assert first != replay
    assert upload(api, first, site.key).status_code == 201
    before = stored(server_dir)
    reply = upload(api, replay, site.key)
    assert reply.status_code == 400 and "replay" in reply.json()["detail"]
    assert stored(server_dir) == before


@pytest.mark.parametrize("shift", [timedelta(days=8), timedelta(hours=-1)], ids=["old", "future"])
def test_stale_creation_time_is_refused(api, site, server_dir, tmp_path, monkeypatch, shift):
    moment = datetime.now(timezone.utc) - shift

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return moment

    monkeypatch.setattr(container, "datetime", Clock)
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    before = stored(server_dir)
    reply = upload(api, body, site.key)
    assert reply.status_code == 400 and "stale" in reply.json()["detail"]
    assert stored(server_dir) == before


def test_concurrent_uploads_are_all_stored_once(api, site, server_dir, tmp_path):
    bodies = [contribution_file(tmp_path / f"{number}.dpc", site, seed=number).read_bytes() for number in range(6)]
    statuses = []

    def send(body):
        statuses.append(upload(api, body, site.key).status_code)

    threads = [threading.Thread(target=send, args=(body,)) for body in bodies + bodies[:2]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * 6 + [409] * 2
    counts, files = stored(server_dir)
    assert counts["contributions"] == 6
    assert len([name for name in files if "/" in name and not name.split("/")[1].startswith(".")]) == 6 + 1


def _listing(api, key, institution="site-a", **options):
    headers = signed_headers(key, institution, "GET", "/api/contributions", **options, host="testserver")
    return api.get("/api/contributions", headers=headers)


def test_a_server_that_allows_draws_stores_and_lists_them(server_dir, site, tmp_path):
    set_limits(server_dir, max_draws=3)
    with TestClient(create_app(server_dir.path)) as client:
        assert upload(client, contribution_file(tmp_path / "a.dpc", site, draws=3, sentences=6).read_bytes(),
                      site.key).status_code == 201
        assert [row["draws"] for row in _listing(client, site.key).json()] == [3]
        refused = upload(client, contribution_file(tmp_path / "b.dpc", site, draws=4).read_bytes(), site.key)
        assert refused.status_code == 422 and "at most 3" in refused.json()["detail"]


def test_an_institution_lists_its_own_contributions_with_signed_requests(api, site, admin, key_files, tmp_path):
    other = Ed25519PrivateKey.generate()
    public = other.public_key().public_bytes(serialization.Encoding.PEM,
                                             serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert api.post("/api/institutions", headers=admin, json={"id": "site-b", "public_key": public}).status_code == 201
    bound = {"neighbours": 100, "overall": {"mean_success": {"uniform": 0.01, "frequency": 0.04, "empirical": 0.3}}}
    body = contribution_file(tmp_path / "a.dpc", site, bound=bound).read_bytes()
    assert upload(api, body, site.key).status_code == 201
    assert upload(api, contribution_file(tmp_path / "b.dpc", site, institution="site-b",
                                         signing_key=other).read_bytes(), other,
                  institution="site-b").status_code == 201
    mine = _listing(api, site.key)
    assert mine.status_code == 200, mine.text
    assert [row["institution"] for row in mine.json()] == ["site-a"]
    assert set(mine.json()[0]) >= {"sha256", "sentences", "tokens", "received"}
    assert mine.json()[0]["neighbours"] == 100 and mine.json()[0]["reidentification_bound"] == bound
    assert mine.json()[0]["draws"] == 1
    with api.app.state.server.sessions() as session:
        stored_bounds = {(row.bound_uniform, row.bound_frequency, row.bound_empirical)
                         for row in session.query(Contribution)}
    assert stored_bounds == {(0.01, 0.04, 0.3), (None, None, None)}
    assert [row["institution"] for row in _listing(api, other, "site-b").json()] == ["site-b"]
    refused = {
        "signed by another key": _listing(api, other, "site-a"),
        "old timestamp": _listing(api, site.key, timestamp=int(time.time()) - 600),
        "unknown institution": _listing(api, site.key, "site-x"),
        "no signature": api.get("/api/contributions", headers={"X-Deidpool-Institution": "site-a"}),
    }
    for name, reply in refused.items():
        assert reply.status_code == 401, name
    wrong_path = signed_headers(site.key, "site-a", "GET", "/api/runs", host="testserver")
    assert api.get("/api/contributions", headers=wrong_path).status_code == 401
    assert json.dumps(mine.json()).find("BEGIN") == -1


@pytest.mark.parametrize("claim, status, words", [
    ("institution", 401, "names another signing key"),
    ("institution and signing key", 400, "re-signed after sealing"),
])
def test_a_contribution_re_signed_by_another_institution_is_refused_and_the_genuine_one_accepted(
        api, site, admin, server_dir, tmp_path, claim, status, words):
    """Attribution theft (issue #19): site-b takes site-a's file before its upload, names itself
    in the header (and its key, or not) and re-signs it, ciphertext and nonce untouched. The
    server refuses it and stores nothing for site-b; site-a's own upload afterwards is accepted
    and listed for site-a."""
    thief = Ed25519PrivateKey.generate()
    public = thief.public_key().public_bytes(serialization.Encoding.PEM,
                                             serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert api.post("/api/institutions", headers=admin, json={"id": "site-b", "public_key": public}).status_code == 201
    genuine = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    changes = {"institution": "site-b"}
    if claim == "institution and signing key":
        changes["signing_key_sha256"] = container.signer_sha256(thief.public_key())
    before = stored(server_dir)
    reply = upload(api, resigned(genuine, thief, **changes), thief, institution="site-b")
    assert reply.status_code == status, reply.text
    assert words in reply.json()["detail"] and reply.json()["detail"].startswith("the upload")
    assert str(status) in api.app.openapi()["paths"]["/api/contributions"]["post"]["responses"]
    assert stored(server_dir) == before and _listing(api, thief, "site-b").json() == []
    reply = upload(api, genuine, site.key)
    assert reply.status_code == 201, reply.text
    assert [row["sha256"] for row in _listing(api, site.key).json()] == [hashlib.sha256(genuine).hexdigest()]
