"""Tests of the protocol pieces institutions and the server share: signed request headers and
the institution id rule."""

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import deidpool
from deidpool.contribution.identity import check_institution_id
from deidpool.contribution.signed_requests import (
    CLIENT_VERSION,
    CONTENT_SHA256_HEADER,
    INSTITUTION_HEADER,
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    request_message,
    signed_headers,
    url_host,
)


def test_signed_headers_verify_over_the_request_message():
    key = Ed25519PrivateKey.generate()
    headers = signed_headers(key, "site-a", "get", "/api/contributions", host="Pool.example.org:8443",
                             timestamp=1700000000, nonce="n" * 22)
    assert headers[INSTITUTION_HEADER] == "site-a" and headers[TIMESTAMP_HEADER] == "1700000000"
    message = request_message("site-a", "pool.example.org:8443", "GET", "/api/contributions", "1700000000", "n" * 22)
    assert message == b"site-a\npool.example.org:8443\nGET\n/api/contributions\n1700000000\n" + b"n" * 22
    key.public_key().verify(base64.b64decode(headers[SIGNATURE_HEADER]), message)


def test_an_upload_signs_the_hash_of_its_body_too():
    key = Ed25519PrivateKey.generate()
    headers = signed_headers(key, "site-a", "POST", "/api/contributions", host="pool", timestamp=1700000000,
                             nonce="n" * 22, content_sha256="ab" * 32)
    assert headers[CONTENT_SHA256_HEADER] == "ab" * 32
    message = request_message("site-a", "pool", "POST", "/api/contributions", "1700000000", "n" * 22, "ab" * 32)
    assert message.endswith(b"\n" + b"n" * 22 + b"\n" + b"ab" * 32)
    key.public_key().verify(base64.b64decode(headers[SIGNATURE_HEADER]), message)


def test_the_client_version_named_to_old_clients_is_this_one_or_older():
    version = tuple(map(int, deidpool.__version__.split(".")))
    assert tuple(map(int, CLIENT_VERSION.split("."))) <= version


def test_every_request_gets_a_fresh_nonce():
    key = Ed25519PrivateKey.generate()
    first, second = (signed_headers(key, "site-a", "GET", "/api/contributions", host="pool")[NONCE_HEADER]
                     for _ in range(2))
    assert first != second and len(first) == 22


@pytest.mark.parametrize(("url", "host"), [("https://u:p@Pool.example.org:443/api", "pool.example.org"),
                                           ("http://127.0.0.1:8000/api", "127.0.0.1:8000"),
                                           ("http://[::1]:80", "[::1]")])
def test_the_signed_host_is_the_one_the_request_carries(url, host):
    assert url_host(url) == host


@pytest.mark.parametrize("institution", ["a", "Site-1.b_c", "x" * 64])
def test_institution_ids_within_the_rule_pass(institution):
    check_institution_id(institution)


@pytest.mark.parametrize("institution", ["", ".a", "-a", "x" * 65, "../etc", "a b", "a\n", "é"])
def test_institution_ids_outside_the_rule_are_refused(institution):
    with pytest.raises(ValueError, match="institution id"):
        check_institution_id(institution)
