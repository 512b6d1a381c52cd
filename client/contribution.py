"""The contribution record that institutions write and the server reads: its schema, its
binary codec, its encrypted and signed file format, and the server's validation.

A sentence record is `<u2 n>`, n tag ids (`<u2`), n casing ids (`u1`) and n x dim vector
components (`<f2` or `<f4`), nothing else. A `.dpc` file is

    MAGIC | ephemeral X25519 public key (32) | frames | header JSON | signature (64)
          | header length (>u4) | END_MAGIC

where each frame is `final flag (u1) | length (>u4) | AES-256-GCM ciphertext` of a run of
whole sentence records (see `client.sealing`; the HKDF salt is the header's nonce). The
header holds the format version, the institution id and the SHA-256 of its signing key,
representer id, sentence and token counts, vector size and dtype, pseudonymization N and
scheme, re-identification bound, creation time, a random nonce and the SHA-256 of
everything before it; the institution's Ed25519 key signs it, so the signature covers the
ciphertext too. The header can be read and verified without the server's private key.

The ciphertext is bound to its sender and header: the stream key's HKDF info holds the
digest of the header fields fixed before the first chunk (`_KEY_FIELDS`: among them the
institution id and signing key), and the final chunk's associated data the digest of every
field but `body_sha256` (the hash of the ciphertext itself). A header changed or re-signed
after sealing, such as another institution's claim to a taken file, does not decrypt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import secrets
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import numpy as np
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from client.sealing import PUBLIC_KEY_BYTES, SealError, StreamOpener, StreamSealer
from corpus.casing import CASING

FORMAT_VERSION = 3
# The header's name of each pseudonymization scheme (adversary.pseudonymize.SCHEMES): every gold
# PHI token replaced by a uniform draw among its N nearest embedding neighbours (numbers among
# plausible surrogates of the same shape and range), or from its group of N to 2N - 1 words
# (numbers from their block), fresh per occurrence and per export, before the representer runs.
PSEUDONYMIZATION_SCHEMES = {"neighbours": "embedding-neighbours+plausible-numbers/1",
                            "groups": "embedding-groups+number-blocks/1"}
MAGIC, END_MAGIC = b"DPCONTR\x01", b"DPCEND\x00\x01"
SIGNATURE_CONTEXT = b"deidpool contribution header v1\n"
DTYPES = {"float16": "<f2", "float32": "<f4"}
CHUNK_BYTES = 1 << 20
MAX_FRAME_BYTES = 64 << 20
_FRAME = struct.Struct(">BI")
_FOOTER = struct.Struct(">I8s")
_SIGNATURE_BYTES = 64
_LENGTH = struct.Struct("<H")


class ContributionError(ValueError):
    """A contribution that is malformed, altered, unsigned by the claimed institution, or not
    what the server expects; the message says which."""


class BindingError(ContributionError):
    """An encrypted body that does not open for its signed header and signing key: the header
    was changed or re-signed after sealing, or the file was sealed to another server."""


def _canonical(fields: dict) -> bytes:
    """The header's encoding of `fields` (what is signed and what the bindings hash)."""
    return json.dumps(fields, sort_keys=True).encode()


@dataclasses.dataclass(frozen=True)
class ContributionHeader:
    institution: str
    signing_key_sha256: str  # `signer_sha256` of the institution key that signs the header
    representer_id: str
    sentences: int
    tokens: int
    dim: int
    dtype: str
    neighbours: int
    pseudonymization: str
    reidentification_bound: dict
    created: str
    nonce: str
    body_sha256: str
    format_version: int = FORMAT_VERSION

    def to_bytes(self) -> bytes:
        return _canonical(dataclasses.asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes) -> ContributionHeader:
        """The header of `data`, refused unless of this FORMAT_VERSION with exactly its fields."""
        try:
            fields = json.loads(data)
        except ValueError:
            fields = None
        if not isinstance(fields, dict) or "format_version" not in fields:
            raise ContributionError("the contribution header is malformed")
        if fields["format_version"] != FORMAT_VERSION:
            raise ContributionError(f"the header's format_version is {fields['format_version']!r}, but only "
                                    f"format_version {FORMAT_VERSION} is read: export the contribution again")
        types = {field.name: field.type for field in dataclasses.fields(cls)}
        if set(fields) != set(types) or any(type(fields[name]).__name__ != kind for name, kind in types.items()):
            raise ContributionError("the contribution header is malformed")
        return cls(**fields)


