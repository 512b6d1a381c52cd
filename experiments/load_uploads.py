"""Load test of the pooling server's uploads over loopback: a fresh data directory, a real
server process (`deidpool server run --no-worker`), three institutions, 100 small valid
contributions each (a tiny signed representer, dimension 6) uploaded concurrently by a
thread pool, with re-uploads of a share of them shuffled in (duplicates; some race their originals).

Then it checks that every file was accepted exactly once (one 201 per file, 409 for every
other upload of it), and that the API (each institution's signed listing), the database rows
and the payload files all hold exactly the uploaded files, with their sentence and token
counts. Reports throughput (uploads/s, MB/s) and latency percentiles; writes
results/server/load_uploads.md and .json.

With --faults the same uploads go through the project's client (`upload_contribution`: retries
with backoff, success only once the server lists the contribution), started `--interval` s apart
so that they span the faults, while a supervisor thread, at random moments 1-3 s apart, SIGKILLs
the server while a request is in flight and starts it again on the same port and data directory
(`--kills` times), and once fills the payload volume (a small tmpfs mounted on D/payloads) and
once the database volume (another, holding the SQLite file through $DATABASE_URL; its
write-ahead log truncated first, so that the next commits need room), each for `--full-seconds`
before freeing it. After the uploads the payload files must be those of the
database rows (no payload left without its row); then the server is killed and started once more
(start-up reconciliation), and every acknowledged upload must be listed by its institution (0
lost), none accepted or listed twice (0 duplicated), database rows == payload files ==
acknowledged files, no temporary file left and no 5xx but 507. Writes
results/server/load_uploads_faults.md and .json.

    python experiments/load_uploads.py [--per-institution 100] [--workers 16] [--duplicates 0.1]
    python experiments/load_uploads.py --faults [--kills 4] [--full-seconds 8] [--interval 0.5] [--retries 8]
                                                [--backoff 0.5]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import errno
import hashlib
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import httpx
import numpy as np

from bench_demo import matmul_rate
from results_files import results_folder

REPO = Path(__file__).resolve().parents[1]
INSTITUTIONS = ("site-a", "site-b", "site-c")
TAGS = ["O", "B-NAME", "I-NAME"]
REPR_SIZE, SENTENCES = 6, 24
VOLUME_MB = 64  # each tmpfs of --faults (payloads, database)
DATABASE_FILE = "deidpool.sqlite"
FAULT_NAMES = {"kill": "SIGKILL + restart", "full payloads": "payload volume full",
               "full database": "database volume full"}


def build_contributions(folder: Path, bundle_manifest: dict, signing_keys: dict, server_key, per_institution: int,
                        seed: int) -> list[dict]:
    """`per_institution` contributions of SENTENCES random sentences per institution; returns
    {path, institution, sha256, sentences, tokens, bytes} per file."""
    from deidpool.contribution.container import write_contribution
    from deidpool.contribution.records import encode_sentence

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


def restart(server, payloads: Path) -> int:
    """SIGKILL the server process (a `deidpool.demo.ServerProcess`) and start it again on the
    same port and data directory, as an operator's supervisor would; returns how many temporary
    upload files (`payloads`/.staged-*) the kill left."""
    from deidpool.demo import wait_until

    server.process.kill()
    server.process.wait()
    left = len(list(payloads.glob(".staged-*")))
    server.process = subprocess.Popen(server.process.args, stdout=server._log, stderr=subprocess.STDOUT)
    wait_until(server.healthy, 180, "the restarted server to answer /api/health")
    return left


@contextlib.contextmanager
def serving(folder: Path, per_institution: int, seed: int):
    """A running server in folder/server (three registered institutions, a current representer)
    and the contributions to upload: yields {server, data_dir, payloads, signing_keys,
    representer_sha, files, build_seconds}; the server is stopped on exit."""
    from deidpool.client.identity import create_institution_keys
    from deidpool.demo import ServerProcess, wait_until
    from deidpool.representer import keys
    from deidpool.representer.tiny import publish_tiny_pipeline
    from deidpool.server.initialize import init_data_dir
    from deidpool.server.settings import Layout

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
        server_key = keys.load_public_key(data_dir / "keys" / "server-encryption.pub", keys.ENCRYPTION)
        started = time.perf_counter()
        files = build_contributions(folder / "contributions", reply.json()["manifest"], signing_keys, server_key,
                                    per_institution, seed)
        yield SimpleNamespace(server=server, data_dir=data_dir, payloads=Layout(data_dir).payloads,
                              signing_keys=signing_keys, files=files,
                              representer_sha=reply.json()["payload_sha256"],
                              build_seconds=time.perf_counter() - started)
    finally:
        server.stop()


def upload_order(files: list[dict], duplicates: float, seed: int) -> list[dict]:
    """Every file, plus a second upload of a `duplicates` share of them, shuffled."""
    rng = random.Random(seed)
    tasks = files + rng.sample(files, round(duplicates * len(files)))
    rng.shuffle(tasks)
    return tasks


def upload(client: httpx.Client, file: dict, signing_keys: dict) -> dict:
    """POST one contribution as client.transport does (a request signed with its institution's
    key); returns its status and latency."""
    from deidpool.client.transport import ENDPOINT
    from deidpool.contribution.container import CONTENT_TYPE
    from deidpool.contribution.signed_requests import signed_headers, url_host

    body = file["path"].read_bytes()
    started = time.perf_counter()
    response = client.post(ENDPOINT, content=body, headers={"Content-Type": CONTENT_TYPE, **signed_headers(
        signing_keys[file["institution"]], file["institution"], "POST", ENDPOINT, host=url_host(str(client.base_url)),
        content_sha256=file["sha256"])})
    return {"sha256": file["sha256"], "status": response.status_code, "seconds": time.perf_counter() - started,
            "bytes": len(body), "detail": "" if response.status_code in (201, 409) else response.text[:300]}


def stored_state(pool: SimpleNamespace) -> dict:
    """What the server holds: each institution's signed listing (sha256s, in order), the
    database rows and the names of every file under the payload folder."""
    from sqlalchemy import select

    from deidpool.contribution.signed_requests import signed_headers, url_host
    from deidpool.server.database import Contribution, open_database

    listed = {}
    for institution in INSTITUTIONS:
        path = "/api/contributions"
        reply = httpx.get(pool.server.url + path, timeout=60,
                          headers=signed_headers(pool.signing_keys[institution], institution, "GET", path,
                                                 host=url_host(pool.server.url)))
        listed[institution] = [row["sha256"] for row in reply.json()]
    sessions = open_database(pool.data_dir, migrate=False)
    with sessions() as session:
        rows = [row._asdict() for row in session.execute(select(
            Contribution.sha256, Contribution.sentences, Contribution.tokens, Contribution.size_bytes))]
    sessions.kw["bind"].dispose()
    return {"listed": listed, "rows": rows,
            "payload_files": sorted(path.name for path in pool.payloads.rglob("*") if path.is_file())}


def rows_match_headers(rows: list[dict], files: list[dict]) -> bool:
    """Whether every row's sentence and token counts and size are those of its file."""
    expected = {file["sha256"]: file for file in files}
    return all(row["sha256"] in expected and (row["sentences"], row["tokens"], row["size_bytes"]) ==
               tuple(expected[row["sha256"]][key] for key in ("sentences", "tokens", "bytes")) for row in rows)


