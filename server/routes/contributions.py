"""Contributions: institutions upload their encrypted, signed files and list their own; the
coordinator lists an institution's and holds one out of training runs (quarantine) or lets it
back in."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select
from sqlalchemy.orm import Session

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
from deidpool.server.errors import Refused
from deidpool.server.routes.routers import admin_router, api_router, binary_body, refusals
from deidpool.server.uploads import accept_contribution
from deidpool.server.views import ContributionView, contribution_view

router = api_router("/api/contributions", tag="institution")
admin = admin_router("/api/contributions")


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
    return _listing(session, institution.id)


@admin.get("/of/{institution}", responses=refusals(404, 422))
def institution_contributions(institution: str, session: SessionDep) -> list[ContributionView]:
    """An institution's contributions (metadata only), for the coordinator."""
    if session.get(Institution, institution) is None:
        raise Refused(404, f"no institution {institution}")
    return _listing(session, institution)


@admin.post("/{sha256}/quarantine", responses=refusals(404, 422, 507))
def quarantine(sha256: str, session: SessionDep) -> ContributionView:
    """Hold the contribution out of the training runs queued from now on."""
    return _set_quarantined(session, sha256, True)


@admin.post("/{sha256}/release", responses=refusals(404, 422, 507))
def release(sha256: str, session: SessionDep) -> ContributionView:
    """Let a quarantined contribution into the training runs queued from now on."""
    return _set_quarantined(session, sha256, False)


def _listing(session: Session, institution: str) -> list[ContributionView]:
    rows = session.scalars(select(Contribution).where(Contribution.institution_id == institution)
                           .order_by(Contribution.received, Contribution.sha256))
    return [contribution_view(row) for row in rows]


def _set_quarantined(session: Session, sha256: str, quarantined: bool) -> ContributionView:
    row = session.get(Contribution, sha256)
    if row is None:
        raise Refused(404, f"no contribution {sha256}")
    row.quarantined = quarantined
    session.commit()
    return contribution_view(row)
