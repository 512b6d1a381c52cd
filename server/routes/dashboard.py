"""The HTML dashboard at `/` (server/dashboard.py renders it), for the viewer or admin token."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse

from deidpool.server.dashboard import render_dashboard
from deidpool.server.deps import SessionDep, require_viewer

POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"  # no script, no fetch
router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse, dependencies=[Depends(require_viewer)])
def dashboard(session: SessionDep) -> HTMLResponse:
    return HTMLResponse(render_dashboard(session), headers={"Content-Security-Policy": POLICY,
                                                            "X-Content-Type-Options": "nosniff",
                                                            "Cache-Control": "no-store"})
