"""`deidpool server init`: a new data directory (docs/server.md, Data directory) with the
server's keys, the pinned provider key, server.json and an up-to-date database."""

from __future__ import annotations

import shutil
from pathlib import Path

from deidpool.representer import keys
from deidpool.server.auth import new_token
from deidpool.server.settings import Layout, Settings, SettingsError


def init_data_dir(data_dir: str | Path, provider_key: str | Path, force: bool = False) -> str:
    """Create (or with `force`, re-initialize) the data directory; returns the new admin token,
    which is stored nowhere (only its SHA-256 is).

    Re-initializing keeps the server's keys, payloads and database; it pins the given provider
    key and replaces the admin token (the old one stops working); the limits stay.
    """
    from deidpool.server.database import migrate_database  # SQLAlchemy and Alembic: the token commands need neither

    layout = Layout(Path(data_dir))
    provider = keys.load_public_key(provider_key, keys.SIGNING)
    if layout.settings.exists() and not force:
        raise SettingsError(f"{layout.settings} exists: {layout.root} is already a server data directory "
                            "(--force re-initializes it with a new admin token)")
    for folder in (layout.root, layout.keys):  # the owner's alone, like the private keys and server.json
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)  # one that existed too (a mounted volume, an older init)
    if not (layout.encryption_key.exists() and layout.signing_key.exists()):
        keys.create_server_keys(layout.keys)
    shutil.copyfile(provider_key, layout.provider_key)
    layout.payloads.mkdir(exist_ok=True)
    layout.runs.mkdir(exist_ok=True)
    token, token_sha256 = new_token()
    settings = Settings(provider_fingerprint=keys.fingerprint(provider), admin_token_sha256=token_sha256)
    if layout.settings.exists():  # keep the limits set before
        settings = Settings.load(layout).model_copy(update={"provider_fingerprint": settings.provider_fingerprint,
                                                            "admin_token_sha256": token_sha256})
    settings.save(layout)
    migrate_database(layout.database_url)
    return token


def rotate_admin_token(data_dir: str | Path) -> str:
    """Replace the admin token of the data directory (a running server refuses the old one at
    once); returns the new token, which is stored nowhere (only its SHA-256 is)."""
    return _rotate_token(data_dir, "admin_token_sha256")


def rotate_viewer_token(data_dir: str | Path) -> str:
    """Create or replace the dashboard's read-only viewer token (a running server refuses the
    old one at once); returns the new token, which is stored nowhere (only its SHA-256 is)."""
    return _rotate_token(data_dir, "viewer_token_sha256")


def rotate_metrics_token(data_dir: str | Path) -> str:
    """Create or replace the token that may read `/metrics` (Prometheus; a running server refuses
    the old one at once); returns the new token, which is stored nowhere (only its SHA-256 is)."""
    return _rotate_token(data_dir, "metrics_token_sha256")


def _rotate_token(data_dir: str | Path, field: str) -> str:
    layout = Layout(Path(data_dir))
    settings = Settings.load(layout)
    token, token_sha256 = new_token()
    settings.model_copy(update={field: token_sha256}).save(layout)
    return token