# What the ciphertext is bound to: the header fields fixed before the first chunk is sealed
# (in the stream key), and all but body_sha256, fixed before the final chunk (its associated data).
_KEY_FIELDS = ("format_version", "institution", "signing_key_sha256", "representer_id", "dim", "dtype",
               "neighbours", "pseudonymization", "nonce")
_FINAL_FIELDS = tuple(field.name for field in dataclasses.fields(ContributionHeader) if field.name != "body_sha256")


def _binding(fields: dict, names: tuple[str, ...]) -> bytes:
    """SHA-256 of the canonical encoding of the header `fields` named in `names`."""
    return hashlib.sha256(_canonical({name: fields[name] for name in names})).digest()


def signer_sha256(public_key: Ed25519PublicKey) -> str:
    """The header's `signing_key_sha256`: the SHA-256 (hex) of the raw Ed25519 public key."""
    return hashlib.sha256(public_key.public_bytes(serialization.Encoding.Raw,
                                                  serialization.PublicFormat.Raw)).hexdigest()


class ContributionSentence(NamedTuple):
    vectors: np.ndarray  # (tokens, dim)
    tags: np.ndarray  # (tokens,) tag ids
    casing: np.ndarray  # (tokens,) casing ids


def record_size(tokens: int, dim: int, dtype: str) -> int:
    """Bytes of the record of a sentence of `tokens` tokens."""
    return _LENGTH.size + tokens * (3 + dim * np.dtype(DTYPES[dtype]).itemsize)


def encode_sentence(vectors: np.ndarray, tags: np.ndarray, casing: np.ndarray, dtype: str = "float16") -> bytes:
    """The record of one sentence: (n, dim) vectors, n tag ids, n casing ids."""
    count = len(tags)
    if not 0 < count < 1 << 16 or vectors.shape[0] != count or len(casing) != count or vectors.ndim != 2:
        raise ValueError(f"a sentence needs 1 to 65535 tokens with one vector, tag and casing id each; got vectors "
                         f"{vectors.shape}, {count} tags, {len(casing)} casing ids")
    return b"".join((_LENGTH.pack(count), np.asarray(tags, dtype="<u2").tobytes(),
                     np.asarray(casing, dtype="u1").tobytes(), np.asarray(vectors, dtype=DTYPES[dtype]).tobytes()))


def decode_sentences(data: bytes, dim: int, dtype: str) -> Iterator[ContributionSentence]:
    """The sentences of a run of whole records."""
    vector_type = np.dtype(DTYPES[dtype])
    position = 0
    while position < len(data):
        if position + _LENGTH.size > len(data):
            raise ContributionError("a sentence record is cut short")
        (count,) = _LENGTH.unpack_from(data, position)
        end = position + record_size(count, dim, dtype)
        if count == 0 or end > len(data):
            raise ContributionError("a sentence record is empty or cut short")
        tags_at, casing_at = position + _LENGTH.size, position + _LENGTH.size + 2 * count
        vectors_at = casing_at + count
        yield ContributionSentence(
            np.frombuffer(data, vector_type, count * dim, vectors_at).reshape(count, dim),
            np.frombuffer(data, "<u2", count, tags_at), np.frombuffer(data, "u1", count, casing_at))
        position = end


