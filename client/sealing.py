"""Chunked authenticated encryption to an X25519 public key: an ephemeral X25519 exchange and
HKDF-SHA256 give a fresh AES-256-GCM key per stream, and each chunk's nonce is its counter
plus a final-chunk flag, so reordered, dropped, or truncated chunks fail to open."""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

KEY_INFO = b"deidpool contribution v1"
PUBLIC_KEY_BYTES = 32


class SealError(ValueError):
    """A chunk that does not open: wrong key, altered, reordered, or missing chunks."""


def _raw(public_key: X25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _cipher(shared: bytes, salt: bytes, ephemeral: bytes, recipient: bytes) -> AESGCM:
    key = HKDF(hashes.SHA256(), 32, salt, KEY_INFO + ephemeral + recipient).derive(shared)
    return AESGCM(key)


def _nonce(counter: int, final: bool) -> bytes:
    return counter.to_bytes(11, "big") + bytes([final])


class StreamSealer:
    """Encrypts the chunks of one stream to `recipient`; `ephemeral_public` (32 bytes) must
    travel with the ciphertext, `salt` is any per-stream value the opener also knows."""

    def __init__(self, recipient: X25519PublicKey, salt: bytes):
        ephemeral = X25519PrivateKey.generate()
        self.ephemeral_public = _raw(ephemeral.public_key())
        self._cipher = _cipher(ephemeral.exchange(recipient), salt, self.ephemeral_public, _raw(recipient))
        self._counter = 0
        self._finished = False

    def seal(self, plaintext: bytes, final: bool = False) -> bytes:
        if self._finished:
            raise SealError("the stream is already finished")
        ciphertext = self._cipher.encrypt(_nonce(self._counter, final), plaintext, None)
        self._counter += 1
        self._finished = final
        return ciphertext


class StreamOpener:
    """Decrypts, in order, the chunks sealed by a `StreamSealer` to this private key."""

    def __init__(self, private_key: X25519PrivateKey, ephemeral_public: bytes, salt: bytes):
        ephemeral = X25519PublicKey.from_public_bytes(ephemeral_public)
        self._cipher = _cipher(private_key.exchange(ephemeral), salt, ephemeral_public, _raw(private_key.public_key()))
        self._counter = 0
        self.finished = False

    def open(self, ciphertext: bytes, final: bool) -> bytes:
        if self.finished:
            raise SealError("data follows the final chunk")
        try:
            plaintext = self._cipher.decrypt(_nonce(self._counter, final), ciphertext, None)
        except InvalidTag:
            raise SealError(f"chunk {self._counter} does not decrypt: wrong server key, or the data was "
                            "altered or reordered") from None
        self._counter += 1
        self.finished = final
        return plaintext
