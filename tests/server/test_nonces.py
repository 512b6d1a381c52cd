"""Replay memory of signed institution requests: a signed request is accepted once (also by
another process of the same server), a request without a nonce is refused naming the header,
and the remembered nonces are pruned once their requests are stale."""

import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from deidpool.contribution.signed_requests import NONCE_HEADER, signed_headers
from deidpool.server.app import create_app
from deidpool.server.auth import UNSIGNED, AuthError
from deidpool.server.database import RequestNonce
from deidpool.server.nonces import use_nonce

PATH = "/api/contributions"


def test_a_replayed_signed_request_is_refused_also_by_another_server_process(api, site, server_dir):
    headers = signed_headers(site.key, "site-a", "GET", PATH, host="testserver")
    assert api.get(PATH, headers=headers).status_code == 200
    replay = api.get(PATH, headers=headers)
    assert replay.status_code == 401 and "already received" in replay.json()["detail"]
    with TestClient(create_app(server_dir.path)) as other_process:  # the memory is the database, not the process
        assert other_process.get(PATH, headers=headers).status_code == 401
        fresh = signed_headers(site.key, "site-a", "GET", PATH, host="testserver")
        assert other_process.get(PATH, headers=fresh).status_code == 200


def test_a_request_without_a_nonce_is_refused_naming_the_header(api, site):
    headers = signed_headers(site.key, "site-a", "GET", PATH, host="testserver")
    del headers[NONCE_HEADER]
    reply = api.get(PATH, headers=headers)
    assert reply.status_code == 401 and reply.json()["detail"] == UNSIGNED and NONCE_HEADER in UNSIGNED
    for nonce in ("short", "x" * 65, "not/url;safe_but_long_enough"):
        reply = api.get(PATH, headers=signed_headers(site.key, "site-a", "GET", PATH, nonce=nonce, host="testserver"))
        assert reply.status_code == 401 and reply.json()["detail"] == UNSIGNED, nonce


def test_the_nonce_is_signed(api, site):
    headers = signed_headers(site.key, "site-a", "GET", PATH, host="testserver")
    reply = api.get(PATH, headers={**headers, NONCE_HEADER: "another-nonce-of-22-ch"})
    assert reply.status_code == 401 and reply.json()["detail"] == UNSIGNED


def test_nonces_are_remembered_until_their_requests_are_stale_then_pruned(api, site):
    sessions = api.app.state.server.sessions
    now = time.time()
    use_nonce(sessions, "site-a", "n" * 22, now - 1)  # its request is stale already
    use_nonce(sessions, "site-a", "m" * 22, now + 300)
    with pytest.raises(AuthError, match="already received"):
        use_nonce(sessions, "site-a", "m" * 22, now + 300)
    with sessions() as session:
        assert session.scalars(select(RequestNonce.nonce)).all() == ["m" * 22]  # the stale one was pruned