def check_storage(state: dict, files: list[dict], results: list[dict], representer_sha: str) -> dict:
    """Every file accepted once and stored once: statuses, each institution's signed listing,
    the database rows and the payload files. Returns the checks (name -> passed)."""
    expected = {file["sha256"]: file for file in files}
    created = collections.Counter(result["sha256"] for result in results if result["status"] == 201)
    checks = {"every upload answered 201 or 409": all(result["status"] in (201, 409) for result in results),
              "one 201 per file": created == collections.Counter(expected.keys())}
    for institution in INSTITUTIONS:
        mine = {sha for sha, file in expected.items() if file["institution"] == institution}
        checks[f"{institution} lists its {len(mine)} files once"] = sorted(state["listed"][institution]) == sorted(mine)
    rows = state["rows"]
    checks["database rows == unique files"] = sorted(row["sha256"] for row in rows) == sorted(expected)
    checks["database counts == file headers"] = rows_match_headers(rows, files)
    checks["database totals"] = ((len(rows), sum(row["sentences"] for row in rows), sum(row["tokens"] for row in rows))
                                 == (len(files), sum(f["sentences"] for f in files), sum(f["tokens"] for f in files)))
    checks["payload files == unique files (+ the representer bundle), no temporary file"] = (
        state["payload_files"] == sorted([*expected, representer_sha]))
    return checks


