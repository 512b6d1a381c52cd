"""`GET /metrics` (server/metrics.py makes the metrics), for the metrics or admin token."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from deidpool.server.deps import require_metrics_reader
from deidpool.server.errors import RefusalBody
from deidpool.server.routes.routers import TOO_MANY

router = APIRouter(tags=["metrics"], responses=TOO_MANY)


@router.get("/metrics", response_class=Response, dependencies=[Depends(require_metrics_reader)],
            responses={200: {"description": "Prometheus text exposition format.",
                             "content": {"text/plain": {"schema": {"type": "string"}}}},
                       401: {"model": RefusalBody, "description": "The metrics or admin token is missing or wrong."}})
def metrics(request: Request) -> Response:
    """Prometheus metrics: stored data, training runs and epoch times (from the database), and
    this process's requests and uploads."""
    return Response(request.app.state.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
