"""The pooled training worker (docs/server.md, Worker): claims queued runs (or runs whose
worker stopped sending heartbeats) one at a time, trains them with `deidpool.server.pooled` in
D/runs/<id>/, records every epoch in the database, and marks each run succeeded or failed.

Several workers may serve one queue (one database, one data directory): a claim locks the
run it picks and updates it only while it is still claimable (`claim_run`), so each run is
claimed once. Training resumes from the run directory's checkpoint, and epochs are upserted,
so a run taken over after a crash ends with each epoch recorded once. SIGTERM ends the worker
at once, handing its run back to the queue to resume from the last checkpoint.

With a TF_CONFIG of several workers, the workers are one `tf.distribute` cluster that trains
one run at a time (docs/worker-fleet.md): the chief claims runs under the cluster's id
(`cluster_role`), the others follow the run that the chief holds, without writing to the
database, and a run that does not succeed ends every worker with status CLUSTER_RESTART."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import tensorflow as tf
from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker
from tensorflow.python.eager import context

from deidpool.representer.distribution import training_strategy
from deidpool.server.auth import load_ed25519_public_key
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
    utcnow,
)
from deidpool.server.pooled import PooledContribution, open_pooled_data, train_pooled
from deidpool.server.state import ServerState

STALE_SECONDS = 60  # a running run without a heartbeat for this long belongs to a crashed worker
HEARTBEAT_SECONDS = 15
HISTORY = "history.json"
REQUIRED_CONFIG = ("max_epochs", "patience", "seed", "valid_fraction")  # optional: lstm_units, monitor
CLUSTER_RESTART = 75  # exit status (EX_TEMPFAIL): restart every worker of the cluster
# what a collective operation raises when a worker of the cluster died (or was cut off)
WORKER_LOST = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError,
               tf.errors.AbortedError)

log = logging.getLogger(__name__)


class RunLost(RuntimeError):
    """Another worker took the run over (this worker's heartbeats had stopped for too long)."""


class _Stopped(BaseException):
    """SIGTERM arrived: leave whatever is running, unfinished."""


class ClusterBroken(SystemExit):
    """The workers of the cluster may be out of step: this one exits with CLUSTER_RESTART."""

    def __init__(self):
        super().__init__(CLUSTER_RESTART)


@dataclass(frozen=True)
class Cluster:
    """This worker's place in a multi-worker cluster: the worker id under which the cluster's
    chief claims runs, whether this worker is the chief, and the cluster's tasks
    ("/job:worker/replica:0/task:1", ...)."""

    chief_id: str
    chief: bool
    tasks: tuple[str, ...] = ()


def run_worker(data_dir: str | Path, *, once: bool = False, poll_seconds: float = 2.0,
               worker_id: str | None = None) -> int | None:
    """Train claimed runs until SIGTERM; with `once`, process at most one run and return its
    id (None when no run was waiting, or when stopped). In a cluster (`cluster_role`) the
    chief claims runs under the cluster's id and the other workers follow them; a run that
    does not succeed there raises ClusterBroken."""
    cluster = cluster_role()
    state = ServerState.open(data_dir)
    follower = cluster is not None and not cluster.chief
    if cluster is not None and cluster.chief:
        worker_id = cluster.chief_id
    worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if in_main_thread else None
    log.info("worker %s watching %s%s", worker_id, state.layout.root,
             f" as a follower of {cluster.chief_id}" if follower else "")
    trained = None  # the run a follower trained last: the chief may not have recorded its end yet
    try:
        while True:
            run_id = (_chief_run(state.sessions, cluster.chief_id, trained) if follower
                      else _claim(state.sessions, worker_id, cluster))
            if run_id is not None:
                log.info("worker %s %s run %d", worker_id, "follows" if follower else "claimed", run_id)
                succeeded = (follow_run(state, run_id) if follower
                             else process_run(state, run_id, worker_id, cluster=cluster is not None))
                if cluster is not None and not succeeded:
                    raise _leave_cluster(worker_id, f"run {run_id} did not succeed")
                trained = run_id
            if once:
                return run_id
            if run_id is None:
                if cluster is not None and not _all_alive(cluster):
                    raise _leave_cluster(worker_id, "a worker of the cluster is gone")
                time.sleep(poll_seconds)
    except _Stopped:
        log.info("worker %s stopped by SIGTERM", worker_id)
        return None
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
        state.close()


def _stop(signum, frame):
    raise _Stopped()


def _leave_cluster(worker_id: str, reason: str) -> ClusterBroken:
    log.error("worker %s: %s: exiting with status %d, so that every worker of the cluster restarts", worker_id,
              reason, CLUSTER_RESTART)
    return ClusterBroken()


def cluster_role() -> Cluster | None:
    """This process's place in the cluster that TF_CONFIG names (`training_strategy`), None
    when it trains alone. The multi-worker strategy is made here, at start, and making it
    waits until every worker of the cluster has started."""
    strategy = training_strategy()
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return None
    spec = strategy.cluster_resolver.cluster_spec()
    chief = spec.task_address("chief" if "chief" in spec.jobs else "worker", 0)
    tasks = tuple(f"/job:{job}/replica:0/task:{index}" for job in spec.jobs for index in range(spec.num_tasks(job)))
    return Cluster(cluster_id(chief), chief=strategy.extended.should_checkpoint, tasks=tasks)


def _all_alive(cluster: Cluster) -> bool:
    """Whether every task of the cluster answers, as the same one that this worker started
    with. Idle workers ask (TensorFlow's own health check only fails the next collective
    operation), so that a worker that died makes every worker exit, busy or not."""
    try:
        for task in cluster.tasks:
            context.context().check_collective_ops_peer_health(task, timeout_in_ms=10_000)
    except (tf.errors.UnavailableError, tf.errors.FailedPreconditionError, tf.errors.DeadlineExceededError):
        return False
    return True


def cluster_id(chief_address: str) -> str:
    """The worker id of the cluster whose chief has `chief_address` (TF_CONFIG's): every worker
    of the cluster knows it, and it outlives restarts. A loopback address gets the host's name,
    so that loopback clusters on several hosts that share a database differ."""
    host = chief_address.rsplit(":", 1)[0]
    loopback = host in ("localhost", "[::1]") or host.startswith("127.")
    return f"cluster:{socket.gethostname() + '/' if loopback else ''}{chief_address}"


def _claim(sessions: sessionmaker, worker_id: str, cluster: Cluster | None) -> int | None:
    """A run for a worker alone (`claim_run`) or for a cluster's chief: first the run it still
    holds (a restarted cluster's, which its followers take up again), else a new one."""
    held = _resume_held_run(sessions, worker_id) if cluster is not None else None
    return held if held is not None else claim_run(sessions, worker_id)


def _held_by(worker_id: str):
    """The condition: a running run claimed by `worker_id`."""
    return (TrainingRun.worker_id == worker_id) & (TrainingRun.status == RUNNING)


def _oldest_held(worker_id: str):
    """The query for the id of the oldest running run claimed by `worker_id`: the run a cluster's
    chief takes back and its followers train."""
    return select(TrainingRun.id).where(_held_by(worker_id)).order_by(TrainingRun.id).limit(1)


def _resume_held_run(sessions: sessionmaker, worker_id: str) -> int | None:
    """The oldest running run held by `worker_id`, its heartbeat renewed (so that no other
    worker takes it over meanwhile); None when there is none."""
    with sessions.begin() as session:
        run_id = session.scalars(_oldest_held(worker_id).with_for_update()).first()
        if run_id is None:
            return None
        renewed = session.execute(update(TrainingRun).where(TrainingRun.id == run_id, _held_by(worker_id))
                                  .values(heartbeat=utcnow()))
        return run_id if renewed.rowcount == 1 else None


def _chief_run(sessions: sessionmaker, chief_id: str, trained: int | None) -> int | None:
    """The run for a follower to train: the oldest running run held by its chief (the one the
    chief trains: `_resume_held_run` takes the same), unless it is `trained`, the follower's
    last run. Reads only."""
    with sessions() as session:
        run_id = session.scalars(_oldest_held(chief_id)).first()
    return None if run_id == trained else run_id


def claim_run(sessions: sessionmaker, worker_id: str) -> int | None:
    """Claim the oldest queued run, or the oldest running one whose heartbeat is older than
    STALE_SECONDS; returns its id, or None when there is none to claim.

    The run is picked with SELECT ... FOR UPDATE SKIP LOCKED: on PostgreSQL a run that another
    worker is claiming is locked, so it is skipped instead of waited for, and one that another
    claim committed meanwhile is checked again and skipped. SQLite has no row locks (SQLAlchemy
    leaves the clause out), but every transaction takes the write lock when it begins
    (`deidpool.server.database`), so claims run one after another. The UPDATE is conditional too, so
    exclusivity does not rest on the locks alone."""
    now = utcnow()
    claimable = or_(TrainingRun.status == QUEUED,
                    (TrainingRun.status == RUNNING)
                    & or_(TrainingRun.heartbeat.is_(None),
                          TrainingRun.heartbeat < now - timedelta(seconds=STALE_SECONDS)))
    with sessions.begin() as session:
        run_id = session.scalars(select(TrainingRun.id).where(claimable).order_by(TrainingRun.id).limit(1)
                                 .with_for_update(skip_locked=True)).first()
        if run_id is None:
            return None
        claimed = session.execute(update(TrainingRun).where(TrainingRun.id == run_id, claimable)
                                  .values(status=RUNNING, worker_id=worker_id, heartbeat=now, error=None))
        if claimed.rowcount != 1:
            return None
        session.execute(update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.started.is_(None))
                        .values(started=now))
        return run_id


