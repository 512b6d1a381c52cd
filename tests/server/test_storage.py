"""Storage: the data directory `init` creates, migrations that match the models, the settings
file, and the content-addressed payload store."""

import hashlib
import json
import os
import stat

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text

from deidpool.server.database import Base, make_engine, migrate_database, upgrade
from deidpool.server.initialize import init_data_dir
from deidpool.server.payloads import PayloadStore, PayloadTooLarge
from deidpool.server.settings import Settings, SettingsError


def test_init_creates_keys_settings_and_the_migrated_database(server_dir, key_files, database):
    layout = server_dir.layout
    for path in (layout.encryption_key, layout.signing_key, layout.provider_key, layout.payloads, layout.runs):
        assert path.exists(), path
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in (layout.root, layout.keys, layout.signing_key,
                                                                       layout.encryption_key, layout.settings)}
    assert modes == {"server": 0o700, "keys": 0o700, "server-signing.key": 0o600, "server-encryption.key": 0o600,
                     "server.json": 0o600}
    if database == "sqlite":
        assert stat.S_IMODE((layout.root / "deidpool.sqlite").stat().st_mode) == 0o600
    assert layout.provider_key.read_bytes() == key_files.provider.public.read_bytes()
    settings = json.loads(layout.settings.read_text())
    assert settings["admin_token_sha256"] == hashlib.sha256(server_dir.token.encode()).hexdigest()
    assert settings["provider_fingerprint"] == key_files.provider.fingerprint
    assert settings["max_upload_bytes"] == 512 << 20 and settings["max_age_seconds"] == 7 * 24 * 3600
    engine = make_engine(layout.database_url)
    assert engine.dialect.name == database
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        assert set(inspect(connection).get_table_names()) >= {"institutions", "representers", "contributions",
                                                             "training_runs", "run_epochs", "pipelines", "audits"}
    engine.dispose()
    migrate_database(layout.database_url)  # applying them again changes nothing


def test_the_empirical_bound_migration_fills_the_column_from_stored_headers(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")
    upgrade(engine, "0003")
    bounds = {"new": {"overall": {"mean_success": {"uniform": 0.01, "frequency": 0.05, "empirical": 0.4}}},
              "older": {"overall": {"mean_success": {"uniform": 0.01, "frequency": 0.05}}}, "none": None}
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO institutions VALUES ('site-a', 'key', 'fingerprint', 1, "
                                "'2026-11-24 00:00:00')"))
        for number, (name, bound) in enumerate(bounds.items()):
            connection.execute(text(
                "INSERT INTO contributions (sha256, institution_id, representer_id, nonce, sentences, tokens, dim, "
                "dtype, size_bytes, header_created, received, neighbours, reidentification_bound) VALUES (:sha, "
                "'site-a', 'rep', :nonce, 1, 1, 50, 'float16', 1, '2026-11-24 00:00:00', '2026-11-24 00:00:00', "
                "100, :bound)"), {"sha": name, "nonce": str(number), "bound": json.dumps(bound)})
    upgrade(engine)
    with engine.connect() as connection:
        stored = dict(connection.execute(text("SELECT sha256, bound_empirical FROM contributions")).all())
    engine.dispose()
    assert stored == {"new": 0.4, "older": None, "none": None}


def test_the_draws_migration_gives_every_stored_contribution_one_draw(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")
    upgrade(engine, "0004")
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO institutions VALUES ('site-a', 'key', 'fingerprint', 1, "
                                "'2026-11-24 00:00:00')"))
        connection.execute(text(
            "INSERT INTO contributions (sha256, institution_id, representer_id, nonce, sentences, tokens, dim, dtype, "
            "size_bytes, header_created, received, neighbours) VALUES ('old', 'site-a', 'rep', 'n', 1, 1, 50, "
            "'float16', 1, '2026-11-24 00:00:00', '2026-11-24 00:00:00', 100)"))
    upgrade(engine)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT sha256, draws FROM contributions")).all() == [("old", 1)]
    engine.dispose()


def test_init_makes_an_existing_data_dir_and_its_keys_folder_private(tmp_path, key_files):
    """A folder made before (a mounted volume, an older init) is the owner's alone after init."""
    (tmp_path / "server" / "keys").mkdir(parents=True, mode=0o755)
    os.chmod(tmp_path / "server", 0o755)
    init_data_dir(tmp_path / "server", key_files.provider.public)
    assert [stat.S_IMODE(path.stat().st_mode) for path in (tmp_path / "server", tmp_path / "server" / "keys")] == \
        [0o700, 0o700]


def test_init_refuses_an_existing_data_dir_unless_forced(server_dir, key_files, tmp_path):
    with pytest.raises(SettingsError, match="already a server data directory"):
        init_data_dir(server_dir.path, key_files.provider.public)
    layout = server_dir.layout
    Settings(**{**json.loads(layout.settings.read_text()), "max_upload_bytes": 1234}).save(layout)
    encryption = layout.encryption_key.read_bytes()
    token = init_data_dir(server_dir.path, key_files.provider.public, force=True)
    assert token != server_dir.token and layout.encryption_key.read_bytes() == encryption
    assert Settings.load(layout).max_upload_bytes == 1234


@pytest.mark.parametrize("content, words", [(None, "not a server data directory"), ("[1]", "unexpected entries"),
                                            ('{"provider_fingerprint": "a"}', "admin_token_sha256"),
                                            ('{"provider_fingerprint": "a", "admin_token_sha256": "b", '
                                             '"viewer_token_sha256": 1}', "viewer_token_sha256"),
                                            ('{"provider_fingerprint": "a", "admin_token_sha256": "b", '
                                             '"institution_request_burst": 0}', "institution_request_burst"),
                                            ("{", "cannot read")])
def test_bad_settings_files_are_named(tmp_path, content, words):
    from deidpool.server.settings import Layout

    if content is not None:
        (tmp_path / "server.json").write_text(content)
    with pytest.raises(SettingsError, match=words):
        Settings.load(Layout(tmp_path))


def test_payload_store_is_content_addressed_and_idempotent(tmp_path):
    store = PayloadStore(tmp_path / "payloads")
    digests = []
    for _ in range(2):
        with store.stage() as staged:
            staged.write(b"hello ")
            staged.write(b"world")
            staged.finish()
            digests.append((staged.sha256, store.commit(staged)))
    digest = hashlib.sha256(b"hello world").hexdigest()
    assert digests == [(digest, True), (digest, False)]
    assert store.path(digest) == tmp_path / "payloads" / digest[:2] / digest
    assert [path.name for path in (tmp_path / "payloads").rglob("*") if path.is_file()] == [digest]
    source = tmp_path / "file"
    source.write_bytes(b"hello world")
    assert store.add_file(source) == digest
    with pytest.raises(ValueError, match="SHA-256"):
        store.path("../../etc/passwd")


def test_a_staged_payload_past_its_limit_is_refused_and_removed(tmp_path):
    store = PayloadStore(tmp_path)
    with pytest.raises(PayloadTooLarge, match="10 bytes"):
        with store.stage(limit=10) as staged:
            staged.write(b"x" * 8)
            staged.write(b"x" * 8)
    assert list(tmp_path.iterdir()) == []
