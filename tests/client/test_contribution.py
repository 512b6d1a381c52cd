"""Tests of the contribution record: codec round trip, signature and encryption checks,
tampering and truncation, the binding of the ciphertext to its sender and header, the
server's validation, and atomic writing."""

import dataclasses
import errno

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from client import contribution
from client.contribution import (
    PSEUDONYMIZATION_SCHEMES,
    BindingError,
    ContributionError,
    ContributionHeader,
    ContributionWriter,
    decrypt_payload,
    encode_sentence,
    iter_sentences,
    read_header,
    record_size,
    signer_sha256,
    validate_contribution,
    verify_contribution,
    write_contribution,
)

from .conftest import resigned

DIM, TAGS = 6, 9


@pytest.fixture(scope="module")
def parties():
    return Ed25519PrivateKey.generate(), X25519PrivateKey.generate()


def _sentences(count=60, seed=0):
    rng = np.random.default_rng(seed)
    result = []
    for length in rng.integers(1, 25, size=count):
        vectors = rng.normal(size=(length, DIM))
        result.append((vectors / np.linalg.norm(vectors, axis=1, keepdims=True), rng.integers(0, TAGS, length),
                       rng.integers(0, 7, length)))
    return result


def _write(path, parties, sentences, dtype="float16", **options):
    institution, server = parties
    records = [encode_sentence(*sentence, dtype=dtype) for sentence in sentences]
    return write_contribution(path, records, institution="site-a", representer_id="rep-1", dim=DIM, neighbours=100,
                              pseudonymization="groups", signing_key=institution, server_key=server.public_key(),
                              dtype=dtype, **{"chunk_bytes": 1000, **options})


@pytest.fixture(scope="module")
def written(tmp_path_factory, parties):
    path = tmp_path_factory.mktemp("dpc") / "a.dpc"
    sentences = _sentences()
    return path, _write(path, parties, sentences), sentences


def _validate(path, parties, **expected):
    institution, server = parties
    return validate_contribution(path, server, institution.public_key(),
                                 **{"representer_ids": ["rep-1"], "dim": DIM, "num_tags": TAGS, **expected})


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_round_trip_keeps_every_sentence_in_order(tmp_path, parties, dtype):
    sentences = _sentences(seed=1)
    header = _write(tmp_path / "a.dpc", parties, sentences, dtype=dtype)
    institution, server = parties
    decoded = list(iter_sentences(tmp_path / "a.dpc", server, institution.public_key()))
    assert len(decoded) == header.sentences == len(sentences)
    assert header.tokens == sum(len(tags) for _, tags, _ in sentences)
    for (vectors, tags, casing), got in zip(sentences, decoded):
        np.testing.assert_array_equal(got.tags, tags)
        np.testing.assert_array_equal(got.casing, casing)
        np.testing.assert_allclose(got.vectors, vectors, atol=1e-3 if dtype == "float16" else 1e-7)
        assert got.vectors.dtype == np.dtype(dtype)


def test_header_holds_only_the_agreed_fields(written, parties):
    path, header, _ = written
    assert {field.name for field in dataclasses.fields(ContributionHeader)} == {
        "institution", "signing_key_sha256", "representer_id", "sentences", "tokens", "dim", "dtype", "neighbours",
        "pseudonymization", "reidentification_bound", "created", "nonce", "body_sha256", "format_version"}
    assert header.neighbours == 100 and header.reidentification_bound == {} and header.format_version == 3
    assert header.signing_key_sha256 == signer_sha256(parties[0].public_key())
    assert read_header(path) == verify_contribution(path, parties[0].public_key()) == header
    assert len(bytes.fromhex(header.nonce)) == 16


def test_payload_is_exactly_the_records(written, parties):
    path, header, sentences = written
    institution, server = parties
    payload = b"".join(decrypt_payload(path, server, institution.public_key()))
    assert len(payload) == sum(record_size(len(tags), DIM, "float16") for _, tags, _ in sentences)


def test_validation_accepts_a_good_contribution(written, parties):
    assert _validate(written[0], parties) == written[1]


