"""Contributions: institutions upload their encrypted, signed files and list their own."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from deidpool.server.database import Contribution, Institution
from deidpool.server.deps import (
    CONTRIBUTION_TYPES,
    ContentSha256Header,
    SessionDep,
    StateDep,
    receive_payload,
    signed_institution,
    signed_upload,
)
from deidpool.server.routes.routers import api_router, binary_body, refusals
from deidpool.server.uploads import accept_contribution
from deidpool.server.views import ContributionView, contribution_view

router = api_router("/api/contributions", tag="institution")


@router.post("", status_code=201, openapi_extra=binary_body(CONTRIBUTION_TYPES),
             responses=refusals(400, 401, 403, 409, 413, 415, 422, 507))
async def upload_contribution(request: Request, state: StateDep,
                              institution: Annotated[Institution, Depends(signed_upload)],
                              sha256: ContentSha256Header = None) -> ContributionView:
    """Accept an encrypted, signed contribution (.dpc) in a signed request; see docs/server.md, Uploads."""
    with await receive_payload(request, state, CONTRIBUTION_TYPES) as staged:
        row = await run_in_threadpool(accept_contribution, state, staged, institution.id, sha256)
    return contribution_view(row)


@router.get("", responses=refusals(401, 403, 422, 507))
def own_contributions(institution: Annotated[Institution, Depends(signed_institution)],
                      session: SessionDep) -> list[ContributionView]:
    """The calling institution's contributions (metadata only); a signed request."""
    rows = session.scalars(select(Contribution).where(Contribution.institution_id == institution.id)
                           .order_by(Contribution.received, Contribution.sha256))
    return [contribution_view(row) for row in rows]
