"""Fixtures of the contribution tests: an institution's and a server's keys, random sentences,
a written contribution and its writer, the server's validation with the tests' expectations,
and `resigned`, the re-signing attacker of a contribution file."""

import json

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deidpool.contribution.container import END_MAGIC, SIGNATURE_CONTEXT, write_contribution
from deidpool.contribution.records import encode_sentence
from deidpool.contribution.validation import validate_contribution

DIM, TAGS = 6, 9


@pytest.fixture(scope="session")
def parties():
    """(institution signing key, server encryption key)."""
    return Ed25519PrivateKey.generate(), X25519PrivateKey.generate()


def random_sentences(count=60, seed=0):
    """`count` (unit vectors, tag ids, casing ids) sentences of 1 to 24 tokens."""
    rng = np.random.default_rng(seed)
    result = []
    for length in rng.integers(1, 25, size=count):
        vectors = rng.normal(size=(length, DIM))
        result.append((vectors / np.linalg.norm(vectors, axis=1, keepdims=True), rng.integers(0, TAGS, length),
                       rng.integers(0, 7, length)))
    return result


def write(path, parties, sentences, dtype="float16", **options):
    institution, server = parties
    records = [encode_sentence(*sentence, dtype=dtype) for sentence in sentences]
    return write_contribution(path, records, institution="site-a", representer_id="rep-1", dim=DIM, neighbours=100,
                              pseudonymization="groups", signing_key=institution, server_key=server.public_key(),
                              dtype=dtype, **{"chunk_bytes": 1000, **options})


@pytest.fixture(scope="module")
def written(tmp_path_factory, parties):
    """(path, header, sentences) of a contribution of 60 sentences in chunks of about 1,000 bytes."""
    path = tmp_path_factory.mktemp("dpc") / "a.dpc"
    sentences = random_sentences()
    return path, write(path, parties, sentences), sentences


def validate(path, parties, **expected):
    institution, server = parties
    return validate_contribution(path, server, institution.public_key(),
                                 **{"representer_ids": ["rep-1"], "dim": DIM, "num_tags": TAGS, **expected})


def resigned(data: bytes, key, drop: tuple[str, ...] = (), raw_header: bytes | None = None, **changes) -> bytes:
    """The contribution file `data` with `changes` made to its header (and the fields `drop`
    removed; or the header replaced by the bytes `raw_header`) and the header signed by `key`,
    ciphertext and nonce untouched: what an institution that took another's file before its
    upload can make of it."""
    length = int.from_bytes(data[-12:-8], "big")  # footer: header length (>u4) | END_MAGIC (8)
    start = len(data) - 12 - 64 - length
    fields = {name: value for name, value in json.loads(data[start:start + length]).items() if name not in drop}
    header = raw_header if raw_header is not None else json.dumps({**fields, **changes}, sort_keys=True).encode()
    return data[:start] + header + key.sign(SIGNATURE_CONTEXT + header) + len(header).to_bytes(4, "big") + END_MAGIC
