"""What a stranger (no registered key) learns from the server: nothing that tells registered,
disabled and unknown institutions apart, nor a 500; and what one institution's signature is good
for: that institution at that server alone."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from deidpool.contribution.signed_requests import INSTITUTION_HEADER, TIMESTAMP_HEADER, signed_headers
from deidpool.server.app import create_app
from deidpool.server.auth import UNSIGNED

from .conftest import set_limits

PATH = "/api/contributions"


def _pem(key: Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def _register(client, admin, name: str, key: Ed25519PrivateKey | None = None):
    key = key or Ed25519PrivateKey.generate()
    return key, client.post("/api/institutions", headers=admin, json={"id": name, "public_key": _pem(key)})


def _answer(reply) -> tuple:
    headers = {name: value for name, value in reply.headers.items() if name not in ("date", "x-request-id")}
    return reply.status_code, reply.content, headers


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_strangers_get_one_answer_whoever_they_name(server_dir, admin, method):
    with TestClient(create_app(server_dir.path)) as client:
        _register(client, admin, "site-a")
        _register(client, admin, "site-off")
        assert client.post("/api/institutions/site-off/disable", headers=admin).status_code == 200
        stranger = Ed25519PrivateKey.generate()

        def ask(headers):
            return _answer(client.request(method, PATH, headers={"X-Deidpool-Content-SHA256": "0" * 64, **headers}))

        def signed(name, **options):
            return signed_headers(stranger, name, method, PATH, host="testserver", content_sha256="0" * 64, **options)

        answers = {
            "nothing": ask({}),
            "a registered id, unsigned": ask({INSTITUTION_HEADER: "site-a"}),
            "a disabled id, unsigned": ask({INSTITUTION_HEADER: "site-off"}),
            "an unknown id, unsigned": ask({INSTITUTION_HEADER: "site-x"}),
            "an id past the longest": ask({INSTITUTION_HEADER: "x" * 500}),
            "a registered id, a stranger's key": ask(signed("site-a")),
            "a disabled id, a stranger's key": ask(signed("site-off")),
            "an unknown id, a stranger's key": ask(signed("site-x")),
            "a timestamp past a float": ask({**signed("site-a"), TIMESTAMP_HEADER: "1" + "0" * 400}),
            "a negative timestamp": ask({**signed("site-a"), TIMESTAMP_HEADER: "-1"}),
        }
    first = answers["nothing"]
    assert first[0] == 401 and first[1] == f'{{"detail":"{UNSIGNED}"}}'.encode()
    for name, answer in answers.items():
        assert answer == first, name


def test_a_key_is_registered_for_one_institution(api, admin):
    key, reply = _register(api, admin, "site-a")
    assert reply.status_code == 201
    _, again = _register(api, admin, "site-b", key)
    assert again.status_code == 409 and "already registered for institution site-a" in again.json()["detail"]
    assert [row["id"] for row in api.get("/api/institutions", headers=admin).json()] == ["site-a"]


def test_a_signature_counts_for_the_institution_and_the_server_it_names(api, admin):
    key, _ = _register(api, admin, "site-a")
    _register(api, admin, "site-b")
    as_site_a = signed_headers(key, "site-a", "GET", PATH, host="testserver")
    other_server = signed_headers(key, "site-a", "GET", PATH, host="pool.other-federation.example")
    for headers in ({**as_site_a, INSTITUTION_HEADER: "site-b"}, other_server):
        assert api.get(PATH, headers=headers).status_code == 401
    assert api.get(PATH, headers=as_site_a).status_code == 200


def test_a_stranger_naming_an_institution_spends_the_allowance_of_its_own_address(server_dir, admin):
    set_limits(server_dir, institution_requests_per_minute=1, institution_request_burst=5,
               address_requests_per_minute=1, address_request_burst=2)
    with TestClient(create_app(server_dir.path)) as client:
        key, _ = _register(client, admin, "site-a")
        named = [client.get(PATH, headers={INSTITUTION_HEADER: "site-a"}) for _ in range(3)]
        assert [reply.status_code for reply in named] == [401, 401, 429]
        assert "site-a" not in named[-1].json()["detail"]  # counted as the address's, like any stranger's
        assert client.get(PATH, headers=signed_headers(key, "site-a", "GET", PATH, host="testserver")).status_code \
            == 200