class ContributionWriter:
    """Writes sentence records (from `encode_sentence`) to an encrypted, signed `.dpc` file.

    Records are sealed in chunks of about `chunk_bytes`, so memory stays bounded. The file is
    written to a temporary sibling and renamed into place by `close`; on any error (`discard`,
    or an exception inside a `with` block) nothing is left at `path`.
    """

    def __init__(self, path: str | Path, *, institution: str, representer_id: str, dim: int, neighbours: int,
                 signing_key: Ed25519PrivateKey, server_key: X25519PublicKey, dtype: str = "float16",
                 pseudonymization: str, chunk_bytes: int = CHUNK_BYTES):
        """`reidentification_bound` (the header field, see `adversary.bound`) is set on
        `bound` before `close`; it stays {} when nobody computed one."""
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        if neighbours < 1:
            raise ValueError(f"neighbours must be at least 1, got {neighbours}")
        if pseudonymization not in PSEUDONYMIZATION_SCHEMES:
            raise ValueError(f"pseudonymization must be one of {', '.join(PSEUDONYMIZATION_SCHEMES)}, "
                             f"got {pseudonymization!r}")
        if not institution:
            raise ValueError("the institution id is empty")
        self.path = Path(path)
        self._fields = {"format_version": FORMAT_VERSION, "institution": institution,
                        "signing_key_sha256": signer_sha256(signing_key.public_key()),
                        "representer_id": representer_id, "dim": dim, "dtype": dtype, "neighbours": neighbours,
                        "pseudonymization": PSEUDONYMIZATION_SCHEMES[pseudonymization], "nonce": secrets.token_hex(16)}
        self._signing_key, self._chunk_bytes = signing_key, chunk_bytes
        self._sealer = StreamSealer(server_key, bytes.fromhex(self._fields["nonce"]),
                                    _binding(self._fields, _KEY_FIELDS))
        self._pending = bytearray()
        self._digest = hashlib.sha256()
        self.sentences = self.tokens = 0
        self.bound: dict = {}
        self.header: ContributionHeader | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self._temporary = Path(temporary)
        self._file = os.fdopen(descriptor, "wb")
        try:
            self._write(MAGIC + self._sealer.ephemeral_public)
        except BaseException:
            self.discard()
            raise

    def _write(self, data: bytes) -> None:
        self._digest.update(data)
        self._file.write(data)

    def add(self, record: bytes) -> None:
        (count,) = _LENGTH.unpack_from(record)
        if count == 0 or len(record) != record_size(count, self._fields["dim"], self._fields["dtype"]):
            raise ValueError("the record does not match this contribution's vector size and dtype")
        self._pending += record
        self.sentences += 1
        self.tokens += count
        if len(self._pending) >= self._chunk_bytes:
            self._seal(final=False)

    def _seal(self, final: bool, associated_data: bytes = b"") -> None:
        ciphertext = self._sealer.seal(bytes(self._pending), final, associated_data)
        self._write(_FRAME.pack(final, len(ciphertext)) + ciphertext)
        self._pending.clear()

    def close(self) -> ContributionHeader:
        """Seal the last chunk bound to the header, sign the header, and move the file into place."""
        try:
            fields = {**self._fields, "sentences": self.sentences, "tokens": self.tokens,
                      "reidentification_bound": self.bound,
                      "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            self._seal(final=True, associated_data=_binding(fields, _FINAL_FIELDS))
            header = ContributionHeader(body_sha256=self._digest.hexdigest(), **fields)
            header_bytes = header.to_bytes()
            self._file.write(header_bytes + self._signing_key.sign(SIGNATURE_CONTEXT + header_bytes)
                             + _FOOTER.pack(len(header_bytes), END_MAGIC))
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self._temporary, self.path)
        except BaseException:
            self.discard()
            raise
        return header

    def discard(self) -> None:
        """Abandon the file: nothing is left at `path`."""
        self._file.close()
        self._temporary.unlink(missing_ok=True)

    def __enter__(self) -> ContributionWriter:
        return self

    def __exit__(self, error_type, error, traceback) -> None:
        if error_type is None:
            self.header = self.close()
        else:
            self.discard()


