"""Progress: a tqdm bar on a terminal, plain lines elsewhere."""

import io
import re
import time

from tqdm import tqdm

from deidpool.representer.progress import ProgressLines, progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_gets_a_bar_and_anything_else_lines(monkeypatch):
    monkeypatch.setattr("sys.stderr", Terminal())
    assert isinstance(progress_bar(range(3), desc="steps"), tqdm)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert isinstance(progress_bar(range(3), desc="steps"), ProgressLines)
    assert isinstance(progress_bar(range(3), desc="steps", disable=True), tqdm)


def test_lines_say_what_how_far_how_long_and_the_postfix():
    out = io.StringIO()
    with ProgressLines(total=4, desc="three-phase", unit="epoch", initial=1, file=out) as bar:
        bar.update()
        bar.set_postfix({"loss": "0.31"})
        assert re.fullmatch(r"three-phase: 2/4 epoch, 00:0\d elapsed, ETA 00:0\d, loss 0\.31", bar.line())
    assert out.getvalue().count("\n") == 1 and "three-phase: 2/4 epoch" in out.getvalue()
    assert "ETA" not in ProgressLines(desc="writing", unit=" sentences", file=io.StringIO()).line()


def test_iteration_counts_and_a_line_comes_every_interval():
    out = io.StringIO()
    items = []
    for item in ProgressLines(range(3), desc="inversion", unit="epoch", interval=0.05, file=out):
        items.append(item)
        time.sleep(0.12)
    lines = out.getvalue().splitlines()
    assert items == [0, 1, 2] and len(lines) >= 4
    assert lines[-1].startswith("inversion: 3/3 epoch, ")


def test_a_bar_dropped_unclosed_or_writing_to_a_closed_stream_falls_silent():
    out = io.StringIO()
    bar = ProgressLines(total=2, desc="dropped", interval=0.02, file=out)
    del bar  # as when an exception ends its loop
    time.sleep(0.1)
    written = out.getvalue()
    time.sleep(0.1)
    assert out.getvalue() == written
    closed = io.StringIO()
    bar = ProgressLines(total=2, desc="closed", interval=0.02, file=closed)
    closed.close()
    time.sleep(0.1)
    assert bar._closed.is_set()
