"""Fixtures of the client tests: loaded keys, notes on disk, the verified tiny pipeline and its
word vectors (the keys, documents and pipeline bundle themselves are in tests/conftest.py), and a
stand-in pseudonymizer."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from deidpool.corpus.formats import write_corpus
from deidpool.representer import keys

from ..conftest import EMBEDDING_DIM, REPR_SIZE, TAGS, UNITS


@pytest.fixture(scope="session")
def loaded_keys(key_files):
    return SimpleNamespace(
        provider=keys.load_public_key(key_files.provider.public, keys.SIGNING),
        institution=keys.load_private_key(key_files.institution.private, keys.SIGNING),
        institution_public=keys.load_public_key(key_files.institution.public, keys.SIGNING),
        server=keys.load_private_key(key_files.server.private, keys.ENCRYPTION),
        server_public=keys.load_public_key(key_files.server.public, keys.ENCRYPTION))


@pytest.fixture(scope="session")
def notes_dir(workspace, documents) -> Path:
    write_corpus(documents, workspace / "notes", "i2b2")
    return workspace / "notes"


@pytest.fixture(scope="session")
def pipeline(pipeline_path, loaded_keys):
    from deidpool.representer.bundle import open_bundle

    return open_bundle(pipeline_path, loaded_keys.provider)


@pytest.fixture(scope="session")
def embeddings(pipeline):
    return pipeline.load_embeddings()


@pytest.fixture(scope="session")
def chars_pipeline(workspace, documents, key_files, loaded_keys):
    """The tiny pipeline with a representer that reads each token's characters too."""
    from deidpool.representer.bundle import open_bundle
    from deidpool.representer.tiny import publish_tiny_pipeline

    words = sorted({word.lower() for document in documents for word in document.text.split() if word.isalpha()})
    signing_key = keys.load_private_key(key_files.provider.private, keys.SIGNING)
    path = publish_tiny_pipeline(workspace / "chars", signing_key, words, TAGS, embedding_dim=EMBEDDING_DIM,
                                 repr_size=REPR_SIZE, units=UNITS, chars=True)
    return open_bundle(path, loaded_keys.provider)


def every_phi_token_replaced(self, words, tags, rng, only=None):
    """A stand-in for `Pseudonymizer.replaced`, whatever the scheme: every PHI token (tag not "O"; or
    only positions `only`) becomes "SURROGATE"."""
    positions = set(only) if only is not None else {i for i, tag in enumerate(tags) if tag != "O"}
    return ["SURROGATE" if i in positions else word for i, word in enumerate(words)]