def check_faults(state: dict, files: list[dict], outcomes: list[dict], created: collections.Counter,
                 answers: collections.Counter, representer_sha: str) -> tuple[dict, dict]:
    """The checks of --faults from what the server holds (`stored_state`), the client's
    `outcomes` ({sha256, acknowledged} per upload), the 201s per file and every answer
    ("POST 507", "GET connection error", ...). Returns the counts (acknowledged, given up and
    of those stored all the same, lost, duplicated) and the checks (name -> passed)."""
    institution = {file["sha256"]: file["institution"] for file in files}
    acknowledged = {outcome["sha256"] for outcome in outcomes if outcome["acknowledged"]}
    lost = sorted(sha for sha in acknowledged if sha not in state["listed"][institution[sha]])
    rows = [row["sha256"] for row in state["rows"]]
    listed = [sha for shas in state["listed"].values() for sha in shas]
    duplicated = (sum(count - 1 for count in created.values() if count > 1) + len(listed) - len(set(listed))
                  + len(rows) - len(set(rows)))
    blobs = payload_blobs(state, representer_sha)
    statuses = [answer.split()[1] for answer in answers]
    counts = {"files": len(institution), "acknowledged": len(acknowledged),
              "given_up": len(set(institution) - acknowledged), "given_up_stored": len(set(rows) - acknowledged),
              "lost": len(lost), "duplicated": duplicated}
    checks = {
        "every file acknowledged (no upload given up)": counts["given_up"] == 0,
        "0 lost: every acknowledged upload listed by its institution": not lost,
        "0 duplicated: no file answered 201 twice, listed twice or in two rows": duplicated == 0,
        "database rows == payload files == acknowledged files (+ given-up uploads stored all the same)":
            payloads_match_rows(state, representer_sha) and acknowledged <= set(rows) <= set(institution),
        "database counts == file headers": rows_match_headers(state["rows"], files),
        "no temporary file left (.staged-*, .publish-*)": not any(name.startswith(".") for name in blobs),
        "no 5xx answer but 507": all(status == "507" or not status.startswith("5") for status in statuses),
    }
    return counts, checks


def payload_blobs(state: dict, representer_sha: str) -> list[str]:
    """The names of the files under the payload folder but the representer bundle's."""
    return [name for name in state["payload_files"] if name != representer_sha]


def payloads_match_rows(state: dict, representer_sha: str) -> bool:
    """Whether the payload folder holds exactly one file per database row: no payload without its
    row, no temporary file."""
    return sorted(payload_blobs(state, representer_sha)) == sorted(row["sha256"] for row in state["rows"])


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def run(per_institution: int, workers: int, duplicates: float, seed: int, folder: Path) -> dict:
    with serving(folder, per_institution, seed) as pool:
        tasks = upload_order(pool.files, duplicates, seed)
        with httpx.Client(base_url=pool.server.url, timeout=120,
                          limits=httpx.Limits(max_connections=workers)) as client, \
                ThreadPoolExecutor(workers) as executor:
            started = time.perf_counter()
            results = list(executor.map(lambda file: upload(client, file, pool.signing_keys), tasks))
            wall = time.perf_counter() - started
        checks = check_storage(stored_state(pool), pool.files, results, pool.representer_sha)
    files = pool.files
    latencies = [result["seconds"] for result in results]
    sent = sum(result["bytes"] for result in results)
    return {
        "parameters": parameters(per_institution, workers, duplicates, seed),
        "files": len(files), "uploads": len(results), "bytes_sent": sent,
        "mean_file_bytes": round(sum(file["bytes"] for file in files) / len(files)),
        "statuses": dict(sorted(collections.Counter(result["status"] for result in results).items())),
        "errors": [result["detail"] for result in results if result["detail"]][:5],
        "build_seconds": round(pool.build_seconds, 2), "wall_seconds": round(wall, 3),
        "uploads_per_second": round(len(results) / wall, 1), "mb_per_second": round(sent / wall / 1e6, 3),
        "latency_ms": {"p50": round(percentile(latencies, 50) * 1000, 1),
                       "p99": round(percentile(latencies, 99) * 1000, 1),
                       "max": round(max(latencies) * 1000, 1)},
        "checks": checks,
    }


