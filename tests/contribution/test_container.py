"""Tests of the contribution file: round trip, the header's fields and their checks on both
sides, signature and encryption checks, tampering and truncation, the binding of the ciphertext
to its sender and header, the sealed summary, atomic writing, and older format versions refused."""

import dataclasses
import errno
import hashlib
import json
from datetime import datetime, timezone

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deidpool.contribution import container, sealing
from deidpool.contribution.container import (
    PSEUDONYMIZATION_SCHEMES,
    BindingError,
    ContributionHeader,
    ContributionWriter,
    decrypt_payload,
    iter_sentences,
    read_header,
    read_summary,
    signer_sha256,
    verify_contribution,
)
from deidpool.contribution.records import ContributionError, encode_sentence, record_size

from .conftest import DIM, random_sentences, resigned, validate, write


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_round_trip_keeps_every_sentence_in_order(tmp_path, parties, dtype):
    sentences = random_sentences(seed=1)
    header = write(tmp_path / "a.dpc", parties, sentences, dtype=dtype)
    institution, server = parties
    decoded = list(iter_sentences(tmp_path / "a.dpc", server, institution.public_key()))
    assert len(decoded) == header.sentences == len(sentences)
    assert header.tokens == sum(len(tags) for _, tags, _ in sentences)
    for (vectors, tags, casing), got in zip(sentences, decoded):
        np.testing.assert_array_equal(got.tags, tags)
        np.testing.assert_array_equal(got.casing, casing)
        np.testing.assert_allclose(got.vectors, vectors, atol=1e-3 if dtype == "float16" else 1e-7)
        assert got.vectors.dtype == np.dtype(dtype)


# SHA-256 of the file `test_the_bytes_on_disk_are_those_of_format_version_4` writes (format
# version 4: the sealed summary in the first frame, no re-identification bound in the header).
FORMAT_4_SHA256 = {"float16": "1ba22a3ea3aa23fbf6ee055680074930cc73a020a00a22fa2720b913d5e74258",
                   "float32": "d83a3cb8fe66b02eb0c83e489722131edf98f5b567cc54387810303316593061"}


@pytest.mark.parametrize("dtype", FORMAT_4_SHA256)
def test_the_bytes_on_disk_are_those_of_format_version_4(tmp_path, monkeypatch, dtype):
    """With fixed keys, nonce, ephemeral key and creation time, a contribution's bytes are those
    of format version 4: the format did not move."""
    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

    monkeypatch.setattr(container.secrets, "token_hex", lambda size: "5a" * size)
    monkeypatch.setattr(container, "datetime", Clock)
    monkeypatch.setattr(sealing, "X25519PrivateKey", type("Ephemeral", (), {
        "generate": staticmethod(lambda: X25519PrivateKey.from_private_bytes(bytes(range(3, 35))))}))
    institution = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
    server = X25519PrivateKey.from_private_bytes(bytes(range(2, 34)))
    records = [encode_sentence(np.linspace(-1, 1, 6 * n).reshape(n, 6), np.arange(n) % 9, np.arange(n) % 7, dtype)
               for n in (1, 5, 17, 40) * 10]
    path = tmp_path / "a.dpc"
    container.write_contribution(path, records, institution="site-a", representer_id="rep-1", dim=6, neighbours=100,
                                 pseudonymization="groups", signing_key=institution, server_key=server.public_key(),
                                 dtype=dtype, chunk_bytes=1000, summary={"reidentification_bound": {"neighbours": 100}})
    assert hashlib.sha256(path.read_bytes()).hexdigest() == FORMAT_4_SHA256[dtype]
    assert len(list(iter_sentences(path, server, institution.public_key()))) == len(records)


def test_header_holds_only_the_agreed_fields(written, parties):
    path, header, _ = written
    assert {field.name for field in dataclasses.fields(ContributionHeader)} == {
        "institution", "signing_key_sha256", "representer_id", "sentences", "tokens", "dim", "dtype", "neighbours",
        "pseudonymization", "safety_net", "draws", "created", "nonce", "body_sha256", "format_version"}
    assert header.neighbours == 100 and header.format_version == 4
    assert header.safety_net == {} and "safety_net" not in json.loads(header.to_bytes())
    assert header.draws == 1 and "draws" not in json.loads(header.to_bytes())
    assert header.signing_key_sha256 == signer_sha256(parties[0].public_key())
    assert read_header(path) == verify_contribution(path, parties[0].public_key()) == header
    assert len(bytes.fromhex(header.nonce)) == 16


