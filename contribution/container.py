"""The contribution file (`.dpc`): sentence records (`deidpool.contribution.records`) sealed to the
server's X25519 key and signed by the institution's Ed25519 key; its writer and its readers.

A `.dpc` file is

    MAGIC | ephemeral X25519 public key (32) | frames | header JSON | signature (64)
          | header length (>u4) | END_MAGIC

where each frame is `final flag (u1) | length (>u4) | AES-256-GCM ciphertext` (see
`deidpool.contribution.sealing`; the HKDF salt is the header's nonce): the first frame holds the
sealed summary, the others runs of whole sentence records. The header (`ContributionHeader`: canonical
JSON, ending with the SHA-256 of everything before it) is signed, so the signature covers the
ciphertext too. Anyone can read and verify it, so it holds only what the export's settings, tags
and token counts fix; what depends on the original PHI values (the re-identification bound, what
the safety net flagged) is in the sealed summary, which only the server's key opens
(`read_summary`). Files of format version 3
and before (the bound still in the header) are refused, naming the file and `format_version`.
The optional fields (`OPTIONAL_FIELDS`) are left out of the header, its signature and its
bindings when they mean "not used" ({}, 1).

The ciphertext is bound to its sender and header: the stream key's HKDF info holds the digest of
the header fields fixed before the first chunk (`_KEY_FIELDS`, among them the institution id and
signing key), and the final chunk's associated data the digest of every field but `body_sha256`.
A header changed or re-signed after sealing does not decrypt."""

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
from itertools import islice
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from deidpool.contribution.records import (
    DTYPES,
    ContributionError,
    ContributionSentence,
    decode_sentences,
    record_size,
    record_tokens,
)
from deidpool.contribution.sealing import PUBLIC_KEY_BYTES, SealError, StreamOpener, StreamSealer

FORMAT_VERSION = 4
# The header's name of each pseudonymization scheme (pseudonymization.pseudonymize.SCHEMES): every gold
# PHI token replaced by a uniform draw among its N nearest embedding neighbours (numbers among
# plausible surrogates of the same shape and range), or from its group of N to 2N - 1 words
# (numbers from their block), or by a realistic surrogate of its PHI type and shape that does not
# depend on it (numbers by their shape; N does not apply), fresh per occurrence and per export,
# before the representer runs.
PSEUDONYMIZATION_SCHEMES = {"neighbours": "embedding-neighbours+plausible-numbers/1",
                            "groups": "embedding-groups+number-blocks/1",
                            "surrogates": "type-surrogates+number-shapes/1"}
MAGIC, END_MAGIC = b"DPCONTR\x01", b"DPCEND\x00\x01"
CONTENT_TYPE = "application/vnd.deidpool.contribution"  # a .dpc file's media type, its upload's Content-Type
SIGNATURE_CONTEXT = b"deidpool contribution header v1\n"
CHUNK_BYTES = 1 << 20
MAX_FRAME_BYTES = 64 << 20
MAX_HEADER_BYTES = 1 << 20  # a header is read whole before any check: far more than a real one holds
_FRAME = struct.Struct(">BI")
_FOOTER = struct.Struct(">I8s")
_SIGNATURE_BYTES = 64


class BindingError(ContributionError):
    """An encrypted body that does not open for its signed header and signing key: the header
    was changed or re-signed after sealing, or the file was sealed to another server."""


def _canonical(fields: dict) -> bytes:
    """The header's encoding of `fields` (what is signed and what the bindings hash)."""
    return json.dumps(fields, sort_keys=True).encode()


def _whole(minimum: int) -> Callable[[object], bool]:
    return lambda value: type(value) is int and value >= minimum


def _one_of(choices: Iterable[str]) -> Callable[[object], bool]:
    return lambda value: type(value) is str and value in choices


def _text(value: object) -> bool:
    return type(value) is str and value != ""


def _hex(digits: int) -> Callable[[object], bool]:
    return lambda value: type(value) is str and re.fullmatch(f"[0-9a-f]{{{digits}}}", value) is not None


