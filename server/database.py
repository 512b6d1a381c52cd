"""The server's database (docs/server.md, Database): SQLAlchemy 2 models, the engine (SQLite
in the data directory by default, PostgreSQL through $DATABASE_URL), Alembic migrations and
sessions.

Use `open_database(data_dir)` for a `sessionmaker`; `with sessions.begin() as session:`
commits on success and rolls back on error.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import (
    JSON,
    URL,
    BigInteger,
    Boolean,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    TypeDecorator,
    create_engine,
    event,
    make_url,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from deidpool.server.settings import Layout

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_CHECKPOINT_PAGES = 64  # about 260 KB of write-ahead log between checkpoints (SQLite's default: 1000 pages)
SQLITE_WAL_LIMIT_BYTES = 512 << 10  # a log that grew past this (readers held it) is truncated back to it
QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
RUN_STATUSES = (QUEUED, RUNNING, SUCCEEDED, FAILED)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator):
    """A timezone-aware UTC datetime on every backend (SQLite keeps no time zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("datetimes stored in the database must be timezone-aware")
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect):
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


class Base(DeclarativeBase):
    pass


class Institution(Base):
    __tablename__ = "institutions"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    public_key: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[str] = mapped_column(String(32))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Representer(Base):
    __tablename__ = "representers"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    payload_sha256: Mapped[str] = mapped_column(String(64))
    manifest: Mapped[dict] = mapped_column(JSON)
    current: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Contribution(Base):
    __tablename__ = "contributions"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), index=True)
    representer_id: Mapped[str] = mapped_column(String(64), index=True)
    nonce: Mapped[str] = mapped_column(String(64), unique=True)
    sentences: Mapped[int] = mapped_column(Integer)
    tokens: Mapped[int] = mapped_column(Integer)
    dim: Mapped[int] = mapped_column(Integer)
    dtype: Mapped[str] = mapped_column(String(16))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    header_created: Mapped[datetime] = mapped_column(UTCDateTime)
    received: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # pseudonymization N of the signed header and the re-identification bound of the sealed summary
    # (format version 4; the header's before); its means (best attacker's success on hidden PHI
    # tokens, uniform, frequency and empirical prior) for queries
    neighbours: Mapped[int] = mapped_column(Integer)
    draws: Mapped[int] = mapped_column(Integer, default=1)  # copies of every sentence (the header's draws)
    quarantined: Mapped[bool] = mapped_column(Boolean, default=False)  # the coordinator holds it out of runs
    # the header's finders and the sealed summary's flagged tokens ({}: none ran)
    safety_net: Mapped[dict | None] = mapped_column(JSON)
    bound_uniform: Mapped[float | None] = mapped_column(Float)
    bound_frequency: Mapped[float | None] = mapped_column(Float)
    bound_empirical: Mapped[float | None] = mapped_column(Float)
    reidentification_bound: Mapped[dict | None] = mapped_column(JSON)


