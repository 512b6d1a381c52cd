"""Requests an institution signs with its Ed25519 key (docs/server.md, Signed institution
requests): the signed message and the headers that carry it, shared by the client that
signs and the server that checks."""

from __future__ import annotations

import base64
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

INSTITUTION_HEADER = "X-Deidpool-Institution"
TIMESTAMP_HEADER = "X-Deidpool-Timestamp"
SIGNATURE_HEADER = "X-Deidpool-Signature"


def request_message(method: str, path: str, timestamp: str) -> bytes:
    """What is signed: `"<METHOD>\\n<path>\\n<timestamp>"`."""
    return f"{method.upper()}\n{path}\n{timestamp}".encode()


def signed_headers(key: Ed25519PrivateKey, institution: str, method: str, path: str,
                   timestamp: int | None = None) -> dict[str, str]:
    """The headers of a request to `path` signed by `institution`'s `key`, at `timestamp`
    (Unix seconds, default now)."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = base64.b64encode(key.sign(request_message(method, path, stamp))).decode()
    return {INSTITUTION_HEADER: institution, TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: signature}
