"""The sentence record of a contribution and its binary codec: explicit little-endian dtypes,
no pickle path.

A record is `<u2 n>`, n tag ids (`<u2`), n casing ids (`u1`) and n x dim vector components
(`<f2` or `<f4`, the header's `dtype`), nothing else: no text, offsets or document ids fit.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

DTYPES = {"float16": "<f2", "float32": "<f4"}
_LENGTH = struct.Struct("<H")


class ContributionError(ValueError):
    """A contribution that is malformed, altered, unsigned by the claimed institution, or not
    what the server expects; the message says which."""


class ContributionSentence(NamedTuple):
    vectors: np.ndarray  # (tokens, dim)
    tags: np.ndarray  # (tokens,) tag ids
    casing: np.ndarray  # (tokens,) casing ids


def record_size(tokens: int, dim: int, dtype: str) -> int:
    """Bytes of the record of a sentence of `tokens` tokens."""
    return _LENGTH.size + tokens * (3 + dim * np.dtype(DTYPES[dtype]).itemsize)


def record_tokens(record: bytes) -> int:
    """The token count a record starts with."""
    return _LENGTH.unpack_from(record)[0]


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
    for position, count in _records(data, dim, dtype):
        tags_at, casing_at = position + _LENGTH.size, position + _LENGTH.size + 2 * count
        vectors_at = casing_at + count
        yield ContributionSentence(
            np.frombuffer(data, vector_type, count * dim, vectors_at).reshape(count, dim),
            np.frombuffer(data, "<u2", count, tags_at), np.frombuffer(data, "u1", count, casing_at))


def split_records(data: bytes, dim: int, dtype: str) -> Iterator[bytes]:
    """The records of a run of whole records, one by one."""
    for position, count in _records(data, dim, dtype):
        yield data[position:position + record_size(count, dim, dtype)]


def _records(data: bytes, dim: int, dtype: str) -> Iterator[tuple[int, int]]:
    """(offset, token count) of every record of a run of whole records."""
    position = 0
    while position < len(data):
        if position + _LENGTH.size > len(data):
            raise ContributionError("a sentence record is cut short")
        (count,) = _LENGTH.unpack_from(data, position)
        end = position + record_size(count, dim, dtype)
        if count == 0 or end > len(data):
            raise ContributionError("a sentence record is empty or cut short")
        yield position, count
        position = end
