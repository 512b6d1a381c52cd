"""Tests of queue workers that are one `tf.distribute` cluster (server/worker.py,
docs/worker-fleet.md): two `deidpool server worker` processes with a TF_CONFIG of two workers
on loopback train a queued run together, the chief recording it and the follower writing
nothing; a worker killed mid-run puts the run back in the queue and ends the chief with
CLUSTER_RESTART, and a worker killed while the cluster is idle ends the other. In process (a
faked cluster role, no TensorFlow cluster): which run a follower takes, which a chief takes,
and how a run that does not succeed ends a worker."""

import json
import os
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import tensorflow as tf
from sqlalchemy import update

from deidpool.representer.distribution import loopback_cluster
from deidpool.server import worker
from deidpool.server.database import FAILED, QUEUED, RUNNING, SUCCEEDED, TrainingRun, utcnow
from deidpool.server.worker import CLUSTER_RESTART, Cluster, cluster_id, run_worker

from . import test_worker
from .test_worker import epochs, history, run_row, wait_for

server = test_worker.server  # the fixture: a data directory with two contributions, and its queue
CHIEF_ID = "cluster:chief-host:2222"
# `python -c FOLLOWER server worker ...`: the deidpool command, with every database write refused
FOLLOWER = """
from sqlalchemy import event
from sqlalchemy.engine import Engine

@event.listens_for(Engine, "before_cursor_execute")
def refuse_writes(connection, cursor, statement, parameters, context, executemany):
    if statement.split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER"):
        raise RuntimeError(f"the follower wrote to the database: {statement}")

from deidpool.cli import app
app(prog_name="deidpool")
"""


@pytest.fixture
def database(monkeypatch):
    """SQLite only: the workers of the cluster share the data directory's database file."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return "sqlite"


@pytest.fixture
def cluster(server, tmp_path):
    """The chief and the follower: `deidpool server worker` processes on `server`, with a
    TF_CONFIG of two workers on loopback, each logging to a file; started and watching before
    the test, stopped (SIGTERM, then SIGKILL) after it."""
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    env.update(CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    configs = loopback_cluster(2)
    started = []
    for index, config in enumerate(configs):
        log = tmp_path / f"worker-{index}.log"
        with log.open("w") as file:
            program = ["-c", FOLLOWER] if index else ["-m", "deidpool"]
            process = subprocess.Popen([sys.executable, *program, "server", "worker", "--data-dir", str(server.root)],
                                       env={**env, "TF_CONFIG": config}, stdout=subprocess.DEVNULL, stderr=file)
        started.append(SimpleNamespace(process=process, log=log))
    try:
        wait_for(lambda: all("watching" in member.log.read_text() for member in started), "both workers started",
                 started)
        yield SimpleNamespace(chief=started[0], follower=started[1], workers=started,
                              chief_id=cluster_id(json.loads(configs[0])["cluster"]["worker"][0]))
    finally:
        for process in started:
            process.process.terminate()
        for process in started:
            try:
                process.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.process.kill()
                process.process.wait()


def lines(member, text: str) -> list[str]:
    """The lines of a cluster member's log that contain `text`."""
    return [line for line in member.log.read_text().splitlines() if text in line]


def test_a_cluster_of_queue_workers_trains_a_queued_run_once(server, cluster):
    run_id = server.queue(max_epochs=2, patience=2)
    chief, follower = cluster.chief, cluster.follower
    wait_for(lambda: run_row(server, run_id).status in (SUCCEEDED, FAILED) and lines(follower, f"run {run_id} "),
             "finished run", cluster.workers)
    run = run_row(server, run_id)
    assert (run.status, run.worker_id, run.epochs_done) == (SUCCEEDED, cluster.chief_id, 2), run.error
    recorded = epochs(server, run_id)
    assert [r["epoch"] for r in recorded] == [1, 2] and recorded == history(server, run_id)
    assert len(lines(chief, f"claimed run {run_id}")) == 1 and lines(follower, "claimed") == []
    assert len(lines(follower, f"follows run {run_id}")) == 1  # once: it polls again at once after a run
    assert lines(follower, f"run {run_id}: 48 training and 12 validation sentences")  # it trained, on the same data
    assert lines(follower, f"run {run_id} succeeded")
    for process in cluster.workers:  # both at once: one that outlives the other leaves the cluster (status 75)
        process.process.terminate()
    for process in cluster.workers:
        assert process.process.wait(timeout=30) == 0, process.log.read_text()[-3000:]
    assert "wrote to the database" not in follower.log.read_text()