def _finders(value: object) -> bool:
    if type(value) is not dict or set(value) - {"finders"}:
        return False
    names = value.get("finders", [])
    return type(names) is list and all(type(name) is str for name in names)


def _iso_time(value: object) -> bool:
    try:
        datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return False
    return True


def _field(accepts: str, check: Callable[[object], bool], **options) -> dataclasses.Field:
    """A header field whose values `check` accepts (`accepts` says which, in error messages)."""
    return dataclasses.field(metadata={"accepts": accepts, "check": check}, **options)


@dataclasses.dataclass(frozen=True)
class ContributionHeader:
    """The signed header of a contribution file. Its fields:

    - institution: the id of the institution that wrote and signed the file;
    - signing_key_sha256: `signer_sha256` of the Ed25519 key that signs the header (verification
      refuses a header naming another key than the one its signature verifies with);
    - representer_id: the representer (bundle) whose vectors the records hold;
    - sentences, tokens: how many sentence records, and tokens over all of them;
    - dim, dtype: the vector size and component type (a key of `deidpool.contribution.records.DTYPES`);
    - neighbours, pseudonymization: the N and the scheme (a value of PSEUDONYMIZATION_SCHEMES)
      every gold PHI token was pseudonymized with before the representer ran;
    - safety_net: which finders of the export's safety net for unlabeled PHI ran ({"finders": [...]},
      `deidpool.client.safety_net.Flagged.header`; what they flagged is in the sealed summary), {}
      when none was given (an optional field);
    - draws: how many times every sentence was exported, each time with fresh surrogates and fresh
      noise, the copies of a sentence one after another (`sentences` counts every copy, a multiple
      of `draws`), 1 when not given (an optional field);
    - created: the creation time, ISO 8601 (UTC, seconds);
    - nonce: 16 random bytes in hex, the stream's HKDF salt and the server's replay key;
    - body_sha256: the SHA-256 of every byte of the file before the header;
    - format_version: FORMAT_VERSION.

    Every field is checked on construction (`_check_field`), so neither the writer nor a
    reader holds a header with an ill-typed or out-of-range field."""

    institution: str = _field("a non-empty string", _text)
    signing_key_sha256: str = _field("a SHA-256 in lowercase hex", _hex(64))
    representer_id: str = _field("a non-empty string", _text)
    sentences: int = _field("a whole number >= 0", _whole(0))
    tokens: int = _field("a whole number >= 0", _whole(0))
    dim: int = _field("a whole number >= 1", _whole(1))
    dtype: str = _field(f"one of {', '.join(DTYPES)}", _one_of(DTYPES))
    neighbours: int = _field("a whole number >= 1", _whole(1))
    pseudonymization: str = _field(f"one of {', '.join(PSEUDONYMIZATION_SCHEMES.values())}",
                                   _one_of(PSEUDONYMIZATION_SCHEMES.values()))
    created: str = _field("an ISO 8601 time", _iso_time)
    nonce: str = _field("16 bytes in lowercase hex", _hex(32))
    body_sha256: str = _field("a SHA-256 in lowercase hex", _hex(64))
    safety_net: dict = _field('{} or {"finders": a list of strings}', _finders, default_factory=dict)
    draws: int = _field("a whole number >= 1", _whole(1), default=1)
    format_version: int = _field(f"{FORMAT_VERSION}", lambda value: type(value) is int and value == FORMAT_VERSION,
                                 default=FORMAT_VERSION)

    def __post_init__(self) -> None:
        for name in _HEADER_FIELDS:
            _check_field(name, getattr(self, name))
        if self.sentences % self.draws:
            raise ContributionError(f"sentences must be a multiple of draws ({self.draws}), got {self.sentences}")

    def fields(self) -> dict:
        """The header's fields as signed: all but an empty optional one."""
        return {name: value for name, value in dataclasses.asdict(self).items()
                if not (name in OPTIONAL_FIELDS and value == OPTIONAL_FIELDS[name])}

    def to_bytes(self) -> bytes:
        return _canonical(self.fields())

    @classmethod
    def from_bytes(cls, data: bytes) -> ContributionHeader:
        """The header of `data`, refused unless of this FORMAT_VERSION with exactly its fields (an
        optional one may be absent), each of its type and range; the error names the field."""
        try:
            fields = json.loads(data)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            fields = None
        if not isinstance(fields, dict) or "format_version" not in fields:
            raise ContributionError("the contribution header is malformed: not a JSON object with a format_version")
        if fields["format_version"] != FORMAT_VERSION:
            raise ContributionError(f"the header's format_version is {fields['format_version']!r}, but only "
                                    f"format_version {FORMAT_VERSION} is read: export the contribution again")
        if missing := sorted(set(_HEADER_FIELDS) - set(fields) - set(OPTIONAL_FIELDS)):
            raise ContributionError(f"the contribution header is malformed: it lacks {', '.join(missing)}")
        if unknown := sorted(set(fields) - set(_HEADER_FIELDS)):
            raise ContributionError(f"the contribution header is malformed: unknown fields {', '.join(unknown)}")
        try:
            return cls(**fields)
        except ContributionError as error:
            raise ContributionError(f"the contribution header is malformed: {error}") from None


