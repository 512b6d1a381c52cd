"""Who may do what: the coordinator's admin token (only its SHA-256 is stored), institution
requests signed with their Ed25519 key, and Ed25519-signed audit reports."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from client.signed_requests import request_message
from server.settings import MAX_CLOCK_SKEW_SECONDS


class AuthError(ValueError):
    """A credential that does not hold; the message never repeats the credential."""


def new_admin_token() -> tuple[str, str]:
    """A fresh admin token and the SHA-256 (hex) to store instead of it."""
    token = secrets.token_urlsafe(32)
    return token, token_sha256(token)


def token_sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_admin_authorization(authorization: str | None, stored_sha256: str) -> None:
    """Refuse unless `authorization` is `Bearer <the admin token>`."""
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError("this route needs the admin token: Authorization: Bearer <token>")
    if not hmac.compare_digest(token_sha256(token.strip()), stored_sha256):
        raise AuthError("the admin token is wrong")


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


def check_signed_request(key: Ed25519PublicKey, method: str, path: str, timestamp: str | None,
                         signature: str | None, now: float | None = None) -> None:
    """Refuse unless `signature` signs `method`, `path` and `timestamp` (Unix seconds, at most
    MAX_CLOCK_SKEW_SECONDS from `now`) with `key`."""
    if not timestamp or not signature:
        raise AuthError("a signed request needs the X-Deidpool-Timestamp and X-Deidpool-Signature headers")
    try:
        stamp = int(timestamp)
    except ValueError:
        raise AuthError("X-Deidpool-Timestamp must be Unix seconds") from None
    if abs((time.time() if now is None else now) - stamp) > MAX_CLOCK_SKEW_SECONDS:
        raise AuthError(f"X-Deidpool-Timestamp is more than {MAX_CLOCK_SKEW_SECONDS} s from the server's clock")
    verify_signature(key, signature, request_message(method, path, timestamp), "request")


def canonical_json(report: dict) -> bytes:
    """The bytes an audit report's signature covers."""
    return json.dumps(report, sort_keys=True, separators=(",", ":")).encode()


def signed_audit(report: dict, signing_key) -> dict:
    """The body of `POST /api/audits`: `report` signed with the Ed25519 `signing_key`."""
    public = signing_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    return {"report": report, "signature": base64.b64encode(signing_key.sign(canonical_json(report))).decode(),
            "signer_public_key": public.decode()}