def write_contribution(path: str | Path, records: Iterable[bytes], bound: Callable[[], dict] | None = None,
                       **options) -> ContributionHeader:
    """Write `records` with a `ContributionWriter(path, **options)`; returns the header.
    `bound()`, called once the records are written, gives the header's re-identification bound."""
    with ContributionWriter(path, **options) as writer:
        for record in records:
            writer.add(record)
        if bound is not None:
            writer.bound = bound()
    return writer.header


def _trailer(path: Path) -> tuple[int, bytes, bytes]:
    """(offset where the header starts, header bytes, signature) of the file at `path`."""
    try:
        with path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            if size < len(MAGIC) + PUBLIC_KEY_BYTES + _SIGNATURE_BYTES + _FOOTER.size:
                raise ContributionError(f"{path} is truncated or not a contribution file")
            file.seek(size - _FOOTER.size)
            length, end = _FOOTER.unpack(file.read(_FOOTER.size))
            start = size - _FOOTER.size - _SIGNATURE_BYTES - length
            if end != END_MAGIC or start < len(MAGIC) + PUBLIC_KEY_BYTES:
                raise ContributionError(f"{path} is truncated or not a contribution file")
            file.seek(start)
            header_bytes = file.read(length)
            return start, header_bytes, file.read(_SIGNATURE_BYTES)
    except OSError as error:
        raise ContributionError(f"cannot read {path}: {error.strerror}") from None


def read_header(path: str | Path) -> ContributionHeader:
    """The header WITHOUT any check of its signature (use `verify_contribution` for that)."""
    path = Path(path)
    return _parse_header(path, _trailer(path)[1])


def _parse_header(path: Path, header_bytes: bytes) -> ContributionHeader:
    try:
        header = ContributionHeader.from_bytes(header_bytes)
    except ContributionError as error:
        raise ContributionError(f"{path}: {error}") from None
    if header.dtype not in DTYPES or header.dim < 1:
        raise ContributionError(f"{path}: vectors of size {header.dim} in {header.dtype} are not supported")
    if not re.fullmatch("[0-9a-f]{32}", header.nonce):
        raise ContributionError(f"{path}: the header's nonce is not 16 bytes in hex")
    return header


def verify_contribution(path: str | Path, institution_key: Ed25519PublicKey) -> ContributionHeader:
    """The header, once its signature by `institution_key`, its naming of that key and the hash
    of the encrypted body are checked; needs no server key."""
    path = Path(path)
    start, header_bytes, signature = _trailer(path)
    try:
        institution_key.verify(signature, SIGNATURE_CONTEXT + header_bytes)
    except InvalidSignature:
        raise ContributionError(f"{path}: the signature does not verify with this institution key; the file "
                                "was altered or signed by another institution") from None
    header = _parse_header(path, header_bytes)
    if header.signing_key_sha256 != signer_sha256(institution_key):
        raise ContributionError(f"{path}: the header names another signing key than the institution key its "
                                "signature verifies with: it was re-signed by another institution")
    digest = hashlib.sha256()
    with path.open("rb") as file:
        remaining = start
        while remaining:
            block = file.read(min(remaining, CHUNK_BYTES))
            digest.update(block)
            remaining -= len(block)
    if digest.hexdigest() != header.body_sha256:
        raise ContributionError(f"{path}: the encrypted body does not match the signed header; the file was altered")
    return header


def decrypt_payload(path: str | Path, server_key: X25519PrivateKey,
                    institution_key: Ed25519PublicKey) -> Iterator[bytes]:
    """The decrypted chunks (runs of sentence records); verifies the file first, on the call."""
    header = verify_contribution(path, institution_key)
    return _decrypt(Path(path), server_key, header)