_HEADER_FIELDS = {field.name: field for field in dataclasses.fields(ContributionHeader)}
# added after the first files of this format version, each with the value that leaves it out (module docstring)
OPTIONAL_FIELDS = {"safety_net": {}, "draws": 1}


def _check_field(name: str, value: object) -> None:
    """Refuse a value of header field `name` of another type or out of range: ContributionError
    naming the field, the value and what the field accepts."""
    metadata = _HEADER_FIELDS[name].metadata
    if not metadata["check"](value):
        raise ContributionError(f"{name} must be {metadata['accepts']}, got {value!r}")


# What the ciphertext is bound to: the header fields fixed before the first chunk is sealed
# (in the stream key), and all but body_sha256, fixed before the final chunk (its associated data).
_KEY_FIELDS = ("format_version", "institution", "signing_key_sha256", "representer_id", "dim", "dtype",
               "neighbours", "pseudonymization", "draws", "nonce")
_FINAL_FIELDS = tuple(name for name in _HEADER_FIELDS if name != "body_sha256")


def _binding(fields: dict, names: tuple[str, ...]) -> bytes:
    """SHA-256 of the canonical encoding of the header `fields` named in `names` (an optional
    field `fields` lacks is left out)."""
    return hashlib.sha256(_canonical({name: fields[name] for name in names if name in fields})).digest()


def signer_sha256(public_key: Ed25519PublicKey) -> str:
    """The header's `signing_key_sha256`: the SHA-256 (hex) of the raw Ed25519 public key."""
    return hashlib.sha256(public_key.public_bytes(serialization.Encoding.Raw,
                                                  serialization.PublicFormat.Raw)).hexdigest()


