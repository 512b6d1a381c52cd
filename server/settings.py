"""The server's data directory (docs/server.md, Data directory), its database URL, and its
settings file `server.json` (`Settings`): provider key fingerprint, upload, storage quota and
request rate limits, and the hashes of the admin token, of the dashboard's viewer token and of the metrics
token (Prometheus)."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, PositiveInt, ValidationError
from pydantic_core import ErrorDetails

SETTINGS_FILE = "server.json"
DATABASE_FILE = "deidpool.sqlite"
DATABASE_URL_ENV = "DATABASE_URL"
MAX_UPLOAD_BYTES = 512 << 20
MAX_INSTITUTION_BYTES = 32 << 30  # all of one institution's stored contributions together
MAX_AGE_SECONDS = 7 * 24 * 3600
MIN_NEIGHBOURS = 10  # the least pseudonymization N an upload may declare (but under surrogates, without N)
# The most draws of every sentence an upload may hold: each draw's fresh noise, averaged over the
# copies an attacker links, reveals more of the non-PHI text and of PHI the labels missed, so a
# coordinator who wants the augmentation raises it knowingly (docs/privacy.md).
MAX_DRAWS = 1
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
        """$DATABASE_URL, or the SQLite file in the data directory (`normalized_url`)."""
        return normalized_url(os.environ.get(DATABASE_URL_ENV) or f"sqlite:///{self.root / DATABASE_FILE}")


def check_private(layout: Layout) -> None:
    """Refuse (SettingsError) a data directory that other users may enter, or whose private keys,
    server.json or SQLite database (and its -wal and -shm files) they may read or change, as
    `deidpool server init` made none of them; the message names each path and the `chmod` that
    closes it. Paths that do not exist are left to the code that needs them."""
    files = [layout.settings, layout.encryption_key, layout.signing_key]
    if not os.environ.get(DATABASE_URL_ENV):
        files += [layout.root / f"{DATABASE_FILE}{suffix}" for suffix in ("", "-wal", "-shm")]
    loose: dict[int, list[tuple[Path, int]]] = {}
    for wanted, paths in ((0o700, [layout.root, layout.keys]), (0o600, files)):
        for path in paths:
            try:
                mode = stat.S_IMODE(path.stat().st_mode)
            except FileNotFoundError:
                continue
            if mode & 0o077:
                loose.setdefault(wanted, []).append((path, mode))
    if loose:
        named = ", ".join(f"{path} (mode {mode:04o})" for found in loose.values() for path, mode in found)
        chmod = " && ".join(f"chmod {wanted:o} " + " ".join(shlex.quote(str(path)) for path, _ in found)
                            for wanted, found in loose.items())
        raise SettingsError(f"other users may read or change {named}: the data directory, its keys, settings and "
                            f"database are the owner's alone (docs/server.md, Data directory); run `{chmod}`")


def normalized_url(url: str) -> str:
    """`url` with PostgreSQL URLs using the psycopg (3) driver, the one installed."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


class Settings(BaseModel):
    """The contents of server.json."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    provider_fingerprint: str
    admin_token_sha256: str
    viewer_token_sha256: str | None = None  # until `deidpool server rotate-viewer-token` makes one
    metrics_token_sha256: str | None = None  # until `deidpool server rotate-metrics-token` makes one
    max_upload_bytes: PositiveInt = MAX_UPLOAD_BYTES
    max_institution_bytes: PositiveInt = MAX_INSTITUTION_BYTES
    max_age_seconds: PositiveInt = MAX_AGE_SECONDS
    min_neighbours: PositiveInt = MIN_NEIGHBOURS
    max_draws: PositiveInt = MAX_DRAWS
    require_safety_net: bool = False  # refuse contributions whose export ran no safety net
    institution_requests_per_minute: PositiveInt = INSTITUTION_REQUESTS_PER_MINUTE
    institution_request_burst: PositiveInt = INSTITUTION_REQUEST_BURST
    address_requests_per_minute: PositiveInt = ADDRESS_REQUESTS_PER_MINUTE
    address_request_burst: PositiveInt = ADDRESS_REQUEST_BURST

    def save(self, layout: Layout) -> None:
        temporary = layout.settings.with_suffix(".json.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(self.model_dump(), file, indent=2)
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
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            problems = "; ".join(_problem(detail) for detail in error.errors())
            raise SettingsError(f"{path}: {problems} (its entries: {', '.join(cls.model_fields)})") from None


def _problem(detail: ErrorDetails) -> str:
    """One problem of server.json, naming its entry."""
    if not detail["loc"]:
        return "unexpected entries: the file is not a JSON object"
    if detail["type"] == "extra_forbidden":
        return f"unexpected entry {detail['loc'][0]}"
    return f"{detail['loc'][0]}: {detail['msg']}"
