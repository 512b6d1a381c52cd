"""Load test of the pooling server's uploads over loopback: a fresh data directory, a real
server process (`deidpool server run --no-worker`), three institutions, 100 small valid
contributions each (a tiny signed representer, dimension 6) uploaded concurrently by a
thread pool, with re-uploads of a share of them shuffled in (duplicates; some race their originals).

Then it checks that every file was accepted exactly once (one 201 per file, 409 for every
other upload of it), and that the API (each institution's signed listing), the database rows
and the payload files all hold exactly the uploaded files, with their sentence and token
counts. Reports throughput (uploads/s, MB/s) and latency percentiles; writes
results/load_uploads.md and .json.

    python experiments/load_uploads.py [--per-institution 100] [--workers 16] [--duplicates 0.1]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results"
INSTITUTIONS = ("site-a", "site-b", "site-c")
TAGS = ["O", "B-NAME", "I-NAME"]
REPR_SIZE, SENTENCES = 6, 24


def build_contributions(folder: Path, bundle_manifest: dict, signing_keys: dict, server_key, per_institution: int,
                        seed: int) -> list[dict]:
    """`per_institution` contributions of SENTENCES random sentences per institution; returns
    {path, institution, sha256, sentences, tokens, bytes} per file."""
    from client.contribution import encode_sentence, write_contribution

    rng = np.random.default_rng(seed)
    files = []
    for institution in INSTITUTIONS:
        for number in range(per_institution):
            path = folder / institution / f"{number:04d}.dpc"
            path.parent.mkdir(parents=True, exist_ok=True)
            records = [encode_sentence(rng.normal(size=(length, REPR_SIZE)), rng.integers(0, len(TAGS), length),
                                       rng.integers(0, 5, length)) for length in rng.integers(1, 30, SENTENCES)]
            header = write_contribution(path, records, institution=institution,
                                        representer_id=bundle_manifest["representer_id"], dim=REPR_SIZE,
                                        neighbours=100, pseudonymization="groups",
                                        signing_key=signing_keys[institution], server_key=server_key)
            data = path.read_bytes()
            files.append({"path": path, "institution": institution, "sha256": hashlib.sha256(data).hexdigest(),
                          "sentences": header.sentences, "tokens": header.tokens, "bytes": len(data)})
    return files


def upload(client: httpx.Client, file: dict) -> dict:
    """POST one contribution as client.transport does; returns its status and latency."""
    from client.transport import CONTENT_TYPE, ENDPOINT

    body = file["path"].read_bytes()
    started = time.perf_counter()
    response = client.post(ENDPOINT, content=body, headers={
        "Content-Type": CONTENT_TYPE, "X-Deidpool-Institution": file["institution"],
        "X-Deidpool-Content-SHA256": file["sha256"]})
    return {"sha256": file["sha256"], "status": response.status_code, "seconds": time.perf_counter() - started,
            "bytes": len(body), "detail": "" if response.status_code in (201, 409) else response.text[:300]}


def check_storage(url: str, data_dir: Path, files: list[dict], results: list[dict], signing_keys: dict,
                  representer_sha: str) -> dict:
    """Every file accepted once and stored once: statuses, each institution's signed listing,
    the database rows and the payload files. Returns the checks (name -> passed)."""
    from sqlalchemy import func, select

    from client.signed_requests import signed_headers
    from server.database import Contribution, open_database
    from server.settings import Layout

    expected = {file["sha256"]: file for file in files}
    created = collections.Counter(result["sha256"] for result in results if result["status"] == 201)
    checks = {"every upload answered 201 or 409": all(result["status"] in (201, 409) for result in results),
              "one 201 per file": created == collections.Counter(expected.keys())}
    for institution in INSTITUTIONS:
        path = "/api/contributions"
        listed = httpx.get(url + path, headers=signed_headers(signing_keys[institution], institution, "GET", path),
                           timeout=60).json()
        mine = {sha for sha, file in expected.items() if file["institution"] == institution}
        checks[f"{institution} lists its {len(mine)} files once"] = sorted(row["sha256"] for row in listed) == sorted(mine)
    sessions = open_database(data_dir, migrate=False)
    with sessions() as session:
        rows = session.execute(select(Contribution.sha256, Contribution.sentences, Contribution.tokens,
                                      Contribution.size_bytes)).all()
        counted = session.execute(select(func.count(), func.sum(Contribution.sentences),
                                         func.sum(Contribution.tokens))).one()
    sessions.kw["bind"].dispose()
    checks["database rows == unique files"] = sorted(row.sha256 for row in rows) == sorted(expected)
    checks["database counts == file headers"] = all(
        (row.sentences, row.tokens, row.size_bytes) == tuple(expected[row.sha256][key] for key in
                                                             ("sentences", "tokens", "bytes")) for row in rows)
    checks["database totals"] = tuple(counted) == (len(files), sum(f["sentences"] for f in files),
                                                   sum(f["tokens"] for f in files))
    stored = sorted(path.name for path in Layout(data_dir).payloads.rglob("*") if path.is_file())
    checks["payload files == unique files (+ the representer bundle), no temporary file"] = (
        stored == sorted([*expected, representer_sha]))
    return checks


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def run(per_institution: int, workers: int, duplicates: float, seed: int, folder: Path) -> dict:
    from client.identity import create_institution_keys
    from deidpool.demo import ServerProcess, wait_until
    from representer import keys
    from representer.tiny import publish_tiny_pipeline
    from server.initialize import init_data_dir

    provider = keys.create_provider_keys(folder / "keys")
    pipeline = publish_tiny_pipeline(folder / "provider", keys.load_private_key(provider.private, keys.SIGNING),
                                     ["patient", "doctor", "clinic", "visit"], TAGS, repr_size=REPR_SIZE)
    data_dir = folder / "server"
    token = init_data_dir(data_dir, provider.public)
    server = ServerProcess(data_dir, folder / "server.log", worker=False)
    try:
        wait_until(server.healthy, 180, "the server to answer /api/health")
        admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        signing_keys = {}
        for institution in INSTITUTIONS:
            pair = create_institution_keys(folder / "keys" / institution, institution)
            reply = admin.post("/api/institutions", json={"id": institution, "public_key": pair.public.read_text()})
            reply.raise_for_status()
            signing_keys[institution] = keys.load_private_key(pair.private, keys.SIGNING)
        reply = admin.post("/api/representers", content=pipeline.read_bytes())
        reply.raise_for_status()
        manifest = reply.json()["manifest"]
        representer_sha = reply.json()["payload_sha256"]
        server_key = keys.load_public_key(data_dir / "keys" / "server-encryption.pub", keys.ENCRYPTION)
        started = time.perf_counter()
        files = build_contributions(folder / "contributions", manifest, signing_keys, server_key, per_institution,
                                    seed)
        build_seconds = time.perf_counter() - started
        rng = random.Random(seed)
        tasks = files + rng.sample(files, round(duplicates * len(files)))
        rng.shuffle(tasks)
        with httpx.Client(base_url=server.url, timeout=120,
                          limits=httpx.Limits(max_connections=workers)) as client, \
                ThreadPoolExecutor(workers) as pool:
            started = time.perf_counter()
            results = list(pool.map(lambda file: upload(client, file), tasks))
            wall = time.perf_counter() - started
        checks = check_storage(server.url, data_dir, files, results, signing_keys, representer_sha)
    finally:
        server.stop()
    latencies = [result["seconds"] for result in results]
    sent = sum(result["bytes"] for result in results)
    return {
        "parameters": {"institutions": len(INSTITUTIONS), "per_institution": per_institution, "workers": workers,
                       "duplicate_share": duplicates, "seed": seed, "sentences_per_file": SENTENCES,
                       "dim": REPR_SIZE, "database": "PostgreSQL ($DATABASE_URL)" if os.environ.get("DATABASE_URL")
                       else "SQLite"},
        "files": len(files), "uploads": len(results), "bytes_sent": sent,
        "mean_file_bytes": round(sum(file["bytes"] for file in files) / len(files)),
        "statuses": dict(sorted(collections.Counter(result["status"] for result in results).items())),
        "errors": [result["detail"] for result in results if result["detail"]][:5],
        "build_seconds": round(build_seconds, 2), "wall_seconds": round(wall, 3),
        "uploads_per_second": round(len(results) / wall, 1), "mb_per_second": round(sent / wall / 1e6, 3),
        "latency_ms": {"p50": round(percentile(latencies, 50) * 1000, 1),
                       "p99": round(percentile(latencies, 99) * 1000, 1),
                       "max": round(max(latencies) * 1000, 1)},
        "checks": checks,
    }


def report(result: dict) -> str:
    p = result["parameters"]
    latency = result["latency_ms"]
    lines = [
        "# Upload load test",
        "",
        f"{result['date']}, commit {result['commit']}, {result['machine']}; server `deidpool server run --no-worker` "
        f"on loopback ({p['database']}), {p['workers']} client threads sharing one HTTP connection pool. "
        f"{p['institutions']} institutions x {p['per_institution']} contributions ({p['sentences_per_file']} "
        f"sentences, d = {p['dim']}, mean {result['mean_file_bytes']:,} bytes), plus re-uploads of "
        f"{p['duplicate_share']:.0%} of them in random order (seed {p['seed']}). Other jobs share the machine's cores.",
        "",
        "| uploads | files | statuses | wall s | uploads/s | MB/s | p50 ms | p99 ms | max ms |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
        f"| {result['uploads']} | {result['files']} | "
        f"{', '.join(f'{status}: {count}' for status, count in result['statuses'].items())} | "
        f"{result['wall_seconds']} | {result['uploads_per_second']} | {result['mb_per_second']} | {latency['p50']} | "
        f"{latency['p99']} | {latency['max']} |",
        "",
        "| check | passed |",
        "|---|---|",
        *(f"| {name} | {'yes' if passed else '**NO**'} |" for name, passed in result["checks"].items()),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-institution", type=int, default=100)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--duplicates", type=float, default=0.1, help="share of the files uploaded a second time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS, help="where load_uploads.md and .json go")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="deidpool-load-") as folder:
        result = run(args.per_institution, args.workers, args.duplicates, args.seed, Path(folder))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": commit.stdout.strip() or "unknown",
              "machine": f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}, "
                         f"load average {os.getloadavg()[0]:.1f}", **result}
    text = report(result)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "load_uploads.md").write_text(text)
    (args.out / "load_uploads.json").write_text(json.dumps(result, indent=2) + "\n")
    if not all(result["checks"].values()):
        sys.exit("some storage checks failed: see the table above")


if __name__ == "__main__":
    main()
