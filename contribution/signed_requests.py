"""Requests an institution signs with its Ed25519 key (docs/server.md, Signed institution
requests): the signed message and the headers that carry it, shared by the institution that
signs and the server that checks. The message names the institution and the server it is sent
to (the request's Host), so that a signed request counts only for that institution at that
server. Every request carries a fresh random nonce, which the server accepts once (a captured
request cannot be replayed); an upload also signs the SHA-256 of its body, so that the server
checks who sends it before reading it."""

from __future__ import annotations

import base64
import secrets
import time

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

INSTITUTION_HEADER = "X-Deidpool-Institution"
TIMESTAMP_HEADER = "X-Deidpool-Timestamp"
NONCE_HEADER = "X-Deidpool-Nonce"
SIGNATURE_HEADER = "X-Deidpool-Signature"
CONTENT_SHA256_HEADER = "X-Deidpool-Content-SHA256"
CLIENT_VERSION = "0.3.0"  # the first deidpool that signs the institution and the server in every request
NONCE_BYTES = 16  # 128 random bits, 22 URL-safe base64 characters


def request_message(institution: str, host: str, method: str, path: str, timestamp: str, nonce: str,
                    content_sha256: str | None = None) -> bytes:
    """What is signed: `"<institution>\\n<host>\\n<METHOD>\\n<path>\\n<timestamp>\\n<nonce>"`
    (`host` lower-cased), and for an upload `"\\n<content_sha256>"` (the SHA-256 of its body, hex)
    after it."""
    lines = [institution, host.lower(), method.upper(), path, timestamp, nonce]
    return "\n".join(lines + ([content_sha256] if content_sha256 is not None else [])).encode()


def url_host(url: str) -> str:
    """The Host header a request to `url` carries (`host[:port]`, the port only when not the scheme's
    default), which the signature names."""
    return httpx.URL(url).netloc.decode().lower()


def signed_headers(key: Ed25519PrivateKey, institution: str, method: str, path: str, *, host: str,
                   timestamp: int | None = None, nonce: str | None = None,
                   content_sha256: str | None = None) -> dict[str, str]:
    """The headers of a request to `path` at the server `host` (`url_host`) signed by
    `institution`'s `key`, at `timestamp` (Unix seconds, default now) with `nonce` (default a
    fresh random one: sign every request anew, the server accepts each nonce once); an upload
    gives its body's `content_sha256`."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    nonce = secrets.token_urlsafe(NONCE_BYTES) if nonce is None else nonce
    message = request_message(institution, host, method, path, stamp, nonce, content_sha256)
    signature = base64.b64encode(key.sign(message)).decode()
    headers = {INSTITUTION_HEADER: institution, TIMESTAMP_HEADER: stamp, NONCE_HEADER: nonce,
               SIGNATURE_HEADER: signature}
    if content_sha256 is not None:
        headers[CONTENT_SHA256_HEADER] = content_sha256
    return headers
