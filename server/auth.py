"""Who may do what: the coordinator's admin token, the dashboard's viewer token and the metrics
token of Prometheus (only their SHA-256 is stored), institution requests signed with their
Ed25519 key, and Ed25519-signed audit reports."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from deidpool.contribution.signed_requests import (
    CLIENT_VERSION,
    INSTITUTION_HEADER,
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    request_message,
)
from deidpool.server.settings import MAX_CLOCK_SKEW_SECONDS

NONCE_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,64}")
TIMESTAMP_PATTERN = re.compile(r"[0-9]{1,12}")
# The one answer to a signed request that does not hold, whatever the reason: a stranger learns
# from it neither whether the institution it names is registered nor which check failed.
UNSIGNED = (f"this route needs a request signed by a registered institution (headers {INSTITUTION_HEADER}, "
            f"{TIMESTAMP_HEADER} within {MAX_CLOCK_SKEW_SECONDS} s of the server's clock, {NONCE_HEADER} and "
            f"{SIGNATURE_HEADER}, as deidpool {CLIENT_VERSION} or later signs them); this one's is missing, stale "
            "or does not verify")
_NOBODY = Ed25519PrivateKey.generate().public_key()  # checked against when the named institution is unknown


class AuthError(ValueError):
    """A credential that does not hold; the message never repeats the credential."""


def new_token() -> tuple[str, str]:
    """A fresh token (admin, viewer or metrics) and the SHA-256 (hex) to store instead of it."""
    token = secrets.token_urlsafe(32)
    return token, token_sha256(token)


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_admin_authorization(authorization: str | None, stored_sha256: str) -> None:
    """Refuse unless `authorization` is `Bearer <the admin token>`."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("this route needs the admin token: Authorization: Bearer <token>")
    if not _is_one_of(token.strip(), [stored_sha256]):
        raise AuthError("the admin token is wrong")


def check_metrics_authorization(authorization: str | None, stored_sha256s: list[str]) -> None:
    """Refuse unless `authorization` is `Bearer <token>` (what Prometheus sends) with one of the
    tokens whose hashes are `stored_sha256s`."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("/metrics needs the metrics or admin token: Authorization: Bearer <token>")
    if not _is_one_of(token.strip(), stored_sha256s):
        raise AuthError("the token is wrong")


def check_viewer_authorization(authorization: str | None, stored_sha256s: list[str]) -> None:
    """Refuse unless `authorization` carries one of the tokens whose hashes are `stored_sha256s`,
    as `Bearer <token>` or as the password of HTTP Basic authentication (what a browser sends
    after its login prompt; the user name is ignored)."""
    scheme, _, credentials = (authorization or "").partition(" ")
    token = credentials.strip()
    if scheme.lower() == "basic":
        try:
            token = base64.b64decode(token, validate=True).decode().partition(":")[2]
        except (binascii.Error, ValueError):
            token = ""
    if scheme.lower() not in ("basic", "bearer") or not token:
        raise AuthError("the dashboard needs the viewer or admin token: log in with it as the password, or send "
                        "Authorization: Bearer <token>")
    if not _is_one_of(token, stored_sha256s):
        raise AuthError("the token is wrong")


def _is_one_of(token: str, stored_sha256s: list[str]) -> bool:
    digest = token_sha256(token)
    return any([hmac.compare_digest(digest, stored) for stored in stored_sha256s])  # compares with every one


def load_ed25519_public_key(pem: str, what: str) -> Ed25519PublicKey:
    """The Ed25519 public key in the PEM text `pem`; ValueError naming `what` otherwise."""
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError):
        raise ValueError(f"{what} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{what} is not an Ed25519 public key")
    return key


def verify_signature(key: Ed25519PublicKey, signature_b64: str, message: bytes, what: str) -> None:
    try:
        key.verify(base64.b64decode(signature_b64, validate=True), message)
    except (InvalidSignature, binascii.Error, ValueError):
        raise AuthError(f"the {what} signature does not verify") from None


def check_signed_request(key: Ed25519PublicKey | None, institution: str, host: str, method: str, path: str,
                         timestamp: str | None, nonce: str | None, signature: str | None,
                         content_sha256: str | None = None, now: float | None = None) -> float:
    """Refuse unless `signature` signs `institution`, `host`, `method`, `path`, `timestamp` (Unix
    seconds, at most MAX_CLOCK_SKEW_SECONDS from `now`), `nonce` and, for an upload, its
    `content_sha256` with `key` (None: the institution is not registered; a signature is checked
    all the same, so that the refusal takes as long). Returns the Unix time after which the request
    is stale: until then the caller must remember its nonce to refuse a replay. The AuthError
    says why, for the server's log: the caller answers every refusal alike (`UNSIGNED`)."""
    missing = [name for name, value in ((TIMESTAMP_HEADER, timestamp), (NONCE_HEADER, nonce),
                                        (SIGNATURE_HEADER, signature)) if not value]
    if missing:
        raise AuthError(f"{', '.join(missing)} missing")
    if not TIMESTAMP_PATTERN.fullmatch(timestamp):
        raise AuthError(f"{TIMESTAMP_HEADER} is not Unix seconds")
    if abs((time.time() if now is None else now) - int(timestamp)) > MAX_CLOCK_SKEW_SECONDS:
        raise AuthError(f"{TIMESTAMP_HEADER} is more than {MAX_CLOCK_SKEW_SECONDS} s from the server's clock")
    if not NONCE_PATTERN.fullmatch(nonce):
        raise AuthError(f"{NONCE_HEADER} is malformed")
    message = request_message(institution, host, method, path, timestamp, nonce, content_sha256)
    verify_signature(key or _NOBODY, signature, message, "request")
    if key is None:
        raise AuthError("the institution is not registered")
    return int(timestamp) + MAX_CLOCK_SKEW_SECONDS


def canonical_json(report: dict) -> bytes:
    """The bytes an audit report's signature covers."""
    return json.dumps(report, sort_keys=True, separators=(",", ":")).encode()


def signed_audit(report: dict, signing_key) -> dict:
    """The body of `POST /api/audits`: `report` signed with the Ed25519 `signing_key`."""
    public = signing_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    return {"report": report, "signature": base64.b64encode(signing_key.sign(canonical_json(report))).decode(),
            "signer_public_key": public.decode()}