def test_the_sealed_summary_reads_back_with_the_server_key_only(tmp_path, parties):
    """The summary is sealed: not in the header's bytes, read back whole with the server's key, {}
    when none was given, and refused by the writer unless a JSON object."""
    institution, server = parties
    summary = {"reidentification_bound": {"overall": {"mean_success": {"empirical": 0.41}}},
               "safety_net": {"flagged_tokens": 2}}
    header = write(tmp_path / "a.dpc", parties, random_sentences(count=3), summary=summary)
    assert b"0.41" not in header.to_bytes() and b"flagged_tokens" not in header.to_bytes()
    verified = verify_contribution(tmp_path / "a.dpc", institution.public_key())
    assert read_summary(tmp_path / "a.dpc", server, verified) == summary
    with pytest.raises(BindingError):
        read_summary(tmp_path / "a.dpc", X25519PrivateKey.generate(), verified)
    assert len(list(iter_sentences(tmp_path / "a.dpc", server, institution.public_key()))) == 3
    empty = write(tmp_path / "b.dpc", parties, random_sentences(count=3))
    assert read_summary(tmp_path / "b.dpc", server, empty) == {}
    with pytest.raises(ContributionError, match="the sealed summary must be a JSON object, got 0.5"):
        write(tmp_path / "c.dpc", parties, random_sentences(count=2), summary=0.5)
    assert not (tmp_path / "c.dpc").exists()


def test_every_header_field_is_documented():
    documented = ContributionHeader.__doc__.split("Its fields:")[1]
    for field in dataclasses.fields(ContributionHeader):
        assert f"{field.name}:" in documented or f"{field.name}," in documented, field.name


def test_payload_is_exactly_the_records(written, parties):
    path, header, sentences = written
    institution, server = parties
    payload = b"".join(decrypt_payload(path, server, institution.public_key()))
    assert len(payload) == sum(record_size(len(tags), DIM, "float16") for _, tags, _ in sentences)


def test_every_flipped_byte_is_rejected(written, parties, tmp_path):
    path, _, _ = written
    data = path.read_bytes()
    for position in np.linspace(0, len(data) - 1, 97).astype(int):
        altered = bytearray(data)
        altered[position] ^= 0x01
        (tmp_path / "b.dpc").write_bytes(altered)
        with pytest.raises(ContributionError):
            validate(tmp_path / "b.dpc", parties)


def test_wrong_institution_or_server_key_is_rejected(written, parties):
    path = written[0]
    with pytest.raises(ContributionError, match="signature does not verify"):
        validate(path, (Ed25519PrivateKey.generate(), parties[1]))
    with pytest.raises(ContributionError, match="does not decrypt"):
        validate(path, (parties[0], X25519PrivateKey.generate()))


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
            validate(tmp_path / "b.dpc", (thief, parties[1]))


# A change to each header field bound to the ciphertext (every field but the three that
# verification checks: the format version, the signing key's hash and the ciphertext's hash).
CHANGED = {"institution": "site-b", "representer_id": "rep-2", "dim": DIM + 1, "dtype": "float32", "neighbours": 10,
           "pseudonymization": PSEUDONYMIZATION_SCHEMES["neighbours"], "nonce": "00" * 16, "sentences": 61, "tokens": 1,
           "created": "2001-02-03T04:05:06+00:00", "safety_net": {"finders": ["patterns"]}, "draws": 3}


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


@pytest.mark.parametrize(("field", "value", "absent"), [
    ("safety_net", {"finders": ["patterns"]}, {}),
    ("draws", 3, 1)])
