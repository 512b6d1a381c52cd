"""Request rate limits: token buckets, and the server answering 429 with Retry-After to an
institution (or an address) over its limit while another institution, and the admin, go on."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from deidpool.contribution.signed_requests import signed_headers
from deidpool.server.app import create_app
from deidpool.server.limits import TokenBuckets

from .conftest import set_limits, upload

PATH = "/api/contributions"


def test_a_bucket_holds_a_burst_and_refills_at_its_rate():
    now = [0.0]
    buckets = TokenBuckets(per_minute=60, burst=3, clock=lambda: now[0])
    assert [buckets.take("a") for _ in range(4)] == [0, 0, 0, 1.0]
    assert buckets.take("b") == 0  # another key has its own bucket
    now[0] = 0.5
    assert buckets.take("a") == pytest.approx(0.5)
    now[0] = 1.0
    assert buckets.take("a") == 0 and buckets.take("a") == pytest.approx(1.0)
    now[0] = 100.0  # every bucket full again: forgotten
    assert buckets.take("c") == 0 and set(buckets._buckets) == {"c"}
    with pytest.raises(ValueError, match="positive"):
        TokenBuckets(per_minute=0, burst=3)


def _register(client, admin, name: str) -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert client.post("/api/institutions", headers=admin, json={"id": name, "public_key": public}).status_code == 201
    return key


def _listing(client, key, name):
    return client.get(PATH, headers=signed_headers(key, name, "GET", PATH, host="testserver"))


def test_an_institution_over_its_limit_gets_429_with_retry_after_and_others_go_on(server_dir, admin):
    set_limits(server_dir, institution_requests_per_minute=1, institution_request_burst=3,
               address_requests_per_minute=1, address_request_burst=2)
    with TestClient(create_app(server_dir.path)) as client:
        site_a, site_b = _register(client, admin, "site-a"), _register(client, admin, "site-b")
        assert [_listing(client, site_a, "site-a").status_code for _ in range(3)] == [200] * 3
        over = _listing(client, site_a, "site-a")
        assert over.status_code == 429 and 50 <= int(over.headers["retry-after"]) <= 60
        assert "site-a" in over.json()["detail"] and "retry in" in over.json()["detail"]
        assert upload(client, b"x" * 100, site_a).status_code == 429  # uploads share the bucket
        assert _listing(client, site_b, "site-b").status_code == 200  # another institution is unaffected
        assert [client.get("/api/health").status_code for _ in range(3)] == [200, 200, 429]  # unauthenticated
        assert _listing(client, site_b, "site-b").status_code == 200  # institution requests are not the address's
        assert client.get(PATH, headers={"X-Deidpool-Institution": "site-x"}).status_code == 429  # not registered
        assert client.get("/api/institutions", headers={"Authorization": "Bearer wrong"}).status_code == 429
        assert all(client.get("/api/institutions", headers=admin).status_code == 200 for _ in range(5))  # not limited
        assert client.get("/api/health", headers=admin).status_code == 200