def parameters(per_institution: int, workers: int, duplicates: float, seed: int) -> dict:
    return {"institutions": len(INSTITUTIONS), "per_institution": per_institution, "workers": workers,
            "duplicate_share": duplicates, "seed": seed, "sentences_per_file": SENTENCES, "dim": REPR_SIZE,
            "database": "PostgreSQL ($DATABASE_URL)" if os.environ.get("DATABASE_URL", "").startswith("postgres")
            else "SQLite"}


class Tally:
    """The answers the clients got (thread-safe): a count per "METHOD status" or "METHOD
    connection error", the 201s per file, and how many requests are in flight."""

    def __init__(self):
        self.lock = threading.Lock()
        self.answers = collections.Counter()
        self.created = collections.Counter()
        self.in_flight = 0

    def begin(self) -> None:
        with self.lock:
            self.in_flight += 1

    def end(self, request: httpx.Request, answer: int | str) -> None:
        with self.lock:
            self.in_flight -= 1
            self.answers[f"{request.method} {answer}"] += 1
            if request.method == "POST" and answer == 201:
                self.created[request.headers["X-Deidpool-Content-SHA256"]] += 1


class TallyingTransport(httpx.HTTPTransport):
    """The HTTP transport, counting every answer in a `Tally`; a connection cut while the body
    arrives counts as a connection error."""

    def __init__(self, tally: Tally):
        super().__init__()
        self.tally = tally

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.tally.begin()
        try:
            response = super().handle_request(request)
            response.read()
        except httpx.TransportError:
            self.tally.end(request, "connection error")
            raise
        self.tally.end(request, response.status_code)
        return response


def acknowledged_upload(pool: SimpleNamespace, file: dict, tally: Tally, not_before: float, retries: int,
                        backoff: float) -> dict:
    """Upload `file` with the project's client (`retries`, `backoff`), not before the
    `time.perf_counter()` moment `not_before`; returns whether the client reported success, and
    how long it took."""
    from deidpool.client.transport import UploadError, upload_contribution

    time.sleep(max(0.0, not_before - time.perf_counter()))
    started, error = time.perf_counter(), ""
    try:
        upload_contribution(file["path"], pool.server.url, signing_key=pool.signing_keys[file["institution"]],
                            retries=retries, backoff=backoff, transport=TallyingTransport(tally))
    except UploadError as problem:
        error = str(problem)[:300]
    return {"sha256": file["sha256"], "acknowledged": not error, "seconds": time.perf_counter() - started,
            "error": error}


class Volume:
    """A `megabytes` tmpfs mounted on the (empty) folder `path`, which `fill` fills to the last
    byte with a filler file and `free` empties again."""

    def __init__(self, path: Path, megabytes: int):
        path.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path)], check=True,
                       capture_output=True, text=True)
        self.path, self.filler = path, path / "filler"

    def fill(self) -> None:
        block = bytes(1 << 16)
        with self.filler.open("ab", buffering=0) as filler:
            try:
                while filler.write(block):
                    pass
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def unmount(self) -> None:
        subprocess.run(["umount", str(self.path)], check=True)


def request_in_flight(tally: Tally, done: threading.Event) -> bool:
    """Wait until a request is in flight; False if the uploads are `done` first."""
    while not tally.in_flight:
        if done.wait(0.005):
            return False
    return True