class ContributionWriter:
    """Writes a sealed summary and sentence records (from `encode_sentence`) to an encrypted,
    signed `.dpc` file.

    Records are sealed in chunks of about `chunk_bytes`, so memory stays bounded. The file is
    written to a temporary sibling and renamed into place by `close`; on any error (`discard`,
    or an exception inside a `with` block) nothing is left at `path`.
    """

    def __init__(self, path: str | Path, *, institution: str, representer_id: str, dim: int, neighbours: int,
                 signing_key: Ed25519PrivateKey, server_key: X25519PublicKey, dtype: str = "float16",
                 pseudonymization: str, safety_net: dict | None = None, draws: int = 1,
                 summary: dict | None = None, chunk_bytes: int = CHUNK_BYTES):
        """`pseudonymization` is a key of PSEUDONYMIZATION_SCHEMES, `safety_net` and `draws` the
        header fields (none, 1: left out), `summary` the JSON object sealed in the first frame (none:
        {}); a value it does not accept raises ContributionError before anything is written."""
        if summary is None:
            summary = {}
        if type(summary) is not dict:
            raise ContributionError(f"the sealed summary must be a JSON object, got {summary!r}")
        if pseudonymization not in PSEUDONYMIZATION_SCHEMES:
            raise ValueError(f"pseudonymization must be one of {', '.join(PSEUDONYMIZATION_SCHEMES)}, "
                             f"got {pseudonymization!r}")
        self.path = Path(path)
        self._fields = {"format_version": FORMAT_VERSION, "institution": institution,
                        "signing_key_sha256": signer_sha256(signing_key.public_key()),
                        "representer_id": representer_id, "dim": dim, "dtype": dtype, "neighbours": neighbours,
                        "pseudonymization": PSEUDONYMIZATION_SCHEMES[pseudonymization], "nonce": secrets.token_hex(16)}
        if safety_net:
            self._fields["safety_net"] = safety_net
        if draws != 1:
            self._fields["draws"] = draws
        for name, value in self._fields.items():
            _check_field(name, value)
        self._signing_key, self._chunk_bytes = signing_key, chunk_bytes
        self._sealer = StreamSealer(server_key, bytes.fromhex(self._fields["nonce"]),
                                    _binding(self._fields, _KEY_FIELDS))
        self._pending = bytearray()
        self._digest = hashlib.sha256()
        self.sentences = self.tokens = 0
        self.header: ContributionHeader | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self._temporary = Path(temporary)
        self._file = os.fdopen(descriptor, "wb")
        try:
            self._write(MAGIC + self._sealer.ephemeral_public)
            self._pending += _canonical(summary)
            self._seal(final=False)
        except BaseException:
            self.discard()
            raise

    def _write(self, data: bytes) -> None:
        self._digest.update(data)
        self._file.write(data)

    def add(self, record: bytes) -> None:
        count = record_tokens(record)
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


def write_contribution(path: str | Path, records: Iterable[bytes], **options) -> ContributionHeader:
    """Write `records` with a `ContributionWriter(path, **options)`; returns the header."""
    with ContributionWriter(path, **options) as writer:
        for record in records:
            writer.add(record)
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
            if length > MAX_HEADER_BYTES:
                raise ContributionError(f"{path}: the contribution header of {length:,} bytes exceeds the limit of "
                                        f"{MAX_HEADER_BYTES:,} bytes")
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
        return ContributionHeader.from_bytes(header_bytes)
    except ContributionError as error:
        raise ContributionError(f"{path}: {error}") from None


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
    """The decrypted chunks of sentence records (the summary's frame left out); verifies the file
    first, on the call."""
    header = verify_contribution(path, institution_key)
    return islice(_decrypt(Path(path), server_key, header), 1, None)


def read_summary(path: str | Path, server_key: X25519PrivateKey, header: ContributionHeader) -> dict:
    """The sealed summary of the contribution at `path` whose `header` `verify_contribution`
    returned (its first frame, which the signed `body_sha256` covers; no other frame is read)."""
    path = Path(path)
    frames = _decrypt(path, server_key, header)
    first = next(frames)
    frames.close()
    try:
        summary = json.loads(first)
    except (ValueError, RecursionError):
        summary = None
    if type(summary) is not dict:
        raise ContributionError(f"{path}: the sealed summary is not a JSON object")
    return summary


def _decrypt(path: Path, server_key: X25519PrivateKey, header: ContributionHeader) -> Iterator[bytes]:
    """The frames of the verified file at `path` (the summary's first), opened under the bindings
    of its `header`."""
    start, fields = _trailer(path)[0], header.fields()
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
    return verified_sentences(path, server_key, header)


def verified_sentences(path: str | Path, server_key: X25519PrivateKey,
                       header: ContributionHeader) -> Iterator[ContributionSentence]:
    """Every sentence of the contribution at `path` whose `header` `verify_contribution` returned
    (it is not verified again), and a check of the header's counts at the end."""
    path = Path(path)
    sentences = tokens = 0
    for chunk in islice(_decrypt(path, server_key, header), 1, None):
        for sentence in decode_sentences(chunk, header.dim, header.dtype):
            sentences += 1
            tokens += len(sentence.tags)
            yield sentence
    if (sentences, tokens) != (header.sentences, header.tokens):
        raise ContributionError(f"{path}: {sentences} sentences and {tokens} tokens, but the header says "
                                f"{header.sentences} and {header.tokens}")
