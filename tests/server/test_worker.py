"""Tests of the pooled training worker: claims, epochs in the database, resume after an
interruption (in process, and a worker process killed with SIGKILL and taken over by
another), failures, and several worker processes serving one queue."""

import inspect
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import get_args

import pytest
from cryptography.hazmat.primitives import serialization
from sqlalchemy import select, update

from deidpool.representer import keys
from deidpool.server import worker
from deidpool.server.database import (
    FAILED,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    Contribution,
    Institution,
    Representer,
    RunEpoch,
    TrainingRun,
    open_database,
    utcnow,
)
from deidpool.server.initialize import init_data_dir
from deidpool.server.payloads import PayloadStore
from deidpool.server.settings import Layout
from deidpool.server.worker import claim_run, run_worker

TINY = {"max_epochs": 3, "patience": 3, "seed": 0, "valid_fraction": 0.2, "lstm_units": 4}


@pytest.fixture
def server(pool, key_files, database, tmp_path):
    """A server data directory (database on SQLite, or PostgreSQL: see `database`) holding
    site-a's and site-b's contributions for pool.representer; `server.queue(**config)` queues a
    run over them (TINY config by default) and returns its id."""
    layout = Layout(tmp_path / "server")
    layout.keys.mkdir(parents=True)
    for path in key_files.server.private.parent.glob("server-*"):  # init keeps them: pool.write encrypts to them
        shutil.copy(path, layout.keys)
    init_data_dir(layout.root, key_files.provider.public)
    sessions = open_database(layout.root)
    store = PayloadStore(layout.payloads)
    hashes = []
    with sessions.begin() as session:
        session.add(Representer(id=pool.representer, payload_sha256="0" * 64, current=True,
                                manifest={"repr_size": pool.dim, "tags": {"vocabulary": pool.tags, "scheme": "BIO"}}))
        for institution, key in pool.institution_keys.items():
            session.add(Institution(id=institution, public_key=_pem(key),
                                    fingerprint=keys.fingerprint(key.public_key())))
        session.flush()  # institutions before the contributions that refer to them
        for number, institution in enumerate(pool.institution_keys):
            path = tmp_path / f"{institution}.dpc"
            header = pool.write(path, institution, pool.sentences(100 * number, 30))
            hashes.append(store.add_file(path))
            session.add(Contribution(sha256=hashes[-1], institution_id=institution, representer_id=pool.representer,
                                     nonce=header.nonce, sentences=header.sentences, tokens=header.tokens,
                                     dim=header.dim, dtype=header.dtype, size_bytes=path.stat().st_size,
                                     header_created=utcnow(), neighbours=header.neighbours))

    def queue(contributions=hashes, **config):
        with sessions.begin() as session:
            run = TrainingRun(representer_id=pool.representer, config={**TINY, **config},
                              contributions=list(contributions))
            session.add(run)
            session.flush()
            return run.id

    return SimpleNamespace(root=layout.root, layout=layout, sessions=sessions, queue=queue, contributions=hashes)


def _pem(private_key) -> str:
    return private_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def run_row(server, run_id) -> TrainingRun:
    with server.sessions() as session:
        return session.get(TrainingRun, run_id)


def epochs(server, run_id) -> list[dict]:
    with server.sessions() as session:
        rows = session.scalars(select(RunEpoch).where(RunEpoch.run_id == run_id).order_by(RunEpoch.epoch)).all()
        return [row.metrics for row in rows]


def history(server, run_id) -> list[dict]:
    return json.loads((server.layout.run_dir(run_id) / "history.json").read_text())


def test_a_queued_run_is_trained_with_each_epoch_recorded(server, caplog):
    run_id = server.queue()
    with caplog.at_level(logging.INFO, logger="deidpool.server.worker"):
        assert run_worker(server.root, once=True, worker_id="w1") == run_id
    run = run_row(server, run_id)
    assert (run.status, run.worker_id, run.error, run.epochs_done) == (SUCCEEDED, "w1", None, 3)
    assert run.started <= run.finished and run.best_epoch == run.metrics["best_epoch"]
    assert epochs(server, run_id) == history(server, run_id) and len(history(server, run_id)) == 3
    config = json.loads((server.layout.run_dir(run_id) / "config.json").read_text())
    assert config["contributions"] == sorted(server.contributions)
    assert f"run {run_id}: epoch 3/3" in caplog.text and "val PHI F1" in caplog.text
    assert run_worker(server.root, once=True) is None  # nothing left to claim


