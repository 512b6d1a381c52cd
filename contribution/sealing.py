"""Chunked authenticated encryption to an X25519 public key: an ephemeral X25519 exchange and
HKDF-SHA256 give a fresh AES-256-GCM key per stream, bound to the caller's `context`, and each
chunk's nonce is its counter plus a final-chunk flag, so reordered, dropped, or truncated
chunks fail to open, and so does a stream opened under another context or associated data."""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

KEY_INFO = b"deidpool sealed stream v2"
PUBLIC_KEY_BYTES = 32


class SealError(ValueError):
    """A chunk that does not open: wrong key or context, altered, reordered, or missing chunks."""


def _raw(public_key: X25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _cipher(shared: bytes, salt: bytes, ephemeral: bytes, recipient: bytes, context: bytes) -> AESGCM:
    key = HKDF(hashes.SHA256(), 32, salt, KEY_INFO + ephemeral + recipient + context).derive(shared)
    return AESGCM(key)


def _nonce(counter: int, final: bool) -> bytes:
    return counter.to_bytes(11, "big") + bytes([final])


class StreamSealer:
    """Encrypts the chunks of one stream to `recipient`; `ephemeral_public` (32 bytes) must
    travel with the ciphertext. `salt` (a per-stream value) and `context` (what the stream is
    bound to, part of the key's HKDF info) are known to the opener, who must give the same."""

    def __init__(self, recipient: X25519PublicKey, salt: bytes, context: bytes):
        ephemeral = X25519PrivateKey.generate()
        self.ephemeral_public = _raw(ephemeral.public_key())
        self._cipher = _cipher(ephemeral.exchange(recipient), salt, self.ephemeral_public, _raw(recipient), context)
        self._counter = 0
        self._finished = False

    def seal(self, plaintext: bytes, final: bool = False, associated_data: bytes = b"") -> bytes:
        """The chunk's ciphertext; `associated_data` must be given again to open it."""
        if self._finished:
            raise SealError("the stream is already finished")
        ciphertext = self._cipher.encrypt(_nonce(self._counter, final), plaintext, associated_data)
        self._counter += 1
        self._finished = final
        return ciphertext


class StreamOpener:
    """Decrypts, in order, the chunks sealed by a `StreamSealer` to this private key under the
    same `salt` and `context`."""

    def __init__(self, private_key: X25519PrivateKey, ephemeral_public: bytes, salt: bytes, context: bytes):
        ephemeral = X25519PublicKey.from_public_bytes(ephemeral_public)
        self._cipher = _cipher(private_key.exchange(ephemeral), salt, ephemeral_public,
                               _raw(private_key.public_key()), context)
        self._counter = 0
        self.finished = False

    def open(self, ciphertext: bytes, final: bool, associated_data: bytes = b"") -> bytes:
        if self.finished:
            raise SealError("data follows the final chunk")
        try:
            plaintext = self._cipher.decrypt(_nonce(self._counter, final), ciphertext, associated_data)
        except InvalidTag:
            raise SealError(f"chunk {self._counter} does not decrypt: sealed to another key, under another "
                            "context or associated data, or altered or reordered") from None
        self._counter += 1
        self.finished = final
        return plaintext
