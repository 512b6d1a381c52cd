"""Tests of the chunked AEAD stream: round trip, and refusal of reordered, dropped, flagged
or foreign chunks, and of chunks opened under another context or associated data."""

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deidpool.contribution.sealing import SealError, StreamOpener, StreamSealer

SALT = b"0123456789abcdef"
CONTEXT = b"header digest"


@pytest.fixture(scope="module")
def server():
    return X25519PrivateKey.generate()


def _sealed(server, chunks, final_data=b""):
    sealer = StreamSealer(server.public_key(), SALT, CONTEXT)
    flags = [i == len(chunks) - 1 for i in range(len(chunks))]
    return sealer.ephemeral_public, [sealer.seal(chunk, final, final_data if final else b"")
                                     for chunk, final in zip(chunks, flags)]


def _open_all(server, ephemeral, ciphertexts, flags, salt=SALT, context=CONTEXT, final_data=b""):
    opener = StreamOpener(server, ephemeral, salt, context)
    plaintexts = [opener.open(ciphertext, final, final_data if final else b"")
                  for ciphertext, final in zip(ciphertexts, flags)]
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


@pytest.mark.parametrize("case", ["reordered", "flag flipped", "wrong key", "wrong salt", "after final",
                                  "wrong context", "wrong final associated data"])
def test_tampering_is_refused(server, case):
    ephemeral, ciphertexts = _sealed(server, [b"a", b"b", b"c"], final_data=b"closing")
    flags, key, salt, context, final_data = [False, False, True], server, SALT, CONTEXT, b"closing"
    if case == "reordered":
        ciphertexts = [ciphertexts[1], ciphertexts[0], ciphertexts[2]]
    elif case == "flag flipped":
        flags = [False, True, True]
    elif case == "wrong key":
        key = X25519PrivateKey.generate()
    elif case == "wrong salt":
        salt = b"x" * 16
    elif case == "wrong context":
        context = b"another header digest"
    elif case == "wrong final associated data":
        final_data = b"another closing"
    else:
        ciphertexts, flags = [*ciphertexts, ciphertexts[2]], [*flags, True]
    with pytest.raises(SealError):
        _open_all(key, ephemeral, ciphertexts, flags, salt, context, final_data)


def test_nothing_can_be_sealed_after_the_final_chunk(server):
    sealer = StreamSealer(server.public_key(), SALT, CONTEXT)
    sealer.seal(b"last", final=True)
    with pytest.raises(SealError, match="finished"):
        sealer.seal(b"more")