def test_a_killed_worker_puts_the_run_back_in_the_queue_and_ends_the_chief(server, cluster):
    run_id = server.queue(max_epochs=50, patience=50)
    wait_for(lambda: epochs(server, run_id), "recorded epoch", cluster.workers)
    cluster.follower.process.kill()
    cluster.follower.process.wait()
    assert cluster.chief.process.wait(timeout=60) == CLUSTER_RESTART, cluster.chief.log.read_text()[-3000:]
    run = run_row(server, run_id)
    assert (run.status, run.worker_id, run.heartbeat, run.finished) == (QUEUED, None, None, None)
    assert 1 <= run.epochs_done < 50 and epochs(server, run_id) == history(server, run_id)
    assert lines(cluster.chief, f"run {run_id}: a worker of the cluster is gone")


def test_an_idle_worker_exits_when_another_worker_of_its_cluster_dies(server, cluster):
    others = server.queue()
    hold(server, others, "another-worker")  # nothing for the chief to claim, nor for the follower to take
    before = snapshot(server, [others])
    time.sleep(1)
    cluster.chief.process.kill()
    cluster.chief.process.wait()
    assert cluster.follower.process.wait(timeout=30) == CLUSTER_RESTART, cluster.follower.log.read_text()[-3000:]
    assert lines(cluster.follower, "a worker of the cluster is gone: exiting with status 75")
    assert lines(cluster.follower, "follows") == [] and snapshot(server, [others]) == before


def hold(server, run_id: int, worker_id: str) -> None:
    """Mark `run_id` running under `worker_id`, with a fresh heartbeat."""
    with server.sessions.begin() as session:
        session.execute(update(TrainingRun).where(TrainingRun.id == run_id)
                        .values(status=RUNNING, worker_id=worker_id, heartbeat=utcnow(), started=utcnow()))


def snapshot(server, run_ids) -> list[tuple]:
    return [(run.status, run.worker_id, run.heartbeat, run.epochs_done, epochs(server, run.id))
            for run in (run_row(server, run_id) for run_id in run_ids)]


def test_a_follower_takes_only_the_run_its_chief_holds(server, monkeypatch):
    monkeypatch.setattr(worker, "cluster_role", lambda: Cluster(CHIEF_ID, chief=False))
    others, queued = server.queue(), server.queue()
    hold(server, others, "another-worker")
    before = snapshot(server, [others, queued])
    assert run_worker(server.root, once=True) is None  # no claim: neither the queued run nor another's
    assert snapshot(server, [others, queued]) == before
    hold(server, queued, CHIEF_ID)
    assert worker._chief_run(server.sessions, CHIEF_ID, None) == queued
    assert worker._chief_run(server.sessions, CHIEF_ID, queued) is None  # the run it has just trained


def test_a_chief_resumes_the_run_it_holds_before_claiming_another(server):
    queued, held = server.queue(), server.queue()
    hold(server, held, CHIEF_ID)  # as a cluster killed mid-run leaves it
    chief = Cluster(CHIEF_ID, chief=True)
    assert worker._claim(server.sessions, CHIEF_ID, chief) == held
    assert run_row(server, queued).status == QUEUED
    assert worker._claim(server.sessions, CHIEF_ID, None) == queued  # a worker alone claims


@pytest.mark.parametrize("role, error, status, exit_status", [
    (None, tf.errors.UnavailableError(None, None, "peer down"), FAILED, None),  # alone: as before
    (Cluster(CHIEF_ID, chief=True), tf.errors.UnavailableError(None, None, "peer down"), QUEUED, CLUSTER_RESTART),
    (Cluster(CHIEF_ID, chief=True), ValueError("bad data"), FAILED, CLUSTER_RESTART),
    (Cluster(CHIEF_ID, chief=False), tf.errors.UnavailableError(None, None, "peer down"), RUNNING, CLUSTER_RESTART),
], ids=["alone", "chief-worker-lost", "chief-error", "follower"])
def test_a_run_that_does_not_succeed_in_a_cluster_ends_the_worker(server, monkeypatch, role, error, status,
                                                                   exit_status):
    run_id = server.queue()
    if role is not None and not role.chief:
        hold(server, run_id, CHIEF_ID)
    monkeypatch.setattr(worker, "cluster_role", lambda: role)

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(worker, "train_pooled", fail)
    if exit_status is None:
        assert run_worker(server.root, once=True, worker_id="alone") == run_id
    else:
        with pytest.raises(SystemExit) as stopped:
            run_worker(server.root, once=True)
        assert stopped.value.code == exit_status
    run = run_row(server, run_id)
    assert run.status == status and epochs(server, run_id) == []
    assert run.worker_id == {QUEUED: None, FAILED: "alone" if role is None else CHIEF_ID, RUNNING: CHIEF_ID}[status]


def test_a_cluster_id_names_the_chief_and_its_host_when_on_loopback():
    assert cluster_id("host-a:23456") == "cluster:host-a:23456"
    assert cluster_id("127.0.0.1:23456") == f"cluster:{socket.gethostname()}/127.0.0.1:23456"


