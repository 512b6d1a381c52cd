"""Fixtures of the pooled training tests: `pool`, with institution and server keys, synthetic
sentences (the first vector component of every token is its sentence's number) and a writer
of contributions."""

from types import SimpleNamespace

import numpy as np
import pytest

from client.contribution import encode_sentence, write_contribution
from client.identity import create_institution_keys
from representer import keys

DIM, REPRESENTER = 6, "rep-test"
TAGS = ["O", "B-NAME", "I-NAME"]


def synthetic_sentences(first: int, count: int, seed: int = 0) -> list[tuple]:
    """`count` (vectors, tags, casing) sentences numbered from `first`; a token is PHI
    ("B-NAME") when its second vector component is positive."""
    rng = np.random.default_rng([seed, first])
    sentences = []
    for number, length in enumerate(rng.integers(2, 12, size=count), first):
        vectors = rng.normal(size=(length, DIM))
        vectors[:, 0] = number
        sentences.append((vectors, (vectors[:, 1] > 0).astype(int), rng.integers(0, 5, length)))
    return sentences


@pytest.fixture(scope="session")
def pool(key_files, tmp_path_factory):
    """The shared server key and institution site-a (tests/conftest.py `key_files`) and a second
    institution, site-b; `pool.write(path, institution, sentences, representer_id=REPRESENTER)`
    writes a contribution and returns its header."""
    site_b = create_institution_keys(tmp_path_factory.mktemp("site-b"), "site-b")
    institution_keys = {name: keys.load_private_key(pair.private, keys.SIGNING)
                        for name, pair in (("site-a", key_files.institution), ("site-b", site_b))}
    server_key = keys.load_private_key(key_files.server.private, keys.ENCRYPTION)

    def write(path, institution, sentences, representer_id=REPRESENTER):
        records = [encode_sentence(*sentence) for sentence in sentences]
        return write_contribution(path, records, institution=institution, representer_id=representer_id, dim=DIM,
                                  signing_key=institution_keys[institution], server_key=server_key.public_key())

    return SimpleNamespace(dim=DIM, representer=REPRESENTER, tags=TAGS, server_key=server_key,
                           institution_keys=institution_keys, sentences=synthetic_sentences, write=write)