def test_a_run_stops_on_the_monitor_its_config_names(server):
    """The run API's monitor reaches the tagger's early stopping (config.json records it); the API,
    the coordinator's command and `train_pooled` share the pooled tagger's defaults."""
    from deidpool.cli.coordinator_commands import start_run
    from deidpool.demo import DemoSettings
    from deidpool.representer.training import MONITORS
    from deidpool.server.pooled import POOLED_MONITOR, POOLED_UNITS, train_pooled
    from deidpool.server.routes.runs import RunIn

    assert set(get_args(RunIn.model_fields["monitor"].annotation)) == set(MONITORS)
    for name, default in (("monitor", POOLED_MONITOR), ("lstm_units", POOLED_UNITS)):
        assert RunIn.model_fields[name].default == default
        assert inspect.signature(start_run).parameters[name].default.default == default
        assert inspect.signature(train_pooled).parameters[name].default == default
    assert DemoSettings().pooled_units == POOLED_UNITS
    run_id = server.queue(monitor="val_loss", max_epochs=1)
    assert run_worker(server.root, once=True, worker_id="w1") == run_id
    config = json.loads((server.layout.run_dir(run_id) / "config.json").read_text())
    assert (config["monitor"], config["monitor_mode"], run_row(server, run_id).status) == ("val_loss", "min", SUCCEEDED)


def test_a_run_stopped_by_sigterm_resumes_without_duplicate_epochs(server, monkeypatch):
    run_id = server.queue()
    record = worker._record_epochs

    def sigterm_at_epoch_2(sessions, run, worker_id, records):
        if [r["epoch"] for r in records] == [2]:
            os.kill(os.getpid(), signal.SIGTERM)
        record(sessions, run, worker_id, records)

    monkeypatch.setattr(worker, "_record_epochs", sigterm_at_epoch_2)
    handler = signal.getsignal(signal.SIGTERM)
    assert run_worker(server.root, once=True, worker_id="w1") is None
    assert signal.getsignal(signal.SIGTERM) == handler
    run = run_row(server, run_id)
    assert (run.status, run.worker_id, len(epochs(server, run_id))) == (QUEUED, None, 1)  # back in the queue
    first = epochs(server, run_id)[0]
    monkeypatch.setattr(worker, "_record_epochs", record)
    assert run_worker(server.root, once=True, worker_id="w2") == run_id
    run = run_row(server, run_id)
    assert (run.status, run.epochs_done) == (SUCCEEDED, 3)
    recorded = epochs(server, run_id)
    assert recorded == history(server, run_id) and [r["epoch"] for r in recorded] == [1, 2, 3]
    assert recorded[0] == first  # restored from the checkpoint, not trained again


def test_a_claim_is_exclusive(server):
    first, second = server.queue(), server.queue()
    claims = []
    threads = [threading.Thread(target=lambda n=n: claims.append(claim_run(server.sessions, f"w{n}")))
               for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claim for claim in claims if claim) == [first, second] and claims.count(None) == 4
    assert claim_run(server.sessions, "late") is None  # both are running with a fresh heartbeat
    with server.sessions.begin() as session:
        session.execute(update(TrainingRun).where(TrainingRun.id == second)
                        .values(heartbeat=utcnow() - timedelta(seconds=worker.STALE_SECONDS + 1)))
    assert claim_run(server.sessions, "late") == second  # its worker stopped beating: taken over
    assert run_row(server, second).worker_id == "late"
    with pytest.raises(worker.RunLost):
        worker._record_epochs(server.sessions, second, "w-old", [{"epoch": 1}])


