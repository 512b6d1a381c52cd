"""Tests of the upload: the request the server receives, retries with backoff, and refusals."""

import base64
import hashlib

import httpx
import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deidpool.client.transport import UploadError, upload_contribution
from deidpool.contribution.container import CONTENT_TYPE, write_contribution
from deidpool.contribution.records import encode_sentence
from deidpool.contribution.signed_requests import NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, request_message

KEY = Ed25519PrivateKey.generate()  # site-b's


@pytest.fixture(scope="module")
def contribution_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("upload") / "a.dpc"
    vectors = np.ones((3, 4)) / 2
    write_contribution(path, [encode_sentence(vectors, [0, 1, 0], [2, 2, 2])] * 5, institution="site-b",
                       representer_id="rep-1", dim=4, neighbours=100, pseudonymization="groups", signing_key=KEY,
                       server_key=X25519PrivateKey.generate().public_key())
    return path


def _upload(path, answers, **options):
    """Upload against a mock server answering the uploads with `answers` in turn and the listings
    with the file listed; returns (reply, uploads, sleeps)."""
    requests, sleeps = [], []
    listed = [{"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}]

    def handle(request):
        if request.method == "GET":
            return httpx.Response(200, json=listed)
        requests.append((request, request.read()))
        answer = answers[min(len(requests), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    reply = upload_contribution(path, "https://server.test/", signing_key=KEY, transport=httpx.MockTransport(handle),
                                sleep=sleeps.append, **{"backoff": 0.5, **options})
    return reply, requests, sleeps


def test_the_upload_request_is_signed_over_the_hash_of_the_file_it_carries(contribution_file):
    reply, requests, sleeps = _upload(contribution_file, [httpx.Response(201, json={"id": "c1"})])
    (request, body), = requests
    assert reply == {"id": "c1"} and sleeps == []
    assert request.method == "POST" and str(request.url) == "https://server.test/api/contributions"
    assert body == contribution_file.read_bytes()
    assert request.headers["content-type"] == CONTENT_TYPE
    assert request.headers["x-deidpool-institution"] == "site-b"
    digest = hashlib.sha256(body).hexdigest()
    assert request.headers["x-deidpool-content-sha256"] == digest
    message = request_message("site-b", "server.test", "POST", "/api/contributions", request.headers[TIMESTAMP_HEADER],
                              request.headers[NONCE_HEADER], digest)
    KEY.public_key().verify(base64.b64decode(request.headers[SIGNATURE_HEADER]), message)


def test_every_attempt_is_signed_anew(contribution_file):
    _, requests, _ = _upload(contribution_file, [httpx.Response(503), httpx.Response(201)])
    assert len({request.headers[NONCE_HEADER] for request, _ in requests}) == 2


def test_busy_server_and_network_errors_are_retried_with_growing_waits(contribution_file):
    answers = [httpx.Response(503), httpx.ConnectError("refused"), httpx.Response(429), httpx.Response(200)]
    reply, requests, sleeps = _upload(contribution_file, answers)
    assert len(requests) == 4 and sleeps == [0.5, 1.0, 2.0] and reply == {}
    assert len({body for _, body in requests}) == 1


def test_a_full_server_is_tried_again_later(contribution_file):
    answers = [httpx.Response(507, json={"detail": "the server's storage is full"}), httpx.Response(201)]
    reply, requests, sleeps = _upload(contribution_file, answers)
    assert len(requests) == 2 and sleeps == [0.5]


def test_too_many_requests_is_retried_after_the_wait_the_server_asks_for(contribution_file):
    answers = [httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(503, headers={"Retry-After": "soon"}),
               httpx.Response(429, headers={"Retry-After": "86400"}), httpx.Response(201)]
    reply, requests, sleeps = _upload(contribution_file, answers)
    assert len(requests) == 4 and sleeps == [7, 1.0, 600]  # never shorter than the backoff, at most 10 minutes


def test_an_already_stored_contribution_counts_as_uploaded(contribution_file):
    reply, requests, _ = _upload(contribution_file, [httpx.Response(409, json={"id": "c1", "duplicate": True})])
    assert reply["duplicate"] and len(requests) == 1


def test_a_refusal_is_not_retried(contribution_file):
    with pytest.raises(UploadError, match="answered 403: unknown institution"):
        _upload(contribution_file, [httpx.Response(403, text="unknown institution")])


def test_giving_up_after_the_last_retry(contribution_file):
    with pytest.raises(UploadError, match=r"cannot reach .* \(after 3 attempts\)"):
        _upload(contribution_file, [httpx.ConnectError("refused")], retries=2)


def test_reply_that_is_not_json(contribution_file):
    assert _upload(contribution_file, [httpx.Response(201, text="stored")])[0] == {}


def test_an_accepted_upload_counts_only_once_the_server_lists_it(contribution_file):
    key = Ed25519PrivateKey.generate()
    digest = hashlib.sha256(contribution_file.read_bytes()).hexdigest()
    listed = [[], [{"sha256": digest}]]  # the first "already stored" was not (a server that lost the row)
    answers = {"POST": [httpx.Response(409, json={"detail": "already stored"}), httpx.Response(201, json={"id": "c1"})]}
    answers["GET"] = [httpx.Response(200, json=rows) for rows in listed]
    requests, sleeps = [], []

    def handle(request):
        requests.append(request)
        return answers[request.method].pop(0)

    reply = upload_contribution(contribution_file, "https://server.test/", signing_key=key, backoff=0.5,
                                transport=httpx.MockTransport(handle), sleep=sleeps.append)
    assert reply == {"id": "c1"} and sleeps == [0.5]
    assert [request.method for request in requests] == ["POST", "GET", "POST", "GET"]
    listing = requests[1]
    assert listing.url.path == "/api/contributions" and listing.headers["x-deidpool-institution"] == "site-b"
    assert "x-deidpool-signature" in listing.headers


def test_an_upload_never_listed_fails(contribution_file):
    def handle(request):
        return httpx.Response(409) if request.method == "POST" else httpx.Response(200, json=[])

    with pytest.raises(UploadError, match=r"answered 409 but does not list .* \(after 2 attempts\)"):
        upload_contribution(contribution_file, "https://server.test/", signing_key=Ed25519PrivateKey.generate(),
                            retries=1, transport=httpx.MockTransport(handle), sleep=lambda seconds: None)


@pytest.mark.parametrize("listing, outcome", [(507, "uploaded on the second attempt"), (403, "refused at once")])
def test_a_listing_refused_for_a_while_is_retried_and_one_refused_for_good_fails(contribution_file, listing,
                                                                                  outcome):
    digest = hashlib.sha256(contribution_file.read_bytes()).hexdigest()
    listings = [httpx.Response(listing, json={"detail": "no"}), httpx.Response(200, json=[{"sha256": digest}])]
    sleeps = []

    def handle(request):
        return httpx.Response(201, json={"id": "c1"}) if request.method == "POST" else listings.pop(0)

    def upload():
        return upload_contribution(contribution_file, "https://server.test/", signing_key=KEY,
                                   transport=httpx.MockTransport(handle), sleep=sleeps.append, backoff=0.5)

    if outcome == "refused at once":
        with pytest.raises(UploadError, match=r"GET https://server.test/api/contributions answered 403"):
            upload()
        assert sleeps == []
    else:
        assert upload() == {"id": "c1"} and sleeps == [0.5]


def test_an_upload_over_plain_http_beyond_this_machine_is_refused_before_any_request(contribution_file):
    requests = []

    def handle(request):
        requests.append(request)
        return httpx.Response(201, json={})

    with pytest.raises(UploadError, match=r"http://server.test/: plain http:// .* --allow-insecure-http"):
        upload_contribution(contribution_file, "http://server.test/", signing_key=KEY,
                            transport=httpx.MockTransport(handle))
    assert requests == []
    with pytest.raises(UploadError, match="is not a server URL"):
        upload_contribution(contribution_file, "server.test", signing_key=KEY, transport=httpx.MockTransport(handle))
    assert requests == []
