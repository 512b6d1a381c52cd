"""Published pipelines: the latest one's manifest and training curve, and its server-signed bundle."""

from __future__ import annotations

from fastapi.responses import FileResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from deidpool.server.database import Pipeline
from deidpool.server.deps import BUNDLE_TYPE, SessionDep, StateDep
from deidpool.server.errors import Refused
from deidpool.server.routes.routers import BUNDLE_FILE, api_router, refusals
from deidpool.server.routes.runs import run_epochs
from deidpool.server.views import LatestPipelineView, latest_pipeline_view

router = api_router("/api/pipelines")


def _latest(session: Session) -> Pipeline:
    row = session.scalars(select(Pipeline).order_by(Pipeline.id.desc())).first()
    if row is None:
        raise Refused(404, "no pipeline has been published yet")
    return row


@router.get("/latest", responses=refusals(404))
def latest_pipeline(session: SessionDep) -> LatestPipelineView:
    row = _latest(session)
    return latest_pipeline_view(row, run_epochs(session, row.run_id))


@router.get("/latest/bundle", response_class=FileResponse, responses={**BUNDLE_FILE, **refusals(404)})
def latest_pipeline_bundle(state: StateDep, session: SessionDep) -> FileResponse:
    """The server-signed pipeline that `deidpool client deidentify` uses."""
    row = _latest(session)
    return FileResponse(state.payloads.path(row.payload_sha256), media_type=BUNDLE_TYPE,
                        filename=f"pipeline-{row.id}.tar")