def test_a_failing_run_is_marked_failed_and_the_worker_goes_on(server):
    missing = server.queue(contributions=[server.contributions[0], "f" * 64])
    unsplittable = server.queue(valid_fraction=1.5)
    assert run_worker(server.root, once=True) == missing
    assert run_worker(server.root, once=True) == unsplittable
    run = run_row(server, missing)
    assert run.status == FAILED and run.error == f"the run's contributions {'f' * 64} are not stored on the server"
    assert run.finished is not None and epochs(server, missing) == []
    assert run_row(server, unsplittable).error == "valid_fraction must be between 0 and 1, got 1.5"


@pytest.fixture
def workers(server, tmp_path):
    """Two `deidpool server worker` processes serving `server`'s queue, each logging to a file;
    started and watching before the test, stopped with SIGTERM after it."""
    started = []
    for number in (1, 2):
        log = tmp_path / f"worker-{number}.log"
        with log.open("w") as file:
            process = subprocess.Popen([sys.executable, "-m", "deidpool", "server", "worker", "--data-dir",
                                        str(server.root)], stdout=subprocess.DEVNULL, stderr=file)
        started.append(SimpleNamespace(process=process, log=log, id=f"{socket.gethostname()}:{process.pid}"))
    try:
        wait_for(lambda: all("watching" in worker.log.read_text() for worker in started), "both workers started",
                 started)
        yield started
    finally:
        for worker in started:
            worker.process.terminate()
        for worker in started:
            worker.process.wait(timeout=60)


def wait_for(condition, what: str, workers, seconds: float = 180) -> None:
    """Poll `condition` until it holds; fails when a worker that was not killed exits, or after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        for watched in workers:
            if watched.process.returncode is None:
                assert watched.process.poll() is None, f"worker exited: {watched.log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(0.1)


def claims(workers, run_id: int) -> list[str]:
    """The ids of the workers whose log says they claimed `run_id`."""
    return [worker.id for worker in workers for line in worker.log.read_text().splitlines()
            if line.endswith(f"claimed run {run_id}")]


def finished(server, run_ids) -> bool:
    return all(run_row(server, run_id).status in (SUCCEEDED, FAILED) for run_id in run_ids)


def test_two_worker_processes_train_each_queued_run_once(server, workers):
    runs = [server.queue(max_epochs=2, patience=2) for _ in range(3)]
    wait_for(lambda: finished(server, runs), "three finished runs", workers)
    for run_id in runs:
        run = run_row(server, run_id)
        assert (run.status, run.epochs_done) == (SUCCEEDED, 2), run.error
        assert claims(workers, run_id) == [run.worker_id]  # claimed once, by the worker that finished it
        recorded = epochs(server, run_id)
        assert [r["epoch"] for r in recorded] == [1, 2] and recorded == history(server, run_id)
    assert {run_row(server, run_id).worker_id for run_id in runs} == {worker.id for worker in workers}


def test_the_run_of_a_killed_worker_process_is_finished_by_the_other(server, workers):
    run_id = server.queue(max_epochs=10, patience=10)
    wait_for(lambda: epochs(server, run_id), "recorded epoch", workers)
    owner, = (process for process in workers if process.id == run_row(server, run_id).worker_id)
    other, = (process for process in workers if process is not owner)
    owner.process.kill()
    owner.process.wait()
    killed = run_row(server, run_id)
    assert killed.status == RUNNING and 1 <= killed.epochs_done < 10
    with server.sessions.begin() as session:  # as if a minute had passed since the last heartbeat
        session.execute(update(TrainingRun).where(TrainingRun.id == run_id)
                        .values(heartbeat=utcnow() - timedelta(seconds=worker.STALE_SECONDS + 1)))
    wait_for(lambda: finished(server, [run_id]), "finished run", workers)
    run, recorded = run_row(server, run_id), epochs(server, run_id)
    assert (run.status, run.worker_id, run.epochs_done) == (SUCCEEDED, other.id, 10), run.error
    assert sorted(claims(workers, run_id)) == sorted([owner.id, other.id])
    assert "resuming after epoch" in other.log.read_text()
    assert [r["epoch"] for r in recorded] == list(range(1, 11)) and recorded == history(server, run_id)
