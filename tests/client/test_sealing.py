"""Tests of the chunked AEAD stream: round trip, and refusal of reordered, dropped, flagged
or foreign chunks."""

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from client.sealing import SealError, StreamOpener, StreamSealer

SALT = b"0123456789abcdef"


@pytest.fixture(scope="module")
def server():
    return X25519PrivateKey.generate()


def _sealed(server, chunks):
    sealer = StreamSealer(server.public_key(), SALT)
    return sealer.ephemeral_public, [sealer.seal(chunk, final=i == len(chunks) - 1) for i, chunk in enumerate(chunks)]


def _open_all(server, ephemeral, ciphertexts, flags, salt=SALT):
    opener = StreamOpener(server, ephemeral, salt)
    plaintexts = [opener.open(ciphertext, final) for ciphertext, final in zip(ciphertexts, flags)]
    return plaintexts, opener.finished


def test_round_trip(server):
    chunks = [b"first", b"", b"third" * 1000]
    ephemeral, ciphertexts = _sealed(server, chunks)
    assert _open_all(server, ephemeral, ciphertexts, [False, False, True]) == (chunks, True)
    assert all(chunk not in ciphertext for chunk, ciphertext in zip(chunks[::2], ciphertexts[::2]))


def test_each_stream_has_its_own_key(server):
    assert _sealed(server, [b"same"])[1] != _sealed(server, [b"same"])[1]


def test_dropped_final_chunk_leaves_the_stream_unfinished(server):
    ephemeral, ciphertexts = _sealed(server, [b"a", b"b", b"c"])
    assert _open_all(server, ephemeral, ciphertexts[:2], [False, False]) == ([b"a", b"b"], False)


@pytest.mark.parametrize("case", ["reordered", "flag flipped", "wrong key", "wrong salt", "after final"])
def test_tampering_is_refused(server, case):
    ephemeral, ciphertexts = _sealed(server, [b"a", b"b", b"c"])
    flags, key, salt = [False, False, True], server, SALT
    if case == "reordered":
        ciphertexts = [ciphertexts[1], ciphertexts[0], ciphertexts[2]]
    elif case == "flag flipped":
        flags = [False, True, True]
    elif case == "wrong key":
        key = X25519PrivateKey.generate()
    elif case == "wrong salt":
        salt = b"x" * 16
    else:
        ciphertexts, flags = [*ciphertexts, ciphertexts[2]], [*flags, True]
    with pytest.raises(SealError):
        _open_all(key, ephemeral, ciphertexts, flags, salt)


def test_nothing_can_be_sealed_after_the_final_chunk(server):
    sealer = StreamSealer(server.public_key(), SALT)
    sealer.seal(b"last", final=True)
    with pytest.raises(SealError, match="finished"):
        sealer.seal(b"more")
