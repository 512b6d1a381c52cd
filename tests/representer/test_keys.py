"""Tests of key files: generation with safe permissions, passphrases, loading errors that name
the file (never a secret), and fingerprints."""

import os
import re
import stat

import pytest

from deidpool.representer.keys import (
    ENCRYPTION,
    SIGNING,
    KeyFileError,
    create_key_pair,
    create_provider_keys,
    create_server_keys,
    fingerprint,
    is_encrypted,
    load_private_key,
    load_public_key,
)


def test_key_pair_files_permissions_and_fingerprint(tmp_path):
    pair = create_key_pair(tmp_path / "new", "provider", SIGNING)
    assert stat.S_IMODE(os.stat(pair.private).st_mode) == 0o600
    assert pair.public.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert re.fullmatch(r"[0-9a-f]{4}(:[0-9a-f]{4}){3}", pair.fingerprint)
    private, public = load_private_key(pair.private, SIGNING), load_public_key(pair.public, SIGNING)
    assert fingerprint(private.public_key()) == fingerprint(public) == pair.fingerprint
    public.verify(private.sign(b"message"), b"message")


def test_existing_keys_are_never_overwritten(tmp_path):
    pair = create_provider_keys(tmp_path)
    before = pair.private.read_bytes()
    with pytest.raises(KeyFileError, match="already exists"):
        create_provider_keys(tmp_path)
    assert pair.private.read_bytes() == before


def test_server_keys_encrypt_and_sign(tmp_path):
    pairs = create_server_keys(tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "server-encryption.key", "server-encryption.pub", "server-signing.key", "server-signing.pub"]
    load_private_key(pairs[ENCRYPTION].private, ENCRYPTION)
    load_public_key(pairs[SIGNING].public, SIGNING)


def test_passphrase_protected_key(tmp_path):
    pair = create_key_pair(tmp_path, "institution", SIGNING, passphrase="s3cret words")
    assert is_encrypted(pair.private) and b"s3cret" not in pair.private.read_bytes()
    load_private_key(pair.private, SIGNING, "s3cret words")
    with pytest.raises(KeyFileError, match="is passphrase-protected: give its passphrase"):
        load_private_key(pair.private, SIGNING)
    with pytest.raises(KeyFileError, match="wrong passphrase") as error:
        load_private_key(pair.private, SIGNING, "guess")
    assert "guess" not in str(error.value)


def test_unusable_key_files_name_the_file(tmp_path):
    encryption = create_key_pair(tmp_path, "server", ENCRYPTION)
    (tmp_path / "junk.pem").write_text("not a key")
    cases = [
        (lambda: load_private_key(encryption.private, SIGNING), "does not hold an Ed25519 signing key"),
        (lambda: load_public_key(encryption.public, SIGNING), "does not hold an Ed25519 signing key"),
        (lambda: load_public_key(encryption.private, ENCRYPTION), "is not a PEM public key"),
        (lambda: load_private_key(tmp_path / "junk.pem", SIGNING), "is not a PEM private key"),
        (lambda: load_public_key(tmp_path / "missing.pub", SIGNING), "cannot read key file .*missing.pub"),
        (lambda: load_private_key(encryption.private, ENCRYPTION, "pw"), "not passphrase-protected"),
    ]
    for load, message in cases:
        with pytest.raises(KeyFileError, match=message):
            load()