@pytest.mark.parametrize("expected, message", [
    ({"representer_ids": ["rep-2"]}, "representer id rep-1 is not one the server expects"),
    ({"dim": DIM + 1}, "vectors of size 6"),
    ({"num_tags": 3}, "tag id >= 3"),
])
def test_validation_rejects_what_the_server_does_not_expect(written, parties, expected, message):
    with pytest.raises(ContributionError, match=message):
        _validate(written[0], parties, **expected)


def test_every_flipped_byte_is_rejected(written, parties, tmp_path):
    path, _, _ = written
    data = path.read_bytes()
    for position in np.linspace(0, len(data) - 1, 97).astype(int):
        altered = bytearray(data)
        altered[position] ^= 0x01
        (tmp_path / "b.dpc").write_bytes(altered)
        with pytest.raises(ContributionError):
            _validate(tmp_path / "b.dpc", parties)


def test_wrong_institution_or_server_key_is_rejected(written, parties):
    path = written[0]
    with pytest.raises(ContributionError, match="signature does not verify"):
        _validate(path, (Ed25519PrivateKey.generate(), parties[1]))
    with pytest.raises(ContributionError, match="does not decrypt"):
        _validate(path, (parties[0], X25519PrivateKey.generate()))


@pytest.mark.parametrize("claim", ["as it was", "as the thief's"])
def test_a_header_re_signed_by_another_institution_does_not_verify_or_decrypt(written, parties, tmp_path, claim):
    """Attribution theft: another institution re-signs the header of a taken file with its own
    key, ciphertext and nonce untouched, naming itself (or not) in the header."""
    thief = Ed25519PrivateKey.generate()
    changes = {"institution": "site-b", "signing_key_sha256": signer_sha256(thief.public_key())}
    (tmp_path / "b.dpc").write_bytes(resigned(written[0].read_bytes(), thief,
                                              **(changes if claim == "as the thief's" else {})))
    if claim == "as it was":
        with pytest.raises(ContributionError, match="names another signing key .* re-signed by another institution"):
            verify_contribution(tmp_path / "b.dpc", thief.public_key())
    else:
        assert verify_contribution(tmp_path / "b.dpc", thief.public_key()).institution == "site-b"
        with pytest.raises(BindingError, match="does not decrypt .* re-signed after sealing"):
            list(iter_sentences(tmp_path / "b.dpc", parties[1], thief.public_key()))
        with pytest.raises(BindingError):
            _validate(tmp_path / "b.dpc", (thief, parties[1]))


# A change to each header field bound to the ciphertext (every field but the three that
# verification checks: the format version, the signing key's hash and the ciphertext's hash).
CHANGED = {"institution": "site-b", "representer_id": "rep-2", "dim": DIM + 1, "dtype": "float32", "neighbours": 10,
           "pseudonymization": PSEUDONYMIZATION_SCHEMES["neighbours"], "nonce": "00" * 16, "sentences": 61, "tokens": 1,
           "created": "2001-02-03T04:05:06+00:00", "reidentification_bound": {"neighbours": 100}}


def test_every_header_field_but_those_verification_checks_is_bound():
    assert set(CHANGED) | {"format_version", "signing_key_sha256", "body_sha256"} == {
        field.name for field in dataclasses.fields(ContributionHeader)}


@pytest.mark.parametrize("field", CHANGED)
def test_a_header_field_changed_after_sealing_breaks_decryption(written, parties, tmp_path, field):
    """The institution itself re-signs its header with one field changed: the signature holds,
    the ciphertext no longer opens (a file re-signed unchanged still does)."""
    institution, server = parties
    data = written[0].read_bytes()
    (tmp_path / "same.dpc").write_bytes(resigned(data, institution))
    assert len(list(iter_sentences(tmp_path / "same.dpc", server, institution.public_key()))) == written[1].sentences
    (tmp_path / "b.dpc").write_bytes(resigned(data, institution, **{field: CHANGED[field]}))
    assert getattr(verify_contribution(tmp_path / "b.dpc", institution.public_key()), field) == CHANGED[field]
    with pytest.raises(BindingError, match="changed or re-signed after sealing"):
        list(iter_sentences(tmp_path / "b.dpc", server, institution.public_key()))