def inject_faults(pool: SimpleNamespace, volumes: dict[str, Volume], schedule: list[str], full_seconds: float,
                  tally: Tally, rng: random.Random, done: threading.Event) -> list[dict]:
    """The supervisor: for each fault of `schedule` ("kill", or the name of one of `volumes`), after
    1-3 s, unless the uploads are `done`, SIGKILL the server (once a request is in flight) and
    start it again, or fill the volume for `full_seconds` (topped up as uploads free space) and
    free it. Returns what happened."""
    events, started = [], time.perf_counter()
    for fault in schedule:
        if done.wait(rng.uniform(1, 3)) or (fault == "kill" and not request_in_flight(tally, done)):
            break
        event = {"fault": fault, "at_s": round(time.perf_counter() - started, 1), "in_flight": tally.in_flight}
        moment = time.perf_counter()
        if fault == "kill":
            event["staged_left"] = restart(pool.server, pool.payloads)
        else:
            volume = volumes[fault]
            if fault == "full database":
                truncate_wal(volume.path / DATABASE_FILE)
            volume.fill()
            while time.perf_counter() - moment < full_seconds and not done.wait(0.2):
                volume.fill()
            volume.free()
        event["seconds"] = round(time.perf_counter() - moment, 1)
        events.append(event)
    return events


def truncate_wal(database: Path) -> None:
    """Checkpoint the SQLite `database` and truncate its write-ahead log to nothing, as SQLite does
    at times: its next commits must grow the log (else they would reuse the log's room and only a
    later checkpoint would find the volume full)."""
    with contextlib.closing(sqlite3.connect(database, timeout=60)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def mount_volumes(folder: Path) -> tuple[dict[str, Volume], dict[str, str]]:
    """The tmpfs volumes of the payloads (D/payloads) and, unless $DATABASE_URL names another
    database, of the SQLite database (folder/database, $DATABASE_URL set here), by fault name, and
    how each fault is injected (or why not: `mount` needs root)."""
    places = {"full payloads": (folder / "server" / "payloads", "the payload folder D/payloads")}
    how = {"full database": "not injected: the database is PostgreSQL ($DATABASE_URL)"}
    if not os.environ.get("DATABASE_URL"):
        places["full database"] = (folder / "database", f"a folder holding the SQLite file {DATABASE_FILE}")
    volumes = {}
    for fault, (path, what) in places.items():
        try:
            volumes[fault] = Volume(path, VOLUME_MB)
            how[fault] = f"a {VOLUME_MB} MB tmpfs mounted on {what}"
        except (OSError, subprocess.CalledProcessError) as error:
            reason = (getattr(error, "stderr", "") or str(error)).strip()
            how[fault] = (f"not injected: `mount -t tmpfs` failed ({reason}); tests/server/test_recovery.py and "
                          "test_live_server.py cover full volumes without root")
    if "full database" in volumes:
        os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'database' / DATABASE_FILE}"
    return volumes, how