def process_run(state: ServerState, run_id: int, worker_id: str, *, cluster: bool = False) -> bool:
    """Train the claimed run `run_id` and mark it succeeded or failed; returns whether it
    succeeded. An error in one run is recorded on the run, never raised, except that in a
    cluster (`cluster`) an error of a collective operation (WORKER_LOST: a worker died) puts
    the run back in the queue. When stopped (SIGTERM, Ctrl-C) the run goes back to the queue,
    to resume from its checkpoint, and the stop propagates."""
    beating = threading.Event()
    heart = threading.Thread(target=_heartbeats, args=(state.sessions, run_id, worker_id, beating), daemon=True)
    heart.start()
    try:
        metrics = _train(state, run_id, worker_id)
    except RunLost as error:
        log.warning("run %d: %s; leaving it to the other worker", run_id, error)
        return False
    except Exception as error:
        if cluster and isinstance(error, WORKER_LOST):
            log.warning("run %d: a worker of the cluster is gone (%s); the run goes back to the queue and "
                        "resumes from its checkpoint", run_id, type(error).__name__)
            _requeue(state.sessions, run_id, worker_id)
        else:
            log.exception("run %d failed", run_id)
            _finish(state.sessions, run_id, worker_id, status=FAILED, error=_message(error))
        return False
    except BaseException:
        log.warning("run %d: stopping; it goes back to the queue and resumes from its checkpoint", run_id)
        _requeue(state.sessions, run_id, worker_id)
        raise
    else:
        log.info("run %d succeeded: best epoch %d of %d, val loss %.4g, val PHI F1 %.3f", run_id,
                 metrics["best_epoch"], metrics["epochs"], metrics["val_loss"], metrics["val_f1"])
        return True
    finally:
        beating.set()
        heart.join()


