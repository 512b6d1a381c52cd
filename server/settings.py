"""The server's data directory (docs/server.md, Data directory) and its settings file
`server.json`: provider key fingerprint, upload and request rate limits, and the hashes of the
admin token, of the dashboard's viewer token and of the metrics token (Prometheus)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

SETTINGS_FILE = "server.json"
DATABASE_FILE = "deidpool.sqlite"
DATABASE_URL_ENV = "DATABASE_URL"
MAX_UPLOAD_BYTES = 512 << 20
MAX_AGE_SECONDS = 7 * 24 * 3600
MIN_NEIGHBOURS = 10  # the least pseudonymization N an upload may declare
MAX_CLOCK_SKEW_SECONDS = 300  # how far in the future a timestamp may be (and a signed request's in the past)
# Token buckets (server/limits.py): requests naming a registered institution, per institution and
# client address; other requests (but the admin's), per client address. A bucket holds `burst`
# requests and refills at `per_minute`; the load test (110 uploads per institution) fits in a burst.
INSTITUTION_REQUESTS_PER_MINUTE = 1200
INSTITUTION_REQUEST_BURST = 200
ADDRESS_REQUESTS_PER_MINUTE = 600
ADDRESS_REQUEST_BURST = 100


class SettingsError(ValueError):
    """A data directory that is not (or not yet) a server's; the message names the file."""


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where everything lives under the data directory `root`."""

    root: Path

    @property
    def settings(self) -> Path:
        return self.root / SETTINGS_FILE

    @property
    def keys(self) -> Path:
        return self.root / "keys"

    @property
    def encryption_key(self) -> Path:
        return self.keys / "server-encryption.key"

    @property
    def encryption_public_key(self) -> Path:
        return self.keys / "server-encryption.pub"

    @property
    def signing_key(self) -> Path:
        return self.keys / "server-signing.key"

    @property
    def signing_public_key(self) -> Path:
        return self.keys / "server-signing.pub"

    @property
    def provider_key(self) -> Path:
        return self.keys / "provider.pub"

    @property
    def payloads(self) -> Path:
        return self.root / "payloads"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def run_dir(self, run_id: int) -> Path:
        return self.runs / str(run_id)

    @property
    def database_url(self) -> str:
        """$DATABASE_URL, or the SQLite file in the data directory."""
        return os.environ.get(DATABASE_URL_ENV) or f"sqlite:///{self.root / DATABASE_FILE}"


@dataclasses.dataclass(frozen=True)
class Settings:
    """The contents of server.json."""

    provider_fingerprint: str
    admin_token_sha256: str
    viewer_token_sha256: str | None = None  # until `deidpool server rotate-viewer-token` makes one
    metrics_token_sha256: str | None = None  # until `deidpool server rotate-metrics-token` makes one
    max_upload_bytes: int = MAX_UPLOAD_BYTES
    max_age_seconds: int = MAX_AGE_SECONDS
    min_neighbours: int = MIN_NEIGHBOURS
    institution_requests_per_minute: int = INSTITUTION_REQUESTS_PER_MINUTE
    institution_request_burst: int = INSTITUTION_REQUEST_BURST
    address_requests_per_minute: int = ADDRESS_REQUESTS_PER_MINUTE
    address_request_burst: int = ADDRESS_REQUEST_BURST

    def save(self, layout: Layout) -> None:
        temporary = layout.settings.with_suffix(".json.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(dataclasses.asdict(self), file, indent=2)
            file.write("\n")
        os.replace(temporary, layout.settings)

    @classmethod
    def load(cls, layout: Layout) -> Settings:
        path = layout.settings
        try:
            values = json.loads(path.read_text())
        except FileNotFoundError:
            raise SettingsError(f"{path} does not exist: {layout.root} is not a server data directory "
                                "(create one with `deidpool server init`)") from None
        except (OSError, ValueError) as error:
            raise SettingsError(f"cannot read {path}: {error}") from None
        names = [field.name for field in dataclasses.fields(cls)]
        if not isinstance(values, dict) or set(values) - set(names):
            raise SettingsError(f"{path}: unexpected entries; expected {', '.join(names)}")
        for name in ("provider_fingerprint", "admin_token_sha256"):
            if not isinstance(values.get(name), str):
                raise SettingsError(f"{path}: {name} is missing or not a string")
        for name in ("viewer_token_sha256", "metrics_token_sha256"):
            if not isinstance(values.get(name, ""), str | None):
                raise SettingsError(f"{path}: {name} is not a string")
        for name in ("max_upload_bytes", "max_age_seconds", "min_neighbours", "institution_requests_per_minute",
                     "institution_request_burst", "address_requests_per_minute", "address_request_burst"):
            if not isinstance(values.get(name, 1), int) or values.get(name, 1) < 1:
                raise SettingsError(f"{path}: {name} must be a positive integer")
        return cls(**values)
