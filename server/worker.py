"""The pooled training worker (docs/server.md, Worker): claims queued runs (or runs whose
worker stopped sending heartbeats) one at a time, trains them with `server.pooled` in
D/runs/<id>/, records every epoch in the database, and marks each run succeeded or failed.

Several workers may serve one queue (one database, one data directory): a claim locks the
run it picks and updates it only while it is still claimable (`claim_run`), so each run is
claimed once. Training resumes from the run directory's checkpoint, and epochs are upserted,
so a run taken over after a crash ends with each epoch recorded once. SIGTERM ends the worker
at once, handing its run back to the queue to resume from the last checkpoint."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from server.auth import load_ed25519_public_key
from server.database import (
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
from server.pooled import PooledContribution, open_pooled_data, train_pooled
from server.state import ServerState

STALE_SECONDS = 60  # a running run without a heartbeat for this long belongs to a crashed worker
HEARTBEAT_SECONDS = 15
HISTORY = "history.json"
REQUIRED_CONFIG = ("max_epochs", "patience", "seed", "valid_fraction")  # optional: lstm_units

log = logging.getLogger(__name__)


class RunLost(RuntimeError):
    """Another worker took the run over (this worker's heartbeats had stopped for too long)."""


class _Stopped(BaseException):
    """SIGTERM arrived: leave whatever is running, unfinished."""


def run_worker(data_dir: str | Path, *, once: bool = False, poll_seconds: float = 2.0,
               worker_id: str | None = None) -> int | None:
    """Train claimed runs until SIGTERM; with `once`, process at most one run and return its
    id (None when no run was waiting, or when stopped)."""
    state = ServerState.open(data_dir)
    worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if in_main_thread else None
    log.info("worker %s watching %s", worker_id, state.layout.root)
    try:
        while True:
            run_id = claim_run(state.sessions, worker_id)
            if run_id is not None:
                log.info("worker %s claimed run %d", worker_id, run_id)
                process_run(state, run_id, worker_id)
            if once:
                return run_id
            if run_id is None:
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


def claim_run(sessions: sessionmaker, worker_id: str) -> int | None:
    """Claim the oldest queued run, or the oldest running one whose heartbeat is older than
    STALE_SECONDS; returns its id, or None when there is none to claim.

    The run is picked with SELECT ... FOR UPDATE SKIP LOCKED: on PostgreSQL a run that another
    worker is claiming is locked, so it is skipped instead of waited for, and one that another
    claim committed meanwhile is checked again and skipped. SQLite has no row locks (SQLAlchemy
    leaves the clause out), but every transaction takes the write lock when it begins
    (`server.database`), so claims run one after another. The UPDATE is conditional too, so
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


def process_run(state: ServerState, run_id: int, worker_id: str) -> None:
    """Train the claimed run `run_id` and mark it succeeded or failed; an error in one run is
    recorded on the run, never raised. When stopped (SIGTERM, Ctrl-C) the run goes back to the
    queue, to resume from its checkpoint, and the stop propagates."""
    beating = threading.Event()
    heart = threading.Thread(target=_heartbeats, args=(state.sessions, run_id, worker_id, beating), daemon=True)
    heart.start()
    try:
        metrics = _train(state, run_id, worker_id)
    except RunLost as error:
        log.warning("run %d: %s; leaving it to the other worker", run_id, error)
    except Exception as error:
        log.exception("run %d failed", run_id)
        _finish(state.sessions, run_id, worker_id, status=FAILED, error=_message(error))
    except BaseException:
        log.warning("run %d: stopping; it goes back to the queue and resumes from its checkpoint", run_id)
        with state.sessions.begin() as session:
            session.execute(update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.worker_id == worker_id)
                            .values(status=QUEUED, worker_id=None, heartbeat=None))
        raise
    else:
        log.info("run %d succeeded: best epoch %d of %d, val loss %.4g, val PHI F1 %.3f", run_id,
                 metrics["best_epoch"], metrics["epochs"], metrics["val_loss"], metrics["val_f1"])
    finally:
        beating.set()
        heart.join()


def _message(error: Exception) -> str:
    """Our errors (ValueError and its kin) carry their own message; others get their type too."""
    return str(error) if isinstance(error, ValueError) and str(error) else f"{type(error).__name__}: {error}"


def _train(state: ServerState, run_id: int, worker_id: str) -> dict:
    with state.sessions() as session:
        run = session.get(TrainingRun, run_id)
        representer = session.get(Representer, run.representer_id)
        if representer is None:
            raise ValueError(f"representer {run.representer_id} is not stored on the server")
        contributions = _contributions(session, state, run.contributions)
    config, tags = run.config, representer.manifest["tags"]["vocabulary"]
    missing = [key for key in REQUIRED_CONFIG if key not in config]
    if missing:
        raise ValueError(f"the run's config lacks {', '.join(missing)}")
    run_dir = state.layout.run_dir(run_id)
    resumed = _read_history(run_dir)
    if resumed:
        _record_epochs(state.sessions, run_id, worker_id, resumed)
        log.info("run %d: resuming after epoch %d", run_id, len(resumed))
    log.info("run %d: reading %d contributions for representer %s", run_id, len(contributions), run.representer_id)
    data = open_pooled_data(contributions, state.encryption_key, representer_id=run.representer_id,
                            num_tags=len(tags), valid_fraction=config["valid_fraction"], seed=config["seed"])
    log.info("run %d: %d training and %d validation sentences from %d institutions", run_id, len(data.train),
             len(data.valid), len(data.split))
    progress = _Progress(run_id, config["max_epochs"])

    def on_epoch(record: dict) -> None:
        _record_epochs(state.sessions, run_id, worker_id, [record])
        progress.log(record)

    options = {"lstm_units": config["lstm_units"]} if "lstm_units" in config else {}
    metrics = train_pooled(data, run_dir, tags=tags, representer_id=run.representer_id,
                           contributions=[c.sha256 for c in contributions], max_epochs=config["max_epochs"],
                           patience=config["patience"], seed=config["seed"], on_epoch=on_epoch, **options)
    # history.json may hold an epoch whose callback a crash cut off: record them all once more
    _record_epochs(state.sessions, run_id, worker_id, _read_history(run_dir))
    _finish(state.sessions, run_id, worker_id, status=SUCCEEDED, metrics=metrics, best_epoch=metrics["best_epoch"])
    return metrics


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
            update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.worker_id == worker_id,
                                      TrainingRun.status == RUNNING)
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
                session.execute(update(TrainingRun).where(TrainingRun.id == run_id, TrainingRun.worker_id == worker_id,
                                                          TrainingRun.status == RUNNING).values(heartbeat=utcnow()))
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