@pytest.mark.parametrize("version", [2, 4, "3"])
def test_other_format_versions_are_refused_naming_the_version_and_the_field(written, parties, tmp_path, version):
    (tmp_path / "b.dpc").write_bytes(resigned(written[0].read_bytes(), parties[0], format_version=version))
    for read in (read_header, lambda path: verify_contribution(path, parties[0].public_key())):
        with pytest.raises(ContributionError, match=f"format_version is {version!r}, but only format_version 3"):
            read(tmp_path / "b.dpc")


@pytest.mark.parametrize("cut", [1, 12, 100, 500, 2000])
def test_truncated_file_is_rejected(written, parties, tmp_path, cut):
    data = written[0].read_bytes()
    (tmp_path / "b.dpc").write_bytes(data[:-cut])
    with pytest.raises(ContributionError, match="truncated|altered"):
        _validate(tmp_path / "b.dpc", parties)


def test_dropped_final_chunk_is_detected_even_when_signed(tmp_path, parties, monkeypatch):
    """A file whose last chunk is not sealed as final is refused, even with a valid signature."""
    real_seal = ContributionWriter._seal
    monkeypatch.setattr(ContributionWriter, "_seal", lambda self, final, associated_data=b"": real_seal(self, False))
    _write(tmp_path / "a.dpc", parties, _sentences(count=5))
    with pytest.raises(ContributionError, match="final chunk is missing"):
        _validate(tmp_path / "a.dpc", parties)


def test_not_a_contribution_file(tmp_path, parties):
    (tmp_path / "x.dpc").write_bytes(b"hello" * 100)
    with pytest.raises(ContributionError, match="truncated or not a contribution"):
        read_header(tmp_path / "x.dpc")
    with pytest.raises(ContributionError, match="cannot read"):
        read_header(tmp_path / "missing.dpc")


def test_records_of_another_size_or_dtype_are_refused(tmp_path, parties):
    vectors, tags, casing = _sentences(count=1)[0]
    with pytest.raises(ValueError, match="does not match"):
        _write(tmp_path / "a.dpc", parties, [(vectors[:, :3], tags, casing)])
    with pytest.raises(ValueError, match="one vector, tag and casing id each"):
        encode_sentence(vectors, tags[:-1], casing)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("failing_write", [1, 3])
def test_disk_full_while_writing_leaves_no_file(tmp_path, parties, monkeypatch, failing_write):
    real_write, calls = ContributionWriter._write, []

    def disk_full(self, data):
        calls.append(data)
        if len(calls) == failing_write:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, data)

    monkeypatch.setattr(ContributionWriter, "_write", disk_full)
    with pytest.raises(OSError, match="No space left"):
        _write(tmp_path / "a.dpc", parties, _sentences(count=40))
    assert list(tmp_path.iterdir()) == []


def test_an_exception_inside_the_writer_block_leaves_no_file(tmp_path, parties):
    institution, server = parties
    with pytest.raises(RuntimeError):
        with ContributionWriter(tmp_path / "a.dpc", institution="site-a", representer_id="rep-1", dim=DIM,
                                neighbours=100, pseudonymization="groups", signing_key=institution,
                                server_key=server.public_key()) as writer:
            writer.add(encode_sentence(*_sentences(count=1)[0]))
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_malformed_signed_header_is_rejected(tmp_path, parties, monkeypatch):
    """Even a correctly signed header must have exactly the agreed fields and types."""
    monkeypatch.setattr(contribution.ContributionHeader, "to_bytes",
                        lambda self: b'{"institution": "site-a", "extra": 1}')
    _write(tmp_path / "a.dpc", parties, _sentences(count=2))
    with pytest.raises(ContributionError, match="header is malformed"):
        verify_contribution(tmp_path / "a.dpc", parties[0].public_key())
