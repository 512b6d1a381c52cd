"""Requests an institution signs with its Ed25519 key (docs/server.md, Signed institution
requests): the signed message and the headers that carry it, shared by the institution that
signs and the server that checks. Every request carries a fresh random nonce, which the
server accepts once (a captured request cannot be replayed); an upload also signs the SHA-256
of its body, so that the server checks who sends it before reading it."""

from __future__ import annotations

import base64
import secrets
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

INSTITUTION_HEADER = "X-Deidpool-Institution"
TIMESTAMP_HEADER = "X-Deidpool-Timestamp"
NONCE_HEADER = "X-Deidpool-Nonce"
SIGNATURE_HEADER = "X-Deidpool-Signature"
CONTENT_SHA256_HEADER = "X-Deidpool-Content-SHA256"
CLIENT_VERSION = "0.2.0"  # the first deidpool that signs every request the server needs signed (uploads too)
NONCE_BYTES = 16  # 128 random bits, 22 URL-safe base64 characters


def request_message(method: str, path: str, timestamp: str, nonce: str, content_sha256: str | None = None) -> bytes:
    """What is signed: `"<METHOD>\\n<path>\\n<timestamp>\\n<nonce>"`, and for an upload
    `"\\n<content_sha256>"` (the SHA-256 of its body, hex) after it."""
    lines = [method.upper(), path, timestamp, nonce] + ([content_sha256] if content_sha256 is not None else [])
    return "\n".join(lines).encode()


def signed_headers(key: Ed25519PrivateKey, institution: str, method: str, path: str,
                   timestamp: int | None = None, nonce: str | None = None,
                   content_sha256: str | None = None) -> dict[str, str]:
    """The headers of a request to `path` signed by `institution`'s `key`, at `timestamp`
    (Unix seconds, default now) with `nonce` (default a fresh random one: sign every request
    anew, the server accepts each nonce once); an upload gives its body's `content_sha256`."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    nonce = secrets.token_urlsafe(NONCE_BYTES) if nonce is None else nonce
    signature = base64.b64encode(key.sign(request_message(method, path, stamp, nonce, content_sha256))).decode()
    headers = {INSTITUTION_HEADER: institution, TIMESTAMP_HEADER: stamp, NONCE_HEADER: nonce,
               SIGNATURE_HEADER: signature}
    if content_sha256 is not None:
        headers[CONTENT_SHA256_HEADER] = content_sha256
    return headers