def test_an_optional_field_is_signed_bound_and_read_back(tmp_path, parties, field, value, absent):
    """An optional field: written when given, read back, and bound to the ciphertext (a file
    re-signed without it, as files written before it are, reads as `absent` and does not decrypt)."""
    institution, server = parties
    header = write(tmp_path / "a.dpc", parties, random_sentences(count=3), **{field: value})
    verified = verify_contribution(tmp_path / "a.dpc", institution.public_key())
    assert getattr(header, field) == value == getattr(verified, field)
    assert len(list(iter_sentences(tmp_path / "a.dpc", server, institution.public_key()))) == 3
    (tmp_path / "b.dpc").write_bytes(resigned((tmp_path / "a.dpc").read_bytes(), institution, drop=(field,)))
    assert getattr(verify_contribution(tmp_path / "b.dpc", institution.public_key()), field) == absent
    with pytest.raises(BindingError, match="changed or re-signed after sealing"):
        list(iter_sentences(tmp_path / "b.dpc", server, institution.public_key()))


def test_a_header_whose_sentences_are_not_whole_draws_is_refused(tmp_path, parties):
    write(tmp_path / "a.dpc", parties, random_sentences(count=4))
    (tmp_path / "b.dpc").write_bytes(resigned((tmp_path / "a.dpc").read_bytes(), parties[0], draws=3))
    with pytest.raises(ContributionError, match=r"sentences must be a multiple of draws \(3\), got 4"):
        verify_contribution(tmp_path / "b.dpc", parties[0].public_key())


@pytest.mark.parametrize("version", [2, 3, 5, "4"])
def test_other_format_versions_are_refused_naming_the_file_the_version_and_the_field(written, parties, tmp_path,
                                                                                    version):
    """Files of format version 3 (the re-identification bound in their header) and before are refused."""
    (tmp_path / "b.dpc").write_bytes(resigned(written[0].read_bytes(), parties[0], format_version=version))
    for read in (read_header, lambda path: verify_contribution(path, parties[0].public_key())):
        with pytest.raises(ContributionError,
                           match=f"b.dpc: the header's format_version is {version!r}, but only format_version 4"):
            read(tmp_path / "b.dpc")


# A signed header with one field of another type or out of range, and what the refusal says.
ILL_FORMED = {
    "institution": ("", "institution must be a non-empty string, got ''"),
    "signing_key_sha256": ("AB" * 32, "signing_key_sha256 must be a SHA-256 in lowercase hex"),
    "representer_id": (7, "representer_id must be a non-empty string, got 7"),
    "sentences": (-1, "sentences must be a whole number >= 0, got -1"),
    "tokens": (True, "tokens must be a whole number >= 0, got True"),
    "dim": ("6", "dim must be a whole number >= 1, got '6'"),
    "dtype": ("float64", "dtype must be one of float16, float32, got 'float64'"),
    "neighbours": (0, "neighbours must be a whole number >= 1, got 0"),
    "pseudonymization": ("groups", "pseudonymization must be one of embedding-neighbours"),
    "safety_net": ({"finders": ["patterns"], "flagged_tokens": 2},  # the counts belong in the sealed summary
                   r'safety_net must be \{\} or \{"finders": a list of strings\}, got'),
    "draws": (0, "draws must be a whole number >= 1, got 0"),
    "created": ("yesterday", "created must be an ISO 8601 time, got 'yesterday'"),
    "nonce": ("00" * 8, "nonce must be 16 bytes in lowercase hex"),
    "body_sha256": (None, "body_sha256 must be a SHA-256 in lowercase hex, got None"),
}


def test_every_header_field_is_checked_when_read():
    assert set(ILL_FORMED) | {"format_version"} == {field.name for field in dataclasses.fields(ContributionHeader)}


@pytest.mark.parametrize("field", ILL_FORMED)
def test_a_signed_header_with_an_ill_typed_or_out_of_range_field_is_refused_naming_it(written, parties, tmp_path,
                                                                                      field):
    value, message = ILL_FORMED[field]
    (tmp_path / "b.dpc").write_bytes(resigned(written[0].read_bytes(), parties[0], **{field: value}))
    for read in (read_header, lambda path: verify_contribution(path, parties[0].public_key())):
        with pytest.raises(ContributionError, match=f"b.dpc: the contribution header is malformed: {message}"):
            read(tmp_path / "b.dpc")


