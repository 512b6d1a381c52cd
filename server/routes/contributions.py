"""Contributions: institutions upload their encrypted, signed files and list their own."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from server.database import Contribution, Institution
from server.deps import (
    CONTRIBUTION_TYPES,
    SessionDep,
    StateDep,
    receive_payload,
    signed_institution,
    uploading_institution,
)
from server.routes.routers import api_router, binary_body, refusals
from server.uploads import accept_contribution
from server.views import ContributionView, contribution_view

router = api_router("/api/contributions", tag="institution")


@router.post("", status_code=201, openapi_extra=binary_body(CONTRIBUTION_TYPES),
             responses=refusals(400, 401, 403, 409, 413, 415, 422, 507))
async def upload_contribution(request: Request, state: StateDep,
                              institution: Annotated[str, Depends(uploading_institution)],
                              sha256: Annotated[str | None, Header(alias="X-Deidpool-Content-SHA256")] = None
                              ) -> ContributionView:
    """Accept an encrypted, signed contribution (.dpc); see docs/server.md, Uploads."""
    with await receive_payload(request, state, CONTRIBUTION_TYPES) as staged:
        row = await run_in_threadpool(accept_contribution, state, staged, institution, sha256)
    return contribution_view(row)


@router.get("", responses=refusals(401, 422))
def own_contributions(institution: Annotated[Institution, Depends(signed_institution)],
                      session: SessionDep) -> list[ContributionView]:
    """The calling institution's contributions (metadata only); a signed request."""
    rows = session.scalars(select(Contribution).where(Contribution.institution_id == institution.id)
                           .order_by(Contribution.received, Contribution.sha256))
    return [contribution_view(row) for row in rows]