def run_faults(per_institution: int, workers: int, duplicates: float, seed: int, kills: int, full_seconds: float,
               interval: float, retries: int, backoff: float, folder: Path) -> dict:
    """The uploads, started `interval` seconds apart by clients with `retries` and `backoff`,
    with the server killed and its payload and database volumes full at times (module docstring)."""
    database = parameters(per_institution, workers, duplicates, seed)["database"]
    volumes, how = mount_volumes(folder)
    try:
        with serving(folder, per_institution, seed) as pool:
            tasks = upload_order(pool.files, duplicates, seed)
            rng, tally, done = random.Random(seed), Tally(), threading.Event()
            schedule = ["kill"] * kills + list(volumes)
            rng.shuffle(schedule)
            with ThreadPoolExecutor(workers + 1) as executor:
                started = time.perf_counter()
                supervisor = executor.submit(inject_faults, pool, volumes, schedule, full_seconds, tally, rng, done)
                outcomes = list(executor.map(lambda numbered: acknowledged_upload(
                    pool, numbered[1], tally, started + numbered[0] * interval, retries, backoff), enumerate(tasks)))
                wall = time.perf_counter() - started
                done.set()
                events = supervisor.result()
            before_restart = stored_state(pool)
            restart(pool.server, pool.payloads)  # the start-up reconciliation once more
            counts, checks = check_faults(stored_state(pool), pool.files, outcomes, tally.created, tally.answers,
                                          pool.representer_sha)
        log = (folder / "server.log").read_text(errors="replace")
    finally:
        if "full database" in volumes:
            del os.environ["DATABASE_URL"]
        for volume in volumes.values():
            volume.unmount()
    checks["no payload without its row before the last restart"] = payloads_match_rows(before_restart,
                                                                                       pool.representer_sha)
    checks["every planned fault happened while the uploads ran"] = len(events) == len(schedule) and all(
        event["fault"] == "kill" or event["seconds"] >= full_seconds for event in events)
    seconds = [outcome["seconds"] for outcome in outcomes if outcome["acknowledged"]]
    return {
        "parameters": {**parameters(per_institution, workers, duplicates, seed), "database": database,
                       "interval_s": interval, "kills": kills, "full_seconds": full_seconds, "volumes": how,
                       "client_retries": retries, "client_backoff_s": backoff},
        "uploads": len(outcomes), **counts, "faults": events,
        "answers": dict(sorted(tally.answers.items())),
        "reconciliation": {"rows restored": log.count("restored the row of contribution"),
                           "payloads deleted": log.count("which no row refers to")},
        "storage_full": {"payload volume": log.count("storage is full (No space left on device)"),
                         "database": log.count("storage is full (database or disk is full)")},
        "errors": [outcome["error"] for outcome in outcomes if outcome["error"]][:5],
        "wall_seconds": round(wall, 1),
        "upload_seconds": {"p50": round(percentile(seconds, 50), 2), "p99": round(percentile(seconds, 99), 2),
                           "max": round(max(seconds), 2)} if seconds else {},
        "checks": checks,
    }


def checks_table(checks: dict) -> list[str]:
    return ["| check | passed |", "|---|---|",
            *(f"| {name} | {'yes' if passed else '**NO**'} |" for name, passed in checks.items())]


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
        f"{p['duplicate_share']:.0%} of them in random order (seed {p['seed']}). Other jobs share the machine's cores: "
        f"its float32 matmul rate was {result['matmul_gflops']['before']} GFLOP/s before and "
        f"{result['matmul_gflops']['after']} after (bench_demo.matmul_rate).",
        "",
        f"`{result['command']}`",
        "",
        "| uploads | files | statuses | wall s | uploads/s | MB/s | p50 ms | p99 ms | max ms |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
        f"| {result['uploads']} | {result['files']} | "
        f"{', '.join(f'{status}: {count}' for status, count in result['statuses'].items())} | "
        f"{result['wall_seconds']} | {result['uploads_per_second']} | {result['mb_per_second']} | {latency['p50']} | "
        f"{latency['p99']} | {latency['max']} |",
        "",
        *checks_table(result["checks"]),
        "",
    ]
    return "\n".join(lines)


