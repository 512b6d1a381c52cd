"""The API around uploads: health and keys, admin authentication, institutions, representer
bundles, JSON errors for bad input, the Content-Types of binary bodies, and no secret in
responses, logs or stored files."""

import asyncio
import hashlib
import io
import logging
import re
import tarfile

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from fastapi.routing import iter_route_contexts

from deidpool.contribution.container import CONTENT_TYPE
from deidpool.contribution.signed_requests import signed_headers
from deidpool.representer import keys
from deidpool.server.deps import BUNDLE_TYPE, MAX_JSON_BYTES

from .conftest import contribution_file, stored

# declared on admin routers (test_every_admin_route_needs_the_admin_token_... finds any other)
ADMIN_ROUTES = {("GET", "/api/institutions"), ("POST", "/api/institutions"),
                ("POST", "/api/institutions/{institution}/disable"), ("POST", "/api/institutions/{institution}/enable"),
                ("POST", "/api/representers"), ("POST", "/api/runs"), ("GET", "/api/runs"),
                ("GET", "/api/runs/{run_id}"), ("POST", "/api/runs/{run_id}/publish"), ("POST", "/api/audits")}


def _pem(public_key) -> str:
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def test_health_keys_and_openapi_are_public(api, server_dir, key_files):
    assert api.get("/api/health").json() == {"status": "ok"}
    reply = api.get("/api/keys").json()
    signing = keys.load_public_key(server_dir.layout.signing_public_key, keys.SIGNING)
    assert reply["signing_public_key"] == server_dir.layout.signing_public_key.read_text()
    assert reply["encryption_public_key"] == server_dir.layout.encryption_public_key.read_text()
    assert reply["fingerprints"]["signing"] == keys.fingerprint(signing)
    assert reply["fingerprints"]["provider"] == key_files.provider.fingerprint
    assert "PRIVATE" not in str(reply)
    paths = api.get("/openapi.json").json()["paths"]
    assert {"/api/contributions", "/api/runs/{run_id}/publish", "/api/pipelines/latest/bundle"} <= set(paths)
    assert "/" not in paths


def _admin_routes(app) -> set[tuple[str, str]]:
    """(method, path template) of every route of `app` declared on an admin router (tagged "admin")."""
    return {(method, context.path) for context in iter_route_contexts(app.routes)
            if "admin" in (getattr(context, "tags", None) or []) for method in context.methods}


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", "Basic abc", "Bearer "])
def test_every_admin_route_needs_the_admin_token_before_reading_a_body(api, authorization):
    routes = _admin_routes(api.app)
    assert routes >= ADMIN_ROUTES
    headers = {"Authorization": authorization} if authorization else {}
    for method, template in sorted(routes):
        path = re.sub(r"\{[^}]+\}", "1", template)
        reply = api.request(method, path, headers=headers, json={})
        assert reply.status_code == 401 and "admin token" in reply.json()["detail"], (method, template)
        if method == "POST":
            assert _post_streamed(api.app, path, {**headers, "Content-Type": "application/json"}, declare=False) \
                == (401, 0), template


def test_registering_institutions(api, admin, key_files):
    public = key_files.institution.public.read_text()
    reply = api.post("/api/institutions", headers=admin, json={"id": "site-a", "public_key": public})
    assert reply.status_code == 201
    assert reply.json()["fingerprint"] == key_files.institution.fingerprint and reply.json()["enabled"] is True
    again = api.post("/api/institutions", headers=admin, json={"id": "site-a", "public_key": public})
    assert again.status_code == 409 and "already registered" in again.json()["detail"]
    assert [row["id"] for row in api.get("/api/institutions", headers=admin).json()] == ["site-a"]
    assert api.post("/api/institutions/site-z/disable", headers=admin).status_code == 404


@pytest.mark.parametrize("body, words", [
    ({"id": "../etc", "public_key": "x"}, "institution id"),
    ({"id": "site-b", "public_key": "not a key"}, "public_key is not a PEM"),
    ({"id": "site-b", "public_key": _pem(X25519PrivateKey.generate().public_key())}, "not an Ed25519"),
    ({"id": "site-b", "public_key": _pem(Ed25519PrivateKey.generate().public_key()) + "and more"}, "PEM alone"),
    ({"id": "site-b", "public_key": "a comment\n" + _pem(Ed25519PrivateKey.generate().public_key())}, "PEM alone"),
    ({"id": "site-b"}, "body.public_key: Field required"),
    ({"id": 7, "public_key": "x"}, "body.id"),
    ({"id": "site-b", "public_key": "x", "extra": 1}, "body.extra"),
    ([1, 2], "body"),
])
def test_bad_institution_bodies_give_422_naming_the_field(api, admin, body, words, server_dir):
    before = stored(server_dir)
    reply = api.post("/api/institutions", headers=admin, json=body)
    assert reply.status_code == 422 and words in reply.json()["detail"]
    assert stored(server_dir) == before