def _decrypt(path: Path, server_key: X25519PrivateKey, header: ContributionHeader) -> Iterator[bytes]:
    """The chunks of the verified file at `path`, opened under the bindings of its `header`."""
    start, fields = _trailer(path)[0], dataclasses.asdict(header)
    final_binding = _binding(fields, _FINAL_FIELDS)
    with path.open("rb") as file:
        if file.read(len(MAGIC)) != MAGIC:
            raise ContributionError(f"{path} is not a contribution file of format version {FORMAT_VERSION}")
        opener = StreamOpener(server_key, file.read(PUBLIC_KEY_BYTES), bytes.fromhex(header.nonce),
                              _binding(fields, _KEY_FIELDS))
        while file.tell() < start:
            if opener.finished:
                raise ContributionError(f"{path}: data follows the final chunk")
            if file.tell() + _FRAME.size > start:
                raise ContributionError(f"{path}: a chunk is cut short")
            final, length = _FRAME.unpack(file.read(_FRAME.size))
            if final > 1 or length > min(MAX_FRAME_BYTES, start - file.tell()):
                raise ContributionError(f"{path}: a chunk is malformed or cut short")
            try:
                yield opener.open(file.read(length), bool(final), final_binding if final else b"")
            except SealError:
                raise BindingError(f"{path}: the encrypted body does not decrypt for this signed header, signing "
                                   "key and server key: the header was changed or re-signed after sealing (a "
                                   "file taken from another institution), or the file was sealed to another "
                                   "server") from None
    if not opener.finished:
        raise ContributionError(f"{path} is truncated: the final chunk is missing")


def iter_sentences(path: str | Path, server_key: X25519PrivateKey,
                   institution_key: Ed25519PublicKey) -> Iterator[ContributionSentence]:
    """Every sentence of the contribution; verifies the file first, on the call, and the
    header's counts at the end."""
    header = verify_contribution(path, institution_key)
    return _sentences(Path(path), server_key, header)


def _sentences(path: Path, server_key: X25519PrivateKey, header: ContributionHeader) -> Iterator[ContributionSentence]:
    sentences = tokens = 0
    for chunk in _decrypt(path, server_key, header):
        for sentence in decode_sentences(chunk, header.dim, header.dtype):
            sentences += 1
            tokens += len(sentence.tags)
            yield sentence
    if (sentences, tokens) != (header.sentences, header.tokens):
        raise ContributionError(f"{path}: {sentences} sentences and {tokens} tokens, but the header says "
                                f"{header.sentences} and {header.tokens}")


def validate_contribution(path: str | Path, server_key: X25519PrivateKey, institution_key: Ed25519PublicKey, *,
                          representer_ids: Iterable[str], dim: int, num_tags: int) -> ContributionHeader:
    """Check a contribution the way the server must before pooling it: signature and hashes,
    decryption, a representer id among `representer_ids`, vector size `dim`, a known dtype,
    tag ids below `num_tags`, casing ids in range, finite vectors and consistent counts."""
    path = Path(path)
    header = verify_contribution(path, institution_key)
    expected = sorted(representer_ids)
    if header.representer_id not in expected:
        raise ContributionError(f"{path}: representer id {header.representer_id} is not one the server expects "
                                f"({', '.join(expected) or 'none'})")
    if header.dim != dim:
        raise ContributionError(f"{path}: vectors of size {header.dim}; expected {dim}")
    if header.sentences < 1:
        raise ContributionError(f"{path} holds no sentences")
    for number, sentence in enumerate(_sentences(path, server_key, header), 1):
        if sentence.tags.max() >= num_tags or sentence.casing.max() >= len(CASING):
            raise ContributionError(f"{path}: sentence {number} has a tag id >= {num_tags} or a casing id "
                                    f">= {len(CASING)}")
        if not np.isfinite(sentence.vectors).all():
            raise ContributionError(f"{path}: sentence {number} has non-finite vectors")
    return header