def report_faults(result: dict) -> str:
    p = result["parameters"]
    seconds = result["upload_seconds"] or {"p50": "-", "p99": "-", "max": "-"}
    lines = [
        "# Upload load test with faults injected",
        "",
        f"{result['date']}, commit {result['commit']}, {result['machine']}. Other jobs shared the machine's two "
        f"cores, so the times are upper bounds (float32 matmul rate {result['matmul_gflops']['before']} GFLOP/s "
        f"before, {result['matmul_gflops']['after']} after).",
        "",
        f"`{result['command']}`",
        "",
        f"Server `deidpool server run --no-worker` on loopback ({p['database']}); {p['institutions']} institutions x "
        f"{p['per_institution']} contributions ({p['sentences_per_file']} sentences, d = {p['dim']}) plus re-uploads "
        f"of {p['duplicate_share']:.0%} of them in random order (seed {p['seed']}), started {p['interval_s']} s "
        f"apart by {p['workers']} threads with the project's client (`deidpool.client.transport.upload_contribution` "
        f"with the institution's key: success only once the server lists the upload; {p['client_retries']} retries, "
        f"backoff {p['client_backoff_s']} s doubling). Meanwhile a supervisor thread, 1-3 s apart in random order, "
        f"SIGKILLed the server (each time once a request was in flight) and started it again on the same port and data "
        f"directory ({p['kills']} times), and filled the payload volume, and the database volume (its SQLite "
        f"write-ahead log truncated first), for {p['full_seconds']} s each, then freed it. Payload volume: "
        f"{p['volumes']['full payloads']}; database volume: {p['volumes']['full database']}. After the uploads "
        "the payload files were compared with the "
        "database rows, then the server was killed and started once more (start-up reconciliation) and checked.",
        "",
        "| uploads | files | acknowledged | given up (stored all the same) | lost | duplicated | wall s | "
        "upload p50 s | p99 s | max s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {result['uploads']} | {result['files']} | {result['acknowledged']} | {result['given_up']} "
        f"({result['given_up_stored']}) | {result['lost']} | {result['duplicated']} | {result['wall_seconds']} | "
        f"{seconds['p50']} | {seconds['p99']} | {seconds['max']} |",
        "",
        "Faults (time since the uploads began; requests in flight when it struck; for a kill, the "
        "temporary upload files it left and the seconds until the server answered again; for a full "
        "volume, how long it lasted):",
        "",
        "| at s | fault | in flight | .staged-* left | seconds |",
        "|---:|---|---:|---:|---:|",
        *(f"| {event['at_s']} | {FAULT_NAMES[event['fault']]} | "
          f"{event['in_flight']} | {event.get('staged_left', '')} | {event['seconds']} |"
          for event in result["faults"]),
        "",
        "Answers the clients got (every attempt; the GETs are the signed listings that confirm an upload):",
        "",
        "| answer | count |",
        "|---|---:|",
        *(f"| {answer} | {count} |" for answer, count in result["answers"].items()),
        "",
        f"Start-up reconciliation over all restarts (server log): {result['reconciliation']['rows restored']} "
        f"contribution rows restored, {result['reconciliation']['payloads deleted']} unreferenced payloads deleted. "
        f"Answers 507 by the volume that was full (server log): payload volume "
        f"{result['storage_full']['payload volume']}, database {result['storage_full']['database']}.",
        "",
        *checks_table(result["checks"]),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-institution", type=int, default=100)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--duplicates", type=float, default=0.1, help="share of the files uploaded a second time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--faults", action="store_true",
                        help="kill the server and fill its payload and database volumes during the uploads")
    parser.add_argument("--kills", type=int, default=4, help="with --faults: how many times the server is killed")
    parser.add_argument("--full-seconds", type=float, default=8, help="with --faults: how long each volume stays full")
    parser.add_argument("--interval", type=float, default=0.5,
                        help="with --faults: seconds between the starts of uploads, so that they span the faults")
    parser.add_argument("--retries", type=int, default=8, help="with --faults: the client's retries (CLI: 5)")
    parser.add_argument("--backoff", type=float, default=0.5,
                        help="with --faults: the client's first wait in seconds, doubled at each retry (CLI: 1)")
    parser.add_argument("--out", type=Path, default=results_folder("load_uploads"),
                        help="where load_uploads.md and .json (load_uploads_faults.* with --faults) go")
    args = parser.parse_args()
    rates = [matmul_rate()]
    with tempfile.TemporaryDirectory(prefix="deidpool-load-") as folder:
        if args.faults:
            result = run_faults(args.per_institution, args.workers, args.duplicates, args.seed, args.kills,
                                args.full_seconds, args.interval, args.retries, args.backoff, Path(folder))
        else:
            result = run(args.per_institution, args.workers, args.duplicates, args.seed, Path(folder))
    rates.append(matmul_rate())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": commit.stdout.strip() or "unknown",
              "machine": f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}, "
                         f"load average {os.getloadavg()[0]:.1f}",
              "command": " ".join(["python experiments/load_uploads.py", *sys.argv[1:]]),
              "matmul_gflops": {"before": round(rates[0]), "after": round(rates[1])}, **result}
    name, text = ("load_uploads_faults", report_faults(result)) if args.faults else ("load_uploads", report(result))
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.md").write_text(text)
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    if not all(result["checks"].values()):
        sys.exit("some checks failed: see the table above")


if __name__ == "__main__":
    main()
