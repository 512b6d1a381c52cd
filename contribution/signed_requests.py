"""Requests an institution signs with its Ed25519 key (docs/server.md, Signed institution
requests): the signed message and the headers that carry it, shared by the institution that
signs and the server that checks. Every request carries a fresh random nonce, which the
server accepts once (a captured request cannot be replayed)."""

from __future__ import annotations

import base64
import secrets
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

INSTITUTION_HEADER = "X-Deidpool-Institution"
TIMESTAMP_HEADER = "X-Deidpool-Timestamp"
NONCE_HEADER = "X-Deidpool-Nonce"
SIGNATURE_HEADER = "X-Deidpool-Signature"
NONCE_BYTES = 16  # 128 random bits, 22 URL-safe base64 characters


def request_message(method: str, path: str, timestamp: str, nonce: str) -> bytes:
    """What is signed: `"<METHOD>\\n<path>\\n<timestamp>\\n<nonce>"`."""
    return f"{method.upper()}\n{path}\n{timestamp}\n{nonce}".encode()


def signed_headers(key: Ed25519PrivateKey, institution: str, method: str, path: str,
                   timestamp: int | None = None, nonce: str | None = None) -> dict[str, str]:
    """The headers of a request to `path` signed by `institution`'s `key`, at `timestamp`
    (Unix seconds, default now) with `nonce` (default a fresh random one: sign every request
    anew, the server accepts each nonce once)."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    nonce = secrets.token_urlsafe(NONCE_BYTES) if nonce is None else nonce
    signature = base64.b64encode(key.sign(request_message(method, path, stamp, nonce))).decode()
    return {INSTITUTION_HEADER: institution, TIMESTAMP_HEADER: stamp, NONCE_HEADER: nonce,
            SIGNATURE_HEADER: signature}
