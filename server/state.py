"""Everything a running server works with, opened once from its data directory: settings,
database sessions, payload store and keys."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from sqlalchemy.orm import sessionmaker

from deidpool.representer import keys
from deidpool.server.database import open_database
from deidpool.server.payloads import PayloadStore
from deidpool.server.settings import Layout, Settings, check_private


@dataclasses.dataclass(frozen=True)
class ServerState:
    layout: Layout
    settings: Settings
    sessions: sessionmaker
    payloads: PayloadStore
    encryption_key: X25519PrivateKey
    signing_key: Ed25519PrivateKey
    provider_key: Ed25519PublicKey

    @classmethod
    def open(cls, data_dir: str | Path) -> ServerState:
        """The server state of `data_dir`, with its database migrated to the latest schema; a data
        directory open to other users is refused (`check_private`)."""
        layout = Layout(Path(data_dir))
        settings = Settings.load(layout)
        check_private(layout)
        return cls(layout=layout, settings=settings, sessions=open_database(layout.root),
                   payloads=PayloadStore(layout.payloads),
                   encryption_key=keys.load_private_key(layout.encryption_key, keys.ENCRYPTION),
                   signing_key=keys.load_private_key(layout.signing_key, keys.SIGNING),
                   provider_key=keys.load_public_key(layout.provider_key, keys.SIGNING))

    def admin_token_sha256(self) -> str:
        """The admin token's hash as server.json holds it now (read per request, so that a token
        rotated while the server runs holds at once; `settings` keeps the one read at start)."""
        return Settings.load(self.layout).admin_token_sha256

    def viewer_token_sha256s(self) -> list[str]:
        """The hashes of the tokens that may read the dashboard, as server.json holds them now:
        the viewer token's (once one was made) and the admin token's."""
        settings = Settings.load(self.layout)
        return [sha256 for sha256 in (settings.viewer_token_sha256, settings.admin_token_sha256) if sha256]

    def metrics_token_sha256s(self) -> list[str]:
        """The hashes of the tokens that may read `/metrics`, as server.json holds them now: the
        metrics token's (once one was made) and the admin token's."""
        settings = Settings.load(self.layout)
        return [sha256 for sha256 in (settings.metrics_token_sha256, settings.admin_token_sha256) if sha256]

    def close(self) -> None:
        """Close the database connections."""
        self.sessions.kw["bind"].dispose()
