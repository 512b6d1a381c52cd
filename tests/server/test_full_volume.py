"""A full shared volume recovers (issue #63): the server's data directory on a small filesystem of
its own (a tmpfs, else a loop-mounted ext4 image; both need root), filled to the last byte.
Uploads are then answered 507 and store nothing; once 1 MiB is freed, every retried upload is
stored and listed. On SQLite the database shares the volume, so its write-ahead log must not eat
the freed space; on PostgreSQL the database is elsewhere and the payloads fill the volume."""

import errno
import hashlib
import os
import subprocess
from types import SimpleNamespace

import pytest

from deidpool.contribution.signed_requests import signed_headers
from deidpool.server.initialize import init_data_dir
from deidpool.server.settings import Layout

from .conftest import contribution_file, stored, upload

VOLUME_MB = 16
FREED = 1 << 20
REFUSED, RETRIED = 4, 40  # uploads while full; uploads retried once freed, each then listed


def _mount(path, image) -> str | None:
    """Mount a VOLUME_MB filesystem on the empty folder `path`; the reason why not, if not."""
    tmpfs = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={VOLUME_MB}m", "tmpfs", str(path)],
                           capture_output=True, text=True)
    if tmpfs.returncode == 0:
        return None
    commands = [["truncate", "-s", f"{VOLUME_MB}M", str(image)], ["mkfs.ext4", "-q", "-m", "0", str(image)],
                ["mount", "-o", "loop", str(image), str(path)]]
    for command in commands:
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        except FileNotFoundError as error:
            result = SimpleNamespace(returncode=1, stderr=str(error))
        if result.returncode:
            return (f"needs a small filesystem to fill: `mount -t tmpfs` failed ({tmpfs.stderr.strip()}) and so did "
                    f"`{' '.join(command[:2])}` ({result.stderr.strip()}); run as root")
    return None


@pytest.fixture
def volume(tmp_path):
    path = tmp_path / "volume"
    path.mkdir()
    reason = _mount(path, tmp_path / "volume.ext4")
    if reason:
        pytest.skip(reason)
    yield path
    subprocess.run(["umount", str(path)], check=True)


@pytest.fixture
def server_dir(volume, database, key_files) -> SimpleNamespace:
    """conftest's data directory, `deidpool server init` on the small volume."""
    path = volume / "server"
    token = init_data_dir(path, key_files.provider.public)
    return SimpleNamespace(path=path, layout=Layout(path), token=token)


def _fill(filler) -> None:
    """Append to `filler` until its volume is full."""
    with filler.open("ab", buffering=0) as file:
        try:
            while file.write(bytes(1 << 16)):
                pass
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise


def _listing(api, site):
    return api.get("/api/contributions", headers=signed_headers(site.key, "site-a", "GET", "/api/contributions",
                                                                host="testserver"))


def test_uploads_to_a_full_volume_are_refused_and_all_stored_once_1_mib_is_freed(api, site, server_dir, volume,
                                                                                 database, tmp_path):
    bodies = [contribution_file(tmp_path / f"{number}.dpc", site, seed=number).read_bytes()
              for number in range(RETRIED)]
    before, filler = stored(server_dir), volume / "filler"
    for body in bodies[:REFUSED]:
        _fill(filler)  # again: a refusal may have freed room (a truncated write-ahead log)
        reply = upload(api, body, site.key)
        assert reply.status_code == 507 and "storage is full" in reply.json()["detail"], reply.text
    assert stored(server_dir) == before
    os.truncate(filler, filler.stat().st_size - FREED)
    statuses = []
    for body in bodies:  # as the client does: the upload, then the listing that confirms it
        statuses += [upload(api, body, site.key).status_code, (listing := _listing(api, site)).status_code]
    wal = server_dir.layout.root / "deidpool.sqlite-wal"
    log = f"{database}: write-ahead log {wal.stat().st_size if wal.exists() else 0:,} bytes, statuses {statuses}"
    assert statuses == [201, 200] * RETRIED, log
    assert sorted(row["sha256"] for row in listing.json()) == sorted(hashlib.sha256(body).hexdigest()
                                                                     for body in bodies)