def follow_run(state: ServerState, run_id: int) -> bool:
    """Train the run `run_id` with the cluster's chief, which trains it too, as a follower: the
    same run, read from the same database and data directory, and no database writes (the
    chief records everything); returns whether it succeeded. A stop propagates."""
    try:
        _train_pooled(state, _load_run(state, run_id), on_epoch=None)
    except Exception:
        log.exception("run %d failed on this follower", run_id)
        return False
    log.info("run %d succeeded", run_id)
    return True


def _requeue(sessions: sessionmaker, run_id: int, worker_id: str) -> None:
    with sessions.begin() as session:
        session.execute(update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.worker_id == worker_id)
                        .values(status=QUEUED, worker_id=None, heartbeat=None))


def _message(error: Exception) -> str:
    """Our errors (ValueError and its kin) carry their own message; others get their type too."""
    return str(error) if isinstance(error, ValueError) and str(error) else f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class _Run:
    """What a run trains on, as the database and data directory say (the same for every worker
    of a cluster)."""

    id: int
    representer_id: str
    config: dict
    tags: list[str]
    contributions: list[PooledContribution]
    run_dir: Path


def _load_run(state: ServerState, run_id: int) -> _Run:
    with state.sessions() as session:
        run = session.get(TrainingRun, run_id)
        representer = session.get(Representer, run.representer_id)
        if representer is None:
            raise ValueError(f"representer {run.representer_id} is not stored on the server")
        contributions = _contributions(session, state, run.contributions)
    missing = [key for key in REQUIRED_CONFIG if key not in run.config]
    if missing:
        raise ValueError(f"the run's config lacks {', '.join(missing)}")
    return _Run(run_id, run.representer_id, run.config, representer.manifest["tags"]["vocabulary"], contributions,
                state.layout.run_dir(run_id))


def _train(state: ServerState, run_id: int, worker_id: str) -> dict:
    run = _load_run(state, run_id)
    resumed = _read_history(run.run_dir)
    if resumed:
        _record_epochs(state.sessions, run_id, worker_id, resumed)
        log.info("run %d: resuming after epoch %d", run_id, len(resumed))
    progress = _Progress(run_id, run.config["max_epochs"])

    def on_epoch(record: dict) -> None:
        _record_epochs(state.sessions, run_id, worker_id, [record])
        progress.log(record)

    metrics = _train_pooled(state, run, on_epoch)
    # history.json may hold an epoch whose callback a crash cut off: record them all once more
    _record_epochs(state.sessions, run_id, worker_id, _read_history(run.run_dir))
    _finish(state.sessions, run_id, worker_id, status=SUCCEEDED, metrics=metrics, best_epoch=metrics["best_epoch"])
    return metrics


