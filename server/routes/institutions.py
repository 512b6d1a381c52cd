"""Institutions, as the coordinator registers, lists, disables and enables them (admin)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from client.identity import check_institution_id
from representer import keys
from server.auth import load_ed25519_public_key
from server.database import Institution
from server.deps import SessionDep
from server.errors import Refused
from server.routes.routers import admin_router, refusals
from server.views import InstitutionView, institution_view

MAX_PEM_CHARS = 4096
admin = admin_router("/api/institutions")


class InstitutionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str = Field(min_length=1, max_length=64, description="Institution id (letters, digits, '.', '_', '-').")
    public_key: str = Field(min_length=1, max_length=MAX_PEM_CHARS, description="Ed25519 public key, PEM.")


@admin.post("", status_code=201, responses=refusals(400, 409, 413, 422))
def register_institution(body: InstitutionIn, session: SessionDep) -> InstitutionView:
    try:
        check_institution_id(body.id)
        key = load_ed25519_public_key(body.public_key, "public_key")
    except ValueError as error:
        raise Refused(422, str(error)) from None
    if session.get(Institution, body.id) is not None:
        raise Refused(409, f"institution {body.id} is already registered")
    row = Institution(id=body.id, public_key=body.public_key, fingerprint=keys.fingerprint(key), enabled=True)
    session.add(row)
    session.commit()
    return institution_view(row)


@admin.get("")
def list_institutions(session: SessionDep) -> list[InstitutionView]:
    return [institution_view(row) for row in session.scalars(select(Institution).order_by(Institution.id))]


@admin.post("/{institution}/disable", responses=refusals(404, 422))
def disable_institution(institution: str, session: SessionDep) -> InstitutionView:
    """Refuse the institution's uploads (403) from now on."""
    return _set_enabled(session, institution, False)


@admin.post("/{institution}/enable", responses=refusals(404, 422))
def enable_institution(institution: str, session: SessionDep) -> InstitutionView:
    return _set_enabled(session, institution, True)


def _set_enabled(session: Session, institution: str, enabled: bool) -> InstitutionView:
    row = session.get(Institution, institution)
    if row is None:
        raise Refused(404, f"no institution {institution}")
    row.enabled = enabled
    session.commit()
    return institution_view(row)