@pytest.mark.parametrize("change, message", [
    (lambda fields: {name: value for name, value in fields.items() if name not in ("dim", "nonce")},
     "it lacks dim, nonce"),
    (lambda fields: {**fields, "extra": 1}, "unknown fields extra"),
])
def test_a_signed_header_lacking_a_field_or_with_an_unknown_one_is_refused_naming_it(tmp_path, parties, monkeypatch,
                                                                                    change, message):
    real_to_bytes = ContributionHeader.to_bytes
    monkeypatch.setattr(ContributionHeader, "to_bytes",
                        lambda self: json.dumps(change(json.loads(real_to_bytes(self))), sort_keys=True).encode())
    write(tmp_path / "a.dpc", parties, random_sentences(count=2))
    with pytest.raises(ContributionError, match=f"header is malformed: {message}"):
        verify_contribution(tmp_path / "a.dpc", parties[0].public_key())


@pytest.mark.parametrize("option, value, message", [
    ("institution", "", "institution must be a non-empty string"),
    ("representer_id", "", "representer_id must be a non-empty string"),
    ("dim", 0, "dim must be a whole number >= 1, got 0"),
    ("dtype", "float64", "dtype must be one of float16, float32, got 'float64'"),
    ("neighbours", 0, "neighbours must be a whole number >= 1, got 0"),
    ("neighbours", 2.5, "neighbours must be a whole number >= 1, got 2.5"),
    ("pseudonymization", "clusters", "pseudonymization must be one of neighbours, groups, surrogates, got 'clusters'"),
])
def test_the_writer_refuses_a_header_value_before_writing_anything(tmp_path, parties, option, value, message):
    institution, server = parties
    options = {"institution": "site-a", "representer_id": "rep-1", "dim": DIM, "dtype": "float16", "neighbours": 100,
               "pseudonymization": "groups", option: value}
    with pytest.raises(ValueError, match=message):
        ContributionWriter(tmp_path / "a.dpc", signing_key=institution, server_key=server.public_key(), **options)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cut", [1, 12, 100, 500, 2000])
def test_truncated_file_is_rejected(written, parties, tmp_path, cut):
    data = written[0].read_bytes()
    (tmp_path / "b.dpc").write_bytes(data[:-cut])
    with pytest.raises(ContributionError, match="truncated|altered"):
        validate(tmp_path / "b.dpc", parties)


def test_dropped_final_chunk_is_detected_even_when_signed(tmp_path, parties, monkeypatch):
    """A file whose last chunk is not sealed as final is refused, even with a valid signature."""
    real_seal = ContributionWriter._seal
    monkeypatch.setattr(ContributionWriter, "_seal", lambda self, final, associated_data=b"": real_seal(self, False))
    write(tmp_path / "a.dpc", parties, random_sentences(count=5))
    with pytest.raises(ContributionError, match="final chunk is missing"):
        validate(tmp_path / "a.dpc", parties)


def test_not_a_contribution_file(tmp_path, parties):
    (tmp_path / "x.dpc").write_bytes(b"hello" * 100)
    with pytest.raises(ContributionError, match="truncated or not a contribution"):
        read_header(tmp_path / "x.dpc")
    with pytest.raises(ContributionError, match="cannot read"):
        read_header(tmp_path / "missing.dpc")


def test_records_of_another_size_or_dtype_are_refused(tmp_path, parties):
    vectors, tags, casing = random_sentences(count=1)[0]
    with pytest.raises(ValueError, match="does not match"):
        write(tmp_path / "a.dpc", parties, [(vectors[:, :3], tags, casing)])
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
        write(tmp_path / "a.dpc", parties, random_sentences(count=40))
    assert list(tmp_path.iterdir()) == []


def test_an_exception_inside_the_writer_block_leaves_no_file(tmp_path, parties):
    institution, server = parties
    with pytest.raises(RuntimeError):
        with ContributionWriter(tmp_path / "a.dpc", institution="site-a", representer_id="rep-1", dim=DIM,
                                neighbours=100, pseudonymization="groups", signing_key=institution,
                                server_key=server.public_key()) as writer:
            writer.add(encode_sentence(*random_sentences(count=1)[0]))
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_malformed_signed_header_is_rejected(tmp_path, parties, monkeypatch):
    """Even a correctly signed header must have exactly the agreed fields and types."""
    monkeypatch.setattr(container.ContributionHeader, "to_bytes",
                        lambda self: b'{"institution": "site-a", "extra": 1}')
    write(tmp_path / "a.dpc", parties, random_sentences(count=2))
    with pytest.raises(ContributionError, match="header is malformed"):
        verify_contribution(tmp_path / "a.dpc", parties[0].public_key())
