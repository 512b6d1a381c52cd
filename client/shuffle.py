"""A uniformly random shuffle of more byte records than fit in memory: records go to randomly
chosen spill files on disk, each of which is small enough to shuffle in memory (or is split
again the same way), and the spill files are emitted one after another.

Every record picks its spill file independently and uniformly, and every file is shuffled
uniformly, so all orders are equally likely (Rao 1961), unlike shuffling within chunks.
The price is writing the records to disk and reading them back once more (per level of
splitting). Corpora that fit in `memory_bytes` never touch the disk.
"""

from __future__ import annotations

import itertools
import shutil
import struct
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

MEMORY_BYTES = 256 << 20
FANOUT = 64
_LENGTH = struct.Struct("<I")


class ExternalShuffle:
    """Collect records with `add`, then iterate once over them in random order.

    Spill files live in a private temporary folder under `directory` (0700), removed by
    `close` or at the end of a `with` block, whether or not iteration finished.
    """

    def __init__(self, directory: str | Path, memory_bytes: int = MEMORY_BYTES, fanout: int = FANOUT,
                 rng: np.random.Generator | None = None):
        self._directory, self._memory, self._fanout = Path(directory), memory_bytes, fanout
        self._rng = rng or np.random.default_rng()
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._spill_dir: Path | None = None
        self._spills: list[Path] = []
        self._names = itertools.count()

    def add(self, record: bytes) -> None:
        if len(record) + _LENGTH.size > self._memory:
            raise ValueError(f"a record of {len(record)} bytes does not fit in memory_bytes={self._memory}")
        self._buffer.append(record)
        self._buffered += len(record) + _LENGTH.size
        if self._buffered > self._memory:
            self._spill_buffer()

    def _spill_buffer(self) -> None:
        if self._spill_dir is None:
            self._spill_dir = Path(tempfile.mkdtemp(prefix=".shuffle-", dir=self._directory))
            self._spills = self._new_spill_files()
        self._distribute(self._buffer, self._spills)
        self._buffer, self._buffered = [], 0

    def _new_spill_files(self) -> list[Path]:
        files = [self._spill_dir / str(next(self._names)) for _ in range(self._fanout)]
        for path in files:
            path.touch()
        return files

    def _distribute(self, records: Iterable[bytes], files: list[Path]) -> None:
        """Append every record to a uniformly random one of `files`."""
        handles = [path.open("ab") for path in files]
        try:
            for record in records:
                handles[self._rng.integers(len(handles))].write(_LENGTH.pack(len(record)) + record)
        finally:
            for handle in handles:
                handle.close()

    def __iter__(self) -> Iterator[bytes]:
        if self._spill_dir is None:
            records, self._buffer = self._buffer, []
            yield from self._shuffled(records)
            return
        self._spill_buffer()
        for path in self._spills:
            yield from self._drain(path)

    def _drain(self, path: Path) -> Iterator[bytes]:
        """The records of one spill file in random order, splitting it first if it is too big."""
        if path.stat().st_size <= self._memory:
            records = list(_read_records(path))
            path.unlink()
            yield from self._shuffled(records)
            return
        parts = self._new_spill_files()
        self._distribute(_read_records(path), parts)
        path.unlink()
        for part in parts:
            yield from self._drain(part)

    def _shuffled(self, records: list[bytes]) -> Iterator[bytes]:
        for index in self._rng.permutation(len(records)):
            yield records[index]

    def close(self) -> None:
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
        self._buffer = []

    def __enter__(self) -> ExternalShuffle:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _read_records(path: Path) -> Iterator[bytes]:
    with path.open("rb") as file:
        while header := file.read(_LENGTH.size):
            (length,) = _LENGTH.unpack(header)
            yield file.read(length)