@pytest.mark.parametrize("layout, accepted", [("as written", True), ("CRLF", True), ("no final newline", True),
                                              ("text after", False), ("two newlines", False), ("wrapped at 32", False)])
def test_the_route_accepts_exactly_the_public_keys_the_schema_pattern_does(api, admin, layout, accepted):
    """POST /api/institutions and its OpenAPI pattern agree on every layout of a key's PEM."""
    pem = _pem(Ed25519PrivateKey.generate().public_key())
    begin, body, end, _ = pem.split("\n")
    pem = {"as written": pem, "CRLF": pem.replace("\n", "\r\n"), "no final newline": pem.rstrip("\n"),
           "text after": pem + "site-a's key\n", "two newlines": pem + "\n",
           "wrapped at 32": "\n".join([begin, body[:32], body[32:], end, ""])}[layout]
    schema = api.app.openapi()["components"]["schemas"]["InstitutionIn"]["properties"]["public_key"]
    assert bool(re.fullmatch(schema["pattern"], pem)) is accepted  # anchored: ECMA's search is a full match
    reply = api.post("/api/institutions", headers=admin, json={"id": "site-b", "public_key": pem})
    assert reply.status_code == (201 if accepted else 422), reply.text


@pytest.mark.parametrize("path, body", [
    ("/api/institutions", b"{not json"), ("/api/runs", b"[]"), ("/api/runs", b'{"max_epochs": "3"}'),
    ("/api/runs", b'{"max_epochs": 3.5}'), ("/api/runs", b'{"monitor": "loss"}'),
    ("/api/runs", b'{"valid_fraction": 1.5}'), ("/api/runs", b'{"seed": -1}'), ("/api/runs", b'{"lstm_units": 0}'),
    ("/api/audits", b'{"report": 1}'),
    ("/api/runs/1/publish", b'{"override_audit": "yes"}'),
])
def test_malformed_json_and_wrong_types_give_422(api, admin, path, body):
    reply = api.post(path, headers={**admin, "Content-Type": "application/json"}, content=body)
    assert reply.status_code == 422 and isinstance(reply.json()["detail"], str)


@pytest.mark.parametrize("path", ["/api/runs/0", "/api/runs/abc", "/api/runs/99999999999999"])
def test_bad_run_ids_give_422(api, admin, path):
    assert api.get(path, headers=admin).status_code == 422


def test_representer_bundle_is_verified_stored_and_made_current(api, admin, pipeline_path, server_dir, tmp_path):
    assert api.get("/api/representers/current").status_code == 404
    before = stored(server_dir)
    tampered = tmp_path / "tampered.tar"
    with tarfile.open(pipeline_path) as source, tarfile.open(tampered, "w") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read()
            if member.name == "tagger.keras":
                data = data[:-1] + bytes([data[-1] ^ 1])
            member.size = len(data)
            target.addfile(member, io.BytesIO(data))
    reply = api.post("/api/representers", headers=admin, content=tampered.read_bytes())
    assert reply.status_code == 400 and "altered" in reply.json()["detail"] and str(tmp_path) not in reply.text
    assert api.post("/api/representers", headers=admin, content=b"junk").status_code == 400
    assert stored(server_dir) == before
    created = api.post("/api/representers", headers=admin, content=pipeline_path.read_bytes())
    assert created.status_code == 201
    representer = created.json()["representer_id"]
    assert representer.startswith("rep-") and created.json()["current"] is True
    assert api.post("/api/representers", headers=admin, content=pipeline_path.read_bytes()).status_code == 200
    assert stored(server_dir)[0]["representers"] == 1
    assert api.get("/api/representers/current").json()["manifest"]["representer_id"] == representer
    bundle = api.get("/api/representers/current/bundle")
    assert bundle.status_code == 200 and bundle.content == pipeline_path.read_bytes()


def test_representer_signed_by_another_key_is_refused(api, admin, tmp_path):
    from deidpool.representer.bundle import REPRESENTER_FILE, write_bundle

    write_bundle(tmp_path / "other.tar", Ed25519PrivateKey.generate(), {REPRESENTER_FILE: b"model"}, {})
    reply = api.post("/api/representers", headers=admin, content=(tmp_path / "other.tar").read_bytes())
    assert reply.status_code == 400 and "provider key" in reply.json()["detail"]


def test_no_secret_in_responses_logs_or_stored_files(api, admin, server_dir, site, caplog):
    caplog.set_level(logging.DEBUG)
    token = server_dir.token
    replies = [api.get("/api/institutions", headers=admin), api.get("/api/institutions",
                                                                    headers={"Authorization": f"Bearer {token}x"}),
               api.get("/api/keys"), api.get("/api/runs", headers=admin), api.post("/api/runs", headers=admin, json={}),
               api.get("/openapi.json")]
    for reply in replies:
        assert token not in reply.text and "PRIVATE KEY" not in reply.text
    assert token not in caplog.text
    for path in server_dir.path.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