def _train_pooled(state: ServerState, run: _Run, on_epoch: Callable[[dict], None] | None) -> dict:
    """`train_pooled` on the run's contributions, in its run directory."""
    log.info("run %d: reading %d contributions for representer %s", run.id, len(run.contributions),
             run.representer_id)
    config = run.config
    data = open_pooled_data(run.contributions, state.encryption_key, representer_id=run.representer_id,
                            num_tags=len(run.tags), valid_fraction=config["valid_fraction"], seed=config["seed"])
    log.info("run %d: %d training and %d validation sentences from %d institutions", run.id, len(data.train),
             len(data.valid), len(data.split))
    options = {name: config[name] for name in ("lstm_units", "monitor") if name in config}
    return train_pooled(data, run.run_dir, tags=run.tags, representer_id=run.representer_id,
                        contributions=[c.sha256 for c in run.contributions], max_epochs=config["max_epochs"],
                        patience=config["patience"], seed=config["seed"], on_epoch=on_epoch, **options)


def _contributions(session: Session, state: ServerState, hashes: Sequence[str]) -> list[PooledContribution]:
    rows = {row.sha256: row for row in session.scalars(select(Contribution).where(Contribution.sha256.in_(hashes)))}
    missing = sorted(set(hashes) - rows.keys())
    if missing:
        raise ValueError(f"the run's contributions {', '.join(missing)} are not stored on the server")
    keys = {}
    result = []
    for sha256 in hashes:
        institution = rows[sha256].institution_id
        if institution not in keys:
            keys[institution] = load_ed25519_public_key(session.get(Institution, institution).public_key,
                                                        f"the key of {institution}")
        result.append(PooledContribution(sha256, state.payloads.path(sha256), institution, keys[institution]))
    return result


def _read_history(run_dir: Path) -> list[dict]:
    path = run_dir / HISTORY
    return json.loads(path.read_text()) if path.exists() else []


def _record_epochs(sessions: sessionmaker, run_id: int, worker_id: str, records: list[dict]) -> None:
    """Upsert the epochs' records and advance epochs_done and the heartbeat; raises RunLost
    when the run is no longer this worker's."""
    with sessions.begin() as session:
        owned = session.execute(
            update(TrainingRun).where(TrainingRun.id == run_id, _held_by(worker_id))
            .values(epochs_done=max([record["epoch"] for record in records], default=0), heartbeat=utcnow()))
        if owned.rowcount != 1:
            raise RunLost(f"run {run_id} is no longer claimed by worker {worker_id}")
        for record in records:
            session.merge(RunEpoch(run_id=run_id, epoch=record["epoch"], metrics=record))


def _finish(sessions: sessionmaker, run_id: int, worker_id: str, **values) -> None:
    with sessions.begin() as session:
        session.execute(update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.worker_id == worker_id)
                        .values(finished=utcnow(), **values))


def _heartbeats(sessions: sessionmaker, run_id: int, worker_id: str, stop: threading.Event) -> None:
    """Refresh the run's heartbeat every HEARTBEAT_SECONDS until `stop` (epochs can be long)."""
    while not stop.wait(HEARTBEAT_SECONDS):
        try:
            with sessions.begin() as session:
                session.execute(update(TrainingRun).where(TrainingRun.id == run_id, _held_by(worker_id))
                                .values(heartbeat=utcnow()))
        except Exception:
            log.warning("run %d: could not record a heartbeat", run_id, exc_info=True)


class _Progress:
    """Progress lines: epoch n/max, validation loss and PHI F1, and an upper bound on the time
    left (early stopping may end the run sooner)."""

    def __init__(self, run_id: int, max_epochs: int):
        self.run_id, self.max_epochs = run_id, max_epochs
        self.seconds: list[float] = []

    def log(self, record: dict) -> None:
        self.seconds.append(record["seconds"])
        left = (self.max_epochs - record["epoch"]) * sum(self.seconds) / len(self.seconds)
        log.info("run %d: epoch %d/%d  val loss %.4f  val PHI F1 %.3f  %.1f s  ETA <= %s", self.run_id,
                 record["epoch"], self.max_epochs, record["val_loss"], record["val_f1"], record["seconds"],
                 _duration(left))


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
