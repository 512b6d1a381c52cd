"""Representer bundles: the coordinator uploads provider-signed ones (admin), and everyone reads
the current one, which institutions export their contributions with."""

from __future__ import annotations

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse
from sqlalchemy.orm import Session

from deidpool.server.database import Representer
from deidpool.server.deps import BUNDLE_TYPE, BUNDLE_TYPES, SessionDep, StateDep, receive_payload
from deidpool.server.errors import Refused
from deidpool.server.representers import current_representer, register_representer
from deidpool.server.routes.routers import BUNDLE_FILE, admin_router, api_router, binary_body, refusals
from deidpool.server.views import RepresenterView, representer_view

admin = admin_router("/api/representers")
router = api_router("/api/representers")


@admin.post("", status_code=201, openapi_extra=binary_body(BUNDLE_TYPES),
            responses={200: {"model": RepresenterView,
                             "description": "An already registered representer made current again."},
                       **refusals(400, 409, 413, 415, 507)})
async def upload_representer(request: Request, response: Response, state: StateDep) -> RepresenterView:
    """Register the provider-signed representer bundle (.tar) in the body and make it current."""
    with await receive_payload(request, state, BUNDLE_TYPES) as staged:
        row, created = await run_in_threadpool(register_representer, state, staged)
    response.status_code = 201 if created else 200
    return representer_view(row)


def _current(session: Session) -> Representer:
    row = current_representer(session)
    if row is None:
        raise Refused(404, "the server has no current representer yet")
    return row


@router.get("/current", responses=refusals(404))
def current_representer_manifest(session: SessionDep) -> RepresenterView:
    return representer_view(_current(session))


@router.get("/current/bundle", response_class=FileResponse, responses={**BUNDLE_FILE, **refusals(404)})
def current_representer_bundle(state: StateDep, session: SessionDep) -> FileResponse:
    """The provider-signed bundle institutions export their contributions with."""
    row = _current(session)
    return FileResponse(state.payloads.path(row.payload_sha256), media_type=BUNDLE_TYPE, filename=f"{row.id}.tar")