BIG = 16 << 20
CHUNK = 64 << 10


def _post_streamed(app, path: str, headers: dict, declare: bool) -> tuple[int, int]:
    """POST a BIG-byte body to `app` over ASGI in CHUNK-byte pieces, with a Content-Length when
    `declare` (else chunked); returns the status and how many bytes the app read."""
    read = 0

    async def body():
        nonlocal read
        while read < BIG:
            read += CHUNK
            yield b" " * CHUNK

    async def post():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver") as client:
            length = {"Content-Length": str(BIG)} if declare else {}
            return await client.post(path, content=body(), headers={**headers, **length})

    return asyncio.run(post()).status_code, read


JSON_ADMIN_ROUTES = ["/api/institutions", "/api/runs", "/api/runs/1/publish", "/api/audits"]


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "chunked"])
@pytest.mark.parametrize("path", JSON_ADMIN_ROUTES)
def test_big_bodies_are_refused_unread_without_the_token_and_413_with_it(api, admin, path, declare):
    json_type = {"Content-Type": "application/json"}
    assert _post_streamed(api.app, path, json_type, declare) == (401, 0)
    assert _post_streamed(api.app, path, {**json_type, "Authorization": "Bearer wrong"}, declare) == (401, 0)
    status, read = _post_streamed(api.app, path, {**json_type, **admin}, declare)
    assert status == 413 and read <= (0 if declare else MAX_JSON_BYTES + CHUNK)


def _signed_upload(key, institution: str = "site-a") -> dict:
    return signed_headers(key, institution, "POST", "/api/contributions", content_sha256="0" * 64, host="testserver")


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "chunked"])
def test_binary_uploads_are_refused_unread_without_credentials(api, site, declare):
    """Without the admin token, or a request signed by a registered institution (naming it is not enough)."""
    binary = {"Content-Type": "application/octet-stream"}
    assert _post_streamed(api.app, "/api/representers", binary, declare) == (401, 0)
    unsigned = {"X-Deidpool-Institution": "site-a", "X-Deidpool-Content-SHA256": "0" * 64}
    stranger = Ed25519PrivateKey.generate()
    another_body = {**_signed_upload(site.key), "X-Deidpool-Content-SHA256": "1" * 64}
    for credentials in ({}, {"X-Deidpool-Institution": "site-x"}, unsigned, _signed_upload(stranger),
                        _signed_upload(stranger, "site-x"), another_body):
        assert _post_streamed(api.app, "/api/contributions", {**binary, **credentials}, declare) == (401, 0)


UPLOADS = {"/api/representers": BUNDLE_TYPE, "/api/contributions": CONTENT_TYPE}


@pytest.mark.parametrize("declare", [True, False], ids=["declared", "chunked"])
@pytest.mark.parametrize("content_type", ["text/plain", "application/json", "multipart/form-data; boundary=x", "",
                                          "application/octet-streamx", "of the other upload"])
def test_uploads_of_another_content_type_get_415_unread_and_store_nothing(api, admin, site, server_dir,
                                                                          content_type, declare):
    before = stored(server_dir)
    for path, media_type in UPLOADS.items():
        credentials = admin if path == "/api/representers" else _signed_upload(site.key)
        (other,) = set(UPLOADS.values()) - {media_type}
        headers = {**credentials, "Content-Type": other if content_type == "of the other upload" else content_type}
        assert _post_streamed(api.app, path, headers, declare) == (415, 0)
        headers |= {} if path == "/api/representers" else _signed_upload(site.key)  # a fresh nonce
        detail = api.post(path, headers=headers, content=b"x").json()["detail"]
        assert f"send {media_type} or application/octet-stream" in detail
    assert stored(server_dir) == before


@pytest.mark.parametrize("contribution_type, bundle_type", [
    (CONTENT_TYPE, BUNDLE_TYPE), ("application/octet-stream",) * 2, ("Application/Octet-Stream; charset=binary",) * 2,
    (None, None),
])
def test_uploads_take_their_media_type_or_octet_stream_with_any_parameters_or_none(api, admin, site, pipeline_path,
                                                                                   tmp_path, contribution_type,
                                                                                   bundle_type):
    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    headers = signed_headers(site.key, "site-a", "POST", "/api/contributions",
                             content_sha256=hashlib.sha256(body).hexdigest(), host="testserver")
    if contribution_type:
        headers["Content-Type"], admin = contribution_type, {**admin, "Content-Type": bundle_type}
    assert api.post("/api/contributions", headers=headers, content=body).status_code == 201
    reply = api.post("/api/representers", headers=admin, content=pipeline_path.read_bytes())
    assert reply.status_code == 200  # made current again: `site` registered it
