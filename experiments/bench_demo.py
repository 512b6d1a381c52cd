"""Wall time and peak memory of `deidpool demo` on the embedded default (target: at most 10
minutes on the 2-core machine); writes results/speed/demo.md and demo.json.

    python experiments/bench_demo.py [--data ../shared/data/physionet-deid --format physionet]

The demo runs as a child process under GNU time; the demo also reads the peak resident memory
of its own, the server's and the worker's process before the server stops. The machine's float32
matmul rate (bench_speed's 4096 x 4096 products) is measured in a child process before and after
the demo, so that a reader can tell the machine's fast and slow states apart.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from deidpool.report import SCORE_COLUMNS, score_rows
from results_files import results_file

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 600


def commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()


def matmul_rate() -> float:
    """The float32 GFLOP/s of this machine now, measured in a child process (TensorFlow stays out of
    this one)."""
    code = "from bench_speed import matmul_gflops; print(matmul_gflops(4096, 4096, 4096))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO / "experiments", capture_output=True, text=True,
                            check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return float(result.stdout.split()[-1])


def run_demo(out: Path, extra: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB by GNU time, load average before) of one demo run."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    command = ["/usr/bin/time", "-v", sys.executable, "-m", "deidpool", "demo", "--out", str(out), *extra]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if result.returncode:
        raise SystemExit(f"the demo failed ({result.returncode}):\n{result.stderr[-3000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1))
    return wall, peak_kb / 1024, f"{load:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="corpus with provider/site/test splits (default: synthetic)")
    parser.add_argument("--format", help="format of --data")
    args = parser.parse_args()
    extra = ["--data", args.data, "--format", args.format] if args.data else []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "demo"
        rates = [matmul_rate()]
        wall, peak, load = run_demo(out, extra)
        rates.append(matmul_rate())
        summary = json.loads((out / "summary.json").read_text())
    machine = f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}"
    name = "demo" if not args.data else f"demo-{Path(args.data).name}"
    lines = ["# `deidpool demo` wall time and memory\n",
             f"{date.today()}, commit {commit()}, {machine}; 1-minute load average before the run: {load}.",
             f"Command: `python experiments/bench_demo.py {' '.join(extra)}`. Data: {summary['data']}.\n",
             f"Wall time **{wall:.0f} s** (target <= {TARGET_SECONDS} s: "
             f"{'met' if wall <= TARGET_SECONDS else 'MISSED'}) at a float32 matmul rate of {rates[0]:.0f} GFLOP/s "
             f"before and {rates[1]:.0f} after (the machine's slow state: below about 200); "
             f"peak RSS {peak:.0f} MB (demo process, GNU time); "
             + ", ".join(f"{process} {mb:.0f} MB" for process, mb in summary["peak_memory_mb"].items())
             + " (VmHWM of each process, read by the demo).\n",
             "| stage | seconds |", "|---|---|",
             *(f"| {stage['name']} | {stage['seconds']:.1f} |" for stage in summary["stages"]),
             "", "| tagger on test notes | " + " | ".join(title for _, title in SCORE_COLUMNS) + " |",
             "|---|" + "---|" * len(SCORE_COLUMNS),
             *("| " + " | ".join(row) + " |" for row in score_rows(summary)),
             "", f"Audit verdict: {summary['audit']['verdict']}."]
    text = "\n".join(lines) + "\n"
    print(text)
    results_file(name, ".md").parent.mkdir(parents=True, exist_ok=True)
    results_file(name, ".md").write_text(text)
    results_file(name, ".json").write_text(json.dumps(
        {"date": str(date.today()), "commit": commit(), "machine": machine, "load_before": load, "wall_seconds": wall,
         "matmul_gflops": {"before": rates[0], "after": rates[1]},
         "peak_rss_mb": peak, "summary": {key: summary[key] for key in ("data", "stages", "scores", "audit",
                                                                       "contributions", "peak_memory_mb")}},
        indent=2) + "\n")


if __name__ == "__main__":
    main()
