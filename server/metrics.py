"""Observability (docs/server.md, Metrics and logs): Prometheus metrics at `GET /metrics` and an
access log line per request.

What lives in the database (contributions and bytes stored, institutions, training runs by
status, the queue, epoch times) is read when Prometheus scrapes, by `DatabaseCollector`, so
every server process answers the same. What only a process sees (requests by route and
status, their durations, uploads by outcome) is counted in that process by the `RequestMetrics`
middleware, which also writes the access log. The route `/metrics` (server/routes/metrics.py)
needs the metrics token (`deidpool server rotate-metrics-token`) or the admin token, as
`Authorization: Bearer`."""

from __future__ import annotations

import logging
import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, SummaryMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from deidpool.server.database import (
    QUEUED,
    RUN_STATUSES,
    Contribution,
    Institution,
    Pipeline,
    Representer,
    RunEpoch,
    TrainingRun,
)
from deidpool.server.logs import REQUEST_FIELDS
from deidpool.server.state import ServerState

log = logging.getLogger(__name__)
access_log = logging.getLogger("deidpool.server.access")
UPLOAD_ROUTE = ("POST", "/api/contributions")
UNMATCHED = "unmatched"  # the route label when no route answered (the label set stays bounded)
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
MAX_LOGGED_PATH = 200


def upload_outcome(status: int) -> str:
    """accepted (201), duplicate (409: these bytes are stored already), abandoned (499: the client
    went away before its body arrived) or refused."""
    return {201: "accepted", 409: "duplicate", 499: "abandoned"}.get(status, "refused")


class DatabaseCollector(Collector):
    """The metrics whose values live in the database, read at each scrape."""

    def __init__(self, state: ServerState):
        self.state = state

    def collect(self):
        try:
            with self.state.sessions() as session:
                families = list(self._families(session))
        except SQLAlchemyError as error:
            log.warning("metrics: cannot read the database (%s)", type(error).__name__)
            families = []
        yield GaugeMetricFamily("deidpool_database_up", "1 when the metrics below could be read from the database.",
                                value=1 if families else 0)
        yield from families

    def _families(self, session: Session):
        institutions = GaugeMetricFamily("deidpool_institutions", "Registered institutions.", labels=["enabled"])
        enabled = dict(session.execute(select(Institution.enabled, func.count()).group_by(Institution.enabled)).all())
        for flag in (True, False):
            institutions.add_metric([str(flag).lower()], enabled.get(flag, 0))
        yield institutions

        count, size = session.execute(select(func.count(), func.coalesce(func.sum(Contribution.size_bytes), 0))).one()
        yield GaugeMetricFamily("deidpool_contributions_stored", "Contributions stored.", value=count)
        stored = GaugeMetricFamily("deidpool_stored_bytes", "Bytes of the payloads stored, by kind.", labels=["kind"])
        stored.add_metric(["contribution"], int(size))
        for kind, table in (("representer", Representer), ("pipeline", Pipeline)):
            stored.add_metric([kind], sum(self._payload_size(sha256) for sha256 in session.scalars(
                select(table.payload_sha256))))
        yield stored

        by_status = dict(session.execute(select(TrainingRun.status, func.count()).group_by(TrainingRun.status)).all())
        runs = GaugeMetricFamily("deidpool_training_runs", "Training runs by status.", labels=["status"])
        for status in RUN_STATUSES:
            runs.add_metric([status], by_status.get(status, 0))
        yield runs
        yield GaugeMetricFamily("deidpool_training_queue_length", "Training runs queued, waiting for a worker.",
                                value=by_status.get(QUEUED, 0))
        yield from self._epoch_families(session)

    def _payload_size(self, sha256: str) -> int:
        try:
            return self.state.payloads.path(sha256).stat().st_size
        except OSError:
            return 0

    def _epoch_families(self, session: Session):
        """Epoch times as the worker records them (run_epochs metrics "seconds")."""
        rows = session.execute(select(RunEpoch.run_id, RunEpoch.epoch, RunEpoch.metrics)
                               .order_by(RunEpoch.run_id, RunEpoch.epoch)).all()
        seconds = [(run_id, float(metrics["seconds"])) for run_id, _, metrics in rows
                   if isinstance(metrics, dict) and isinstance(metrics.get("seconds"), int | float)
                   and not isinstance(metrics.get("seconds"), bool)]
        yield SummaryMetricFamily("deidpool_training_epoch_seconds", "Time of every recorded training epoch.",
                                  count_value=len(seconds), sum_value=sum(value for _, value in seconds))
        if not seconds:
            return
        last_run = seconds[-1][0]
        of_last_run = [value for run_id, value in seconds if run_id == last_run]
        yield GaugeMetricFamily("deidpool_training_last_epoch_seconds",
                                "Time of the latest recorded epoch (of the newest run with one).", value=seconds[-1][1])
        yield GaugeMetricFamily("deidpool_training_mean_epoch_seconds",
                                "Mean epoch time of the newest run with a recorded epoch.",
                                value=sum(of_last_run) / len(of_last_run))


class ServerMetrics:
    """The metrics of one app: its own registry (several apps in one process do not mix), the
    database collector and this process's request counters."""

    def __init__(self, state: ServerState):
        self.registry = CollectorRegistry()
        self.registry.register(DatabaseCollector(state))
        self.requests = Counter("deidpool_http_requests", "HTTP requests answered by this process, by route and "
                                "status.", ["method", "route", "status"], registry=self.registry)
        self.durations = Histogram("deidpool_http_request_duration_seconds", "Time to answer HTTP requests in this "
                                   "process, by route.", ["method", "route"], registry=self.registry)
        self.uploads = Counter("deidpool_uploads", "Contribution uploads answered by this process: accepted (201), "
                               "duplicate (409), abandoned by the client (499) or refused, with their status.",
                               ["outcome", "status"], registry=self.registry)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.durations.labels(method, route).observe(seconds)
        if (method, route) == UPLOAD_ROUTE:
            self.uploads.labels(upload_outcome(status), str(status)).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _route_of(scope) -> str:
    """The path template of the route that answered the request; UNMATCHED when none did (an
    unknown path, or a request the rate limits refused before routing)."""
    return getattr(scope.get("route"), "path", None) or UNMATCHED


class RequestMetrics:
    """ASGI middleware, outside every other: counts each request in `metrics` by method, route
    template and status, and writes its access log line (method, path without the query string,
    route, status, duration, client address; never a header)."""

    def __init__(self, app, metrics: ServerMetrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, status = time.perf_counter(), 500

        async def send_status(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            seconds = time.perf_counter() - started
            method = scope["method"] if scope["method"] in METHODS else "other"
            route = _route_of(scope)
            self.metrics.observe(method, route, status, seconds)
            path = scope.get("path", "")[:MAX_LOGGED_PATH]
            client = scope["client"][0] if scope.get("client") else None
            access_log.info("%s %s %d", method, path, status, extra={REQUEST_FIELDS: {
                "method": method, "path": path, "route": route, "status": status,
                "duration_ms": round(seconds * 1000, 2), "client": client}})
