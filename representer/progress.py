"""Progress of long loops: a tqdm bar on a terminal; elsewhere (a log file, CI, a pipe) plain
lines, one every 30 s and one at the end, which a log keeps readable where a bar's carriage
returns would not."""

from __future__ import annotations

import sys
import threading
import time
import weakref

from tqdm import tqdm

INTERVAL = 30.0  # seconds between two lines


def progress_bar(iterable=None, *, total: int | None = None, desc: str = "", unit: str = "it", initial: int = 0,
                 disable: bool = False):
    """A progress bar as `tqdm(iterable, total=..., desc=..., unit=..., initial=..., disable=...)`:
    tqdm itself when standard error is a terminal (or `disable`), else `ProgressLines`."""
    if disable or sys.stderr.isatty():
        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, disable=disable)
    return ProgressLines(iterable, total=total, desc=desc, unit=unit, initial=initial)


class ProgressLines:
    """The part of tqdm's interface this project uses (iteration, `update`, `set_postfix`,
    `close`, `with`), writing a line to standard error every `interval` seconds from a
    background thread (so a step longer than that still shows the run is alive) and one at
    `close`: what, count done / total, elapsed, ETA, the postfix."""

    def __init__(self, iterable=None, *, total: int | None = None, desc: str = "", unit: str = "it", initial: int = 0,
                 interval: float = INTERVAL, file=None):
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit.strip()
        self.n, self._initial, self.postfix = initial, initial, ""
        self._file, self._started, self._closed = file or sys.stderr, time.monotonic(), threading.Event()
        threading.Thread(target=_every, args=(weakref.ref(self), self._closed, interval), daemon=True).start()

    def __iter__(self):
        try:
            for item in self.iterable:
                yield item
                self.n += 1
        finally:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_postfix(self, values: dict) -> None:
        self.postfix = ", ".join(f"{name} {value}" for name, value in values.items())

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._write()

    def line(self) -> str:
        """E.g. "p1: 2/3 epoch, 00:12 elapsed, ETA 00:06, val_f1 0.81"."""
        elapsed = time.monotonic() - self._started
        parts = [f"{self.desc}: {self.n}" + (f"/{self.total}" if self.total is not None else "") + f" {self.unit}",
                 f"{tqdm.format_interval(elapsed)} elapsed"]
        done = self.n - self._initial
        if self.total is not None and 0 < done and self.n < self.total:
            parts.append(f"ETA {tqdm.format_interval(elapsed / done * (self.total - self.n))}")
        return ", ".join(parts + ([self.postfix] if self.postfix else []))

    def _write(self) -> None:
        try:
            print(self.line(), file=self._file, flush=True)
        except ValueError:  # the stream is closed (a test's captured output, say): nothing more to say
            self._closed.set()


def _every(bar_ref: weakref.ref, closed: threading.Event, interval: float) -> None:
    """Write the bar's line every `interval` seconds until it is closed, or dropped unclosed (its
    loop ended by an exception)."""
    while not closed.wait(interval):
        bar = bar_ref()
        if bar is None:
            return
        bar._write()
        del bar
