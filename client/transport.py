"""Upload of a contribution file to the pooling server, retried with exponential backoff.

The request is `POST {server}/api/contributions` with the `.dpc` bytes as the body
(`application/vnd.deidpool.contribution`, streamed from disk with a Content-Length), signed with
the institution's key (`deidpool.contribution.signed_requests`: its id, a timestamp, a fresh nonce and
the file's SHA-256 in `X-Deidpool-Content-SHA256`), so that the server refuses anyone else
before reading the body. The server deduplicates by that hash, so repeating an upload is safe;
200, 201 and 409 (already stored) count as success once the server lists the contribution among
the institution's own (a signed `GET /api/contributions`); until then the upload is repeated,
signed anew. A refusal for too many requests (429) is repeated after the wait the server asks
for in Retry-After, when longer than the backoff; a full server (507 Insufficient Storage:
nothing was stored, a temporary condition) is tried again later too.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deidpool.client.server_url import ServerURLError, checked_server_url
from deidpool.contribution.container import CHUNK_BYTES, CONTENT_TYPE, read_header
from deidpool.contribution.signed_requests import signed_headers, url_host

ENDPOINT = "/api/contributions"
RETRY_STATUSES = {408, 425, 429, 500, 502, 503, 504, 507}
MAX_RETRY_AFTER_SECONDS = 600


class UploadError(RuntimeError):
    """The server refused the contribution, or could not be reached after every retry."""


def upload_contribution(path: str | Path, server: str, *, signing_key: Ed25519PrivateKey, retries: int = 5,
                        backoff: float = 1.0, timeout: float = 60.0, transport: httpx.BaseTransport | None = None,
                        sleep: Callable[[float], None] = time.sleep, allow_insecure_http: bool = False) -> dict:
    """Send the contribution at `path` to `server`, signed with the institution's `signing_key`;
    returns the server's JSON reply (or {}) once the server lists the contribution. `server` must
    be https:// unless it is this machine or `allow_insecure_http` (`deidpool.client.server_url`).

    Network errors, the statuses in RETRY_STATUSES and an accepted upload not listed are retried
    up to `retries` times, waiting `backoff`, 2 x `backoff`, 4 x `backoff`, ... seconds (or the
    server's Retry-After, when longer); other refusals fail at once.
    """
    try:
        checked_server_url(server, allow_insecure_http)
    except ServerURLError as error:
        raise UploadError(str(error)) from None
    path = Path(path)
    institution = read_header(path).institution
    digest = hashlib.sha256()
    for block in _blocks(path):
        digest.update(block)
    sha256 = digest.hexdigest()
    url = server.rstrip("/") + ENDPOINT
    signed_path, host = httpx.URL(url).path, url_host(url)
    with httpx.Client(timeout=timeout, transport=transport) as client:
        for attempt in range(retries + 1):
            wait = backoff * 2 ** attempt
            try:
                headers = {"Content-Type": CONTENT_TYPE, "Content-Length": str(path.stat().st_size),
                           **signed_headers(signing_key, institution, "POST", signed_path, host=host,
                                             content_sha256=sha256)}
                response = client.post(url, content=_blocks(path), headers=headers)
                problem = _problem(response)
                if response.status_code in (200, 201, 409):
                    reply = response
                    response = client.get(url, headers=signed_headers(signing_key, institution, "GET", signed_path,
                                                                            host=host))
                    if response.is_success and any(row.get("sha256") == sha256 for row in response.json()):
                        return _json(reply)
                    problem = _problem(response) if not response.is_success else (
                        f"{url} answered {reply.status_code} but does not list contribution {sha256} among those "
                        f"of {institution}")
                if not response.is_success:
                    if response.status_code not in RETRY_STATUSES:
                        raise UploadError(problem)
                    wait = max(wait, _retry_after(response))
            except httpx.TransportError as error:
                problem = f"cannot reach {url}: {error}"
            if attempt < retries:
                sleep(wait)
    raise UploadError(f"{problem} (after {retries + 1} attempts)")


def _problem(response: httpx.Response) -> str:
    request = response.request
    return f"{request.method} {request.url} answered {response.status_code}: {response.text.strip()[:500]}"


def _retry_after(response: httpx.Response) -> float:
    """The seconds of the reply's Retry-After (at most MAX_RETRY_AFTER_SECONDS; 0 without one)."""
    value = response.headers.get("retry-after", "").strip()
    return min(int(value), MAX_RETRY_AFTER_SECONDS) if value.isdigit() else 0


def _blocks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as file:
        while block := file.read(CHUNK_BYTES):
            yield block


def _json(response: httpx.Response) -> dict:
    try:
        return response.json()
    except ValueError:
        return {}