class TrainingRun(Base):
    __tablename__ = "training_runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    representer_id: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default=QUEUED, index=True)
    config: Mapped[dict] = mapped_column(JSON)
    contributions: Mapped[list] = mapped_column(JSON)
    epochs_done: Mapped[int] = mapped_column(Integer, default=0)
    best_epoch: Mapped[int | None] = mapped_column(Integer)
    metrics: Mapped[dict | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    worker_id: Mapped[str | None] = mapped_column(String(128))
    heartbeat: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished: Mapped[datetime | None] = mapped_column(UTCDateTime)


class RunEpoch(Base):
    __tablename__ = "run_epochs"
    run_id: Mapped[int] = mapped_column(ForeignKey("training_runs.id"), primary_key=True)
    epoch: Mapped[int] = mapped_column(Integer, primary_key=True)
    metrics: Mapped[dict] = mapped_column(JSON)


class Pipeline(Base):
    __tablename__ = "pipelines"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("training_runs.id"))
    representer_id: Mapped[str] = mapped_column(String(64))
    payload_sha256: Mapped[str] = mapped_column(String(64))
    manifest: Mapped[dict] = mapped_column(JSON)
    audit_override: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Audit(Base):
    __tablename__ = "audits"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    representer_id: Mapped[str] = mapped_column(String(64), index=True)
    verdict: Mapped[str] = mapped_column(String(32))
    report: Mapped[dict] = mapped_column(JSON)
    signer_fingerprint: Mapped[str] = mapped_column(String(32))
    signature: Mapped[str] = mapped_column(Text)
    created: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RequestNonce(Base):
    """The nonce of a signed institution request, remembered until the request is stale
    (server/nonces.py): a second request with it is a replay."""
    __tablename__ = "request_nonces"
    institution_id: Mapped[str] = mapped_column(ForeignKey("institutions.id"), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class _TurnTakingConnection(sqlite3.Connection):
    """An SQLite connection of `make_engine` whose transactions hold its engine's `turn` (a lock)
    from BEGIN IMMEDIATE to their commit or rollback: the transactions of one process queue for
    SQLite's write lock on it, each woken as the one before ends, instead of polling in SQLite's
    busy handler (sleeps of up to 100 ms, which add up under concurrent uploads). Another
    process's (the worker's) still wait in the busy handler."""

    turn: threading.Lock
    holding = False

    def take_turn(self) -> None:
        """Wait for the turn (at most the busy timeout: then SQLite's busy handler decides)."""
        self.holding = self.turn.acquire(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000)

    def end_turn(self) -> None:
        if self.holding:
            self.holding = False
            self.turn.release()

    def commit(self) -> None:
        try:
            super().commit()
        finally:
            self.end_turn()

    def rollback(self) -> None:
        try:
            super().rollback()
        finally:
            self.end_turn()

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.end_turn()


def make_engine(url: str) -> Engine:
    """An engine for `url` (as `Layout.database_url` gives it). SQLite gets WAL journaling, a busy
    timeout and transactions that take the write lock when they begin, so that concurrent
    writers (uploads, the worker) wait for each other instead of failing, in line within the
    process (`_TurnTakingConnection`). Its write-ahead log is checkpointed every
    SQLITE_CHECKPOINT_PAGES pages and kept to SQLITE_WAL_LIMIT_BYTES, and truncated when a write
    finds the volume full: the log reuses its room instead of growing into space freed on a full
    volume (docs/server.md, Recovery)."""
    sqlite = make_url(url).get_backend_name() == "sqlite"
    engine = create_engine(url, pool_pre_ping=True,
                           **({"connect_args": {"factory": _TurnTakingConnection}} if sqlite else {}))
    if sqlite:
        database = _database_file(engine.url)
        if database:
            _create_private_file(database)
        turn = threading.Lock()

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(connection, record):
            connection.isolation_level = None  # transactions begin below, not in the sqlite3 module
            connection.turn = turn
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_CHECKPOINT_PAGES}")
            cursor.execute(f"PRAGMA journal_size_limit={SQLITE_WAL_LIMIT_BYTES}")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin_immediate(connection):
            # Take the write lock at the start: a read-then-write transaction (claiming a run)
            # then cannot fail halfway when another writer got there first.
            sqlite_connection = connection.connection.dbapi_connection
            sqlite_connection.take_turn()
            try:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
            except BaseException:
                sqlite_connection.end_turn()
                raise

        @event.listens_for(engine, "handle_error")
        def _truncate_log_when_full(context):
            if database and sqlite_full(context.original_exception):
                truncate_log(database)
    return engine


def sqlite_full(error: BaseException) -> bool:
    """Whether `error` (an sqlite3 error) is SQLITE_FULL: the database's volume is full."""
    return getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL


def truncate_log(database: str) -> None:
    """Checkpoint the SQLite `database` and truncate its write-ahead log to nothing, if no
    transaction is using the log (else as much as it can, without waiting): the room the log
    took goes back to its volume, and the next write grows it again as far as it needs."""
    with contextlib.closing(sqlite3.connect(database, timeout=0)) as connection, contextlib.suppress(sqlite3.Error):
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _database_file(url: URL) -> str | None:
    """The file of the SQLite database at `url` (None in memory or for an SQLite URI)."""
    return url.database if url.database and url.database != ":memory:" and not url.query.get("uri") else None


def _create_private_file(database: str) -> None:
    """Create the SQLite `database` file, unless it exists, readable and writable by its owner
    alone (0600; SQLite gives its -wal and -shm files the same mode)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Apply the Alembic migrations not yet applied to the database behind `engine`, up to
    `revision` (all of them by default)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def migrate_database(url: str) -> None:
    """Bring the database at `url` up to date (and close its connections)."""
    engine = make_engine(url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()


def open_database(data_dir: str | Path, *, migrate: bool = True) -> sessionmaker:
    """Sessions on the data directory's database ($DATABASE_URL or D/deidpool.sqlite),
    brought up to date first unless `migrate` is false."""
    engine = make_engine(Layout(Path(data_dir)).database_url)
    if migrate:
        upgrade(engine)
    return sessionmaker(engine, expire_on_commit=False)
