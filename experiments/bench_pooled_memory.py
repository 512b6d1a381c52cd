"""Peak memory and epoch time of the pooled training worker as the pool grows.

For each size (1x, 3x, 10x a base number of sentences): a fresh server data directory (SQLite),
three institutions whose synthetic contributions (d = 50 float16 vectors, 5 to 39 tokens per
sentence, contributions of at most 1,000 sentences) are uploaded through the API, one queued
run of two epochs, and a real `deidpool server worker --once` process that trains it. Its peak
resident memory is the child's ru_maxrss (os.wait4); the epoch times are the run's epoch
records (training and validation; the first also traces the TensorFlow functions, the second
is the steady state). The worker streams the contributions, so its peak memory should stay
within 20% from 1x to 10x and the epoch time grow linearly. Writes results/speed/pooled_memory.md
and .json.

    nice -n 10 python experiments/bench_pooled_memory.py [--sentences 3000] [--scales 1 3 10] [--lstm-units 32]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from results_files import write_results

INSTITUTIONS = ("site-a", "site-b", "site-c")
TAGS = ["O", "B-NAME", "I-NAME"]
DIM, PER_CONTRIBUTION, EPOCHS = 50, 1000, 2


def synthetic_records(rng: np.random.Generator, count: int) -> list[bytes]:
    """`count` sentence records: random vectors, PHI ("B-NAME") where the second component is above 1."""
    from deidpool.contribution.records import encode_sentence

    records = []
    for length in rng.integers(5, 40, count):
        vectors = rng.normal(size=(length, DIM))
        records.append(encode_sentence(vectors, (vectors[:, 1] > 1).astype(int), rng.integers(0, 5, length)))
    return records


def build_pool(folder: Path, sentences: int, lstm_units: int, seed: int) -> Path:
    """A server data directory holding `sentences` sentences in contributions of the three
    institutions (in turn), and one queued run of EPOCHS epochs; returns the directory."""
    from fastapi.testclient import TestClient

    from deidpool.client.identity import create_institution_keys
    from deidpool.contribution.container import CONTENT_TYPE, write_contribution
    from deidpool.contribution.signed_requests import signed_headers, url_host
    from deidpool.representer import keys
    from deidpool.representer.tiny import publish_tiny_pipeline
    from deidpool.server.app import create_app
    from deidpool.server.initialize import init_data_dir
    from deidpool.server.runs import queue_run
    from deidpool.server.state import ServerState

    provider = keys.create_provider_keys(folder / "keys")
    pipeline = publish_tiny_pipeline(folder / "provider", keys.load_private_key(provider.private, keys.SIGNING),
                                     ["patient", "doctor", "clinic", "visit"], TAGS, repr_size=DIM)
    data_dir = folder / "server"
    admin = {"Authorization": f"Bearer {init_data_dir(data_dir, provider.public)}"}
    rng = np.random.default_rng(seed)
    with TestClient(create_app(data_dir)) as api:
        signing_keys = {}
        for institution in INSTITUTIONS:
            pair = create_institution_keys(folder / "keys" / institution, institution)
            api.post("/api/institutions", headers=admin,
                     json={"id": institution, "public_key": pair.public.read_text()}).raise_for_status()
            signing_keys[institution] = keys.load_private_key(pair.private, keys.SIGNING)
        reply = api.post("/api/representers", headers=admin, content=pipeline.read_bytes())
        reply.raise_for_status()
        representer_id = reply.json()["representer_id"]
        server_key = keys.load_public_key(data_dir / "keys" / "server-encryption.pub", keys.ENCRYPTION)
        for number, start in enumerate(range(0, sentences, PER_CONTRIBUTION)):
            institution = INSTITUTIONS[number % len(INSTITUTIONS)]
            path = folder / "contributions" / f"{number:03d}.dpc"
            write_contribution(path, synthetic_records(rng, min(PER_CONTRIBUTION, sentences - start)),
                               institution=institution, representer_id=representer_id, dim=DIM, neighbours=100,
                               pseudonymization="groups", signing_key=signing_keys[institution], server_key=server_key)
            body = path.read_bytes()
            api.post("/api/contributions", content=body, headers={"Content-Type": CONTENT_TYPE, **signed_headers(
                signing_keys[institution], institution, "POST", "/api/contributions", host=url_host(str(api.base_url)),
                content_sha256=hashlib.sha256(body).hexdigest())}).raise_for_status()
    state = ServerState.open(data_dir)
    try:
        queue_run(state, {"max_epochs": EPOCHS, "patience": EPOCHS, "seed": seed, "valid_fraction": 0.1,
                          "lstm_units": lstm_units})
    finally:
        state.close()
    return data_dir


def measure(data_dir: Path) -> dict:
    """Train the queued run with a `deidpool server worker --once` process: its peak RSS (MB),
    wall time, and the seconds of each of its epochs."""
    from sqlalchemy import select

    from deidpool.server.database import RunEpoch, TrainingRun, open_database

    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "deidpool", "server", "worker", "--data-dir", str(data_dir),
                                "--once"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = process.stderr.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise RuntimeError(f"the worker failed:\n{stderr[-3000:]}")
    sessions = open_database(data_dir, migrate=False)
    with sessions() as session:
        run = session.scalars(select(TrainingRun)).one()
        epochs = session.scalars(select(RunEpoch).where(RunEpoch.run_id == run.id).order_by(RunEpoch.epoch)).all()
        seconds = [round(epoch.metrics["seconds"], 2) for epoch in epochs]
        status, contributions = run.status, len(run.contributions)
    sessions.kw["bind"].dispose()
    if status != "succeeded":
        raise RuntimeError(f"the run ended {status}:\n{stderr[-3000:]}")
    return {"peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "worker_seconds": round(wall, 2),
            "epoch_seconds": seconds, "contributions": contributions}


def report(result: dict) -> str:
    p, rows = result["parameters"], result["rows"]
    base = rows[0]
    lines = [
        "# Pooled training worker: peak memory and epoch time by pool size",
        "",
        f"{result['date']}, commit {result['commit']}, {result['machine']}. `deidpool server worker --once` on a "
        f"SQLite data directory; {len(INSTITUTIONS)} institutions' synthetic contributions (d = {DIM} float16, "
        f"5 to 39 tokens per sentence, at most {PER_CONTRIBUTION:,} sentences per contribution), {EPOCHS} epochs "
        f"of a tagger with {p['lstm_units']} LSTM units, 10% of each institution's sentences for validation. Peak "
        "RSS: the worker process's ru_maxrss; epoch: training and validation as the run records it (epoch 1 also "
        "traces the TensorFlow functions); worker: the whole process (start-up, TensorFlow import, the first pass "
        "over the contributions, the epochs, saving). Other jobs share the machine's cores.",
        "",
        "| pool | sentences | tokens | contributions (MB) | peak RSS MB | vs 1x | epoch 1 s | epoch 2 s "
        "| epoch 2 s per 1k sentences | worker s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(f"| {row['scale']}x | {row['sentences']:,} | {row['tokens']:,} | {row['contributions']} "
                     f"({row['contribution_mb']}) | {row['peak_rss_mb']:,} | "
                     f"{row['peak_rss_mb'] / base['peak_rss_mb'] - 1:+.1%} | {row['epoch_seconds'][0]} | "
                     f"{row['epoch_seconds'][-1]} | {1000 * row['epoch_seconds'][-1] / row['sentences']:.2f} | "
                     f"{row['worker_seconds']} |")
    largest = rows[-1]
    lines += ["", f"Peak memory from {base['scale']}x to {largest['scale']}x: "
                  f"{largest['peak_rss_mb'] / base['peak_rss_mb'] - 1:+.1%} (target: within 20%); epoch 2 time "
                  f"x{largest['epoch_seconds'][-1] / base['epoch_seconds'][-1]:.1f} for "
                  f"x{largest['scale'] / base['scale']:g} the sentences (target: linear)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=3000, help="sentences of the 1x pool")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 3, 10])
    parser.add_argument("--lstm-units", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="pooled_memory", help="results file stem")
    args = parser.parse_args()
    from deidpool.contribution.container import read_header

    os.environ.pop("DATABASE_URL", None)  # each size gets its own SQLite database
    rows = []
    for scale in args.scales:
        with tempfile.TemporaryDirectory(prefix="bench-pooled-") as folder:
            sentences = args.sentences * scale
            data_dir = build_pool(Path(folder), sentences, args.lstm_units, args.seed)
            payloads = sorted(Path(folder, "contributions").glob("*.dpc"))
            tokens = sum(read_header(path).tokens for path in payloads)
            row = {"scale": scale, "sentences": sentences, "tokens": tokens,
                   "contribution_mb": round(sum(path.stat().st_size for path in payloads) / 1e6, 1),
                   **measure(data_dir)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "commit": commit or "unknown",
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
              "parameters": {"base_sentences": args.sentences, "scales": args.scales, "lstm_units": args.lstm_units,
                             "dim": DIM, "per_contribution": PER_CONTRIBUTION, "seed": args.seed},
              "rows": rows}
    write_results(args.output, report(result), result)


if __name__ == "__main__":
    main()
