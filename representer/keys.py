"""Ed25519 signing keys and X25519 encryption keys as PEM files (private keys 0600, optionally
passphrase-protected), loaded with clear errors, and short fingerprints of public keys."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import NamedTuple

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

SIGNING, ENCRYPTION = "signing", "encryption"
_PRIVATE = {SIGNING: Ed25519PrivateKey, ENCRYPTION: X25519PrivateKey}
_PUBLIC = {SIGNING: Ed25519PublicKey, ENCRYPTION: X25519PublicKey}
_ALGORITHM = {SIGNING: "Ed25519", ENCRYPTION: "X25519"}
_ENCRYPTED_HEADER = b"-----BEGIN ENCRYPTED PRIVATE KEY-----"


class KeyFileError(ValueError):
    """A key file that cannot be used; the message names the file, never a secret."""


class KeyPair(NamedTuple):
    private: Path
    public: Path
    fingerprint: str


def fingerprint(public_key: Ed25519PublicKey | X25519PublicKey) -> str:
    """First 64 bits of the SHA-256 of the raw public key, as four groups of hex digits."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return ":".join(digest[i:i + 4] for i in range(0, 16, 4))


def create_key_pair(directory: str | Path, name: str, kind: str, passphrase: str | None = None) -> KeyPair:
    """Generate a `kind` key and write `<name>.key` (0600) and `<name>.pub` in `directory`.

    Existing files are never overwritten: losing a provider or institution key is worse
    than an error.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    private, public = directory / f"{name}.key", directory / f"{name}.pub"
    for path in (private, public):
        if path.exists():
            raise KeyFileError(f"{path} already exists; refusing to overwrite a key")
    key = _PRIVATE[kind].generate()
    encryption = (serialization.BestAvailableEncryption(passphrase.encode()) if passphrase
                  else serialization.NoEncryption())
    _write_new(private, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          encryption), 0o600)
    _write_new(public, key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
    return KeyPair(private, public, fingerprint(key.public_key()))


def _write_new(path: Path, data: bytes, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "wb") as file:
        os.fchmod(file.fileno(), mode)
        file.write(data)


def create_provider_keys(directory: str | Path, passphrase: str | None = None) -> KeyPair:
    """The provider's bundle-signing key: provider.key / provider.pub."""
    return create_key_pair(directory, "provider", SIGNING, passphrase)


def create_server_keys(directory: str | Path, passphrase: str | None = None) -> dict[str, KeyPair]:
    """The pooling server's keys: server-encryption (X25519, contributions are encrypted to
    it) and server-signing (Ed25519, signs published pipelines)."""
    return {kind: create_key_pair(directory, f"server-{kind}", kind, passphrase) for kind in (ENCRYPTION, SIGNING)}


def is_encrypted(path: str | Path) -> bool:
    """Whether the private key file at `path` needs a passphrase."""
    return _read(Path(path)).lstrip().startswith(_ENCRYPTED_HEADER)


def load_private_key(path: str | Path, kind: str, passphrase: str | None = None):
    """The `kind` private key in the PEM file at `path`."""
    path = Path(path)
    data = _read(path)
    try:
        key = serialization.load_pem_private_key(data, passphrase.encode() if passphrase else None)
    except TypeError:
        if passphrase:
            raise KeyFileError(f"{path} is not passphrase-protected, but a passphrase was given") from None
        raise KeyFileError(f"{path} is passphrase-protected: give its passphrase") from None
    except ValueError:
        if data.lstrip().startswith(_ENCRYPTED_HEADER):
            raise KeyFileError(f"{path}: wrong passphrase") from None
        raise KeyFileError(f"{path} is not a PEM private key") from None
    return _checked(key, _PRIVATE[kind], kind, path)


def load_public_key(path: str | Path, kind: str):
    """The `kind` public key in the PEM file at `path`."""
    path = Path(path)
    return public_key_from_pem(_read(path), kind, str(path))


def public_key_from_pem(data: bytes | str, kind: str, source: str = "the PEM text"):
    """The `kind` public key in PEM `data` (from `source`, named in errors)."""
    try:
        key = serialization.load_pem_public_key(data.encode() if isinstance(data, str) else data)
    except (ValueError, TypeError):
        raise KeyFileError(f"{source} is not a PEM public key") from None
    return _checked(key, _PUBLIC[kind], kind, source)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise KeyFileError(f"cannot read key file {path}: {error.strerror}") from None


def _checked(key, expected: type, kind: str, source):
    if not isinstance(key, expected):
        raise KeyFileError(f"{source} does not hold an {_ALGORITHM[kind]} {kind} key")
    return key
