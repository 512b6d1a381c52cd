"""The content-addressed blob store `D/payloads/ab/<sha256>`: contributions, representer
bundles and published pipelines. Blobs arrive through a staged temporary file (hashed and
size-limited while written) and are renamed into place only when accepted."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

_SHA256 = re.compile(r"[0-9a-f]{64}")
COPY_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(COPY_CHUNK):
            digest.update(block)
    return digest.hexdigest()


class PayloadTooLarge(ValueError):
    """The staged payload exceeded its size limit."""


class StagedPayload:
    """A temporary file in the store being written; its SHA-256 and size are kept as it grows.
    Use as a context manager: unless `PayloadStore.commit` moved it into place, it is deleted
    on exit."""

    def __init__(self, directory: Path, limit: int | None):
        descriptor, name = tempfile.mkstemp(prefix=".staged-", dir=directory)
        self.path = Path(name)
        self.limit = limit
        self.size = 0
        self._file = os.fdopen(descriptor, "wb")
        self._digest = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self.size += len(data)
        if self.limit is not None and self.size > self.limit:
            raise PayloadTooLarge(f"the payload exceeds the limit of {self.limit:,} bytes")
        self._digest.update(data)
        self._file.write(data)

    def finish(self) -> str:
        """Flush the file to disk; returns its SHA-256."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        return self.sha256

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def discard(self) -> None:
        with contextlib.suppress(OSError):  # flushing the buffer fails when the disk is full; it goes anyway
            self._file.close()
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> StagedPayload:
        return self

    def __exit__(self, *exc_info) -> None:
        self.discard()


class PayloadStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path(self, sha256: str) -> Path:
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"{sha256!r} is not a lower-case hex SHA-256")
        return self.root / sha256[:2] / sha256

    def stage(self, limit: int | None = None) -> StagedPayload:
        """A new temporary file in the store, refused past `limit` bytes."""
        return StagedPayload(self.root, limit)

    def verified(self, sha256: str) -> bool:
        """Whether the store holds a blob `sha256` whose bytes do hash to it."""
        path = self.path(sha256)
        return path.is_file() and file_sha256(path) == sha256

    def blobs(self) -> list[str]:
        """The SHA-256 of every stored blob."""
        return [path.name for path in self.root.glob("??/*") if _SHA256.fullmatch(path.name)]

    def remove_leftovers(self) -> None:
        """Delete the temporary files and folders of uploads and publications that were killed
        (at start-up, before any request)."""
        for path in self.root.glob(".staged-*"):
            path.unlink(missing_ok=True)
        for path in self.root.glob(".publish-*"):
            shutil.rmtree(path, ignore_errors=True)

    def commit(self, staged: StagedPayload) -> bool:
        """Move a finished staged file into place under its hash; returns False (and drops the
        staged copy) when the store already holds those bytes. A damaged copy is replaced."""
        target = self.path(staged.sha256)
        target.parent.mkdir(exist_ok=True)
        if self.verified(staged.sha256):
            staged.discard()
            return False
        os.replace(staged.path, target)
        return True

    def remove(self, sha256: str) -> None:
        """Delete the blob `sha256` (if stored)."""
        self.path(sha256).unlink(missing_ok=True)

    def add_file(self, path: str | Path) -> str:
        """Copy the file at `path` into the store; returns its SHA-256."""
        with self.stage() as staged, Path(path).open("rb") as source:
            while block := source.read(COPY_CHUNK):
                staged.write(block)
            staged.finish()
            self.commit(staged)
            return staged.sha256
