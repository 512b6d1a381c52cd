"""Institutions, as the coordinator registers, lists, disables and enables them (admin)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from deidpool.contribution.identity import INSTITUTION_ID_PATTERN, check_institution_id
from deidpool.representer import keys
from deidpool.server.auth import load_ed25519_public_key
from deidpool.server.database import Institution
from deidpool.server.deps import SessionDep
from deidpool.server.errors import Refused
from deidpool.server.routes.routers import admin_router, refusals
from deidpool.server.views import InstitutionView, institution_view

MAX_PEM_CHARS = 4096
# Declared in the OpenAPI document, checked by the route (check_institution_id, load_ed25519_public_key,
# _check_pem_alone), which answers with its own messages. The key's pattern is an Ed25519 key's PEM as keys are
# written: the DER prefix of its SubjectPublicKeyInfo in base64 ("MCowBQYDK2VwAyEA"), then its 32 bytes (any 32
# bytes are a key), and nothing else: the key stored is the text registered.
ED25519_PUBLIC_KEY_PEM_PATTERN = (r"^-----BEGIN PUBLIC KEY-----\r?\n"
                                  r"MCowBQYDK2VwAyEA[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=\r?\n"
                                  r"-----END PUBLIC KEY-----(\r?\n)?$")
Ed25519PublicKeyPem = Annotated[str, Field(max_length=MAX_PEM_CHARS,
                                           json_schema_extra={"pattern": ED25519_PUBLIC_KEY_PEM_PATTERN})]
admin = admin_router("/api/institutions")


class InstitutionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str = Field(min_length=1, max_length=64, json_schema_extra={"pattern": INSTITUTION_ID_PATTERN},
                    description="Institution id: 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
                                "digit.")
    public_key: Ed25519PublicKeyPem = Field(description="Ed25519 public key, PEM.")


@admin.post("", status_code=201, responses=refusals(400, 409, 413, 422, 507))
def register_institution(body: InstitutionIn, session: SessionDep) -> InstitutionView:
    try:
        check_institution_id(body.id)
        key = load_ed25519_public_key(body.public_key, "public_key")
        _check_pem_alone(body.public_key)
    except ValueError as error:
        raise Refused(422, str(error)) from None
    if session.get(Institution, body.id) is not None:
        raise Refused(409, f"institution {body.id} is already registered")
    fingerprint = keys.fingerprint(key)
    holder = session.scalars(select(Institution.id).where(Institution.fingerprint == fingerprint)).first()
    if holder is not None:  # one key, one institution: what it signs names a single sender
        raise Refused(409, f"this public key is already registered for institution {holder}: each institution "
                           "needs a key of its own (`deidpool client keygen`)")
    row = Institution(id=body.id, public_key=body.public_key, fingerprint=fingerprint, enabled=True)
    session.add(row)
    session.commit()
    return institution_view(row)


def _check_pem_alone(pem: str) -> None:
    """ValueError unless `pem` is the PEM of an Ed25519 public key and nothing else (the schema's pattern)."""
    if not re.fullmatch(ED25519_PUBLIC_KEY_PEM_PATTERN, pem):
        raise ValueError("public_key must be the key's PEM alone, as `deidpool client keygen` writes it "
                         "(institution.pub): one BEGIN/END PUBLIC KEY block of one line, nothing around it")


@admin.get("")
def list_institutions(session: SessionDep) -> list[InstitutionView]:
    return [institution_view(row) for row in session.scalars(select(Institution).order_by(Institution.id))]


@admin.post("/{institution}/disable", responses=refusals(404, 422, 507))
def disable_institution(institution: str, session: SessionDep) -> InstitutionView:
    """Refuse the institution's uploads (403) from now on."""
    return _set_enabled(session, institution, False)


@admin.post("/{institution}/enable", responses=refusals(404, 422, 507))
def enable_institution(institution: str, session: SessionDep) -> InstitutionView:
    return _set_enabled(session, institution, True)


def _set_enabled(session: Session, institution: str, enabled: bool) -> InstitutionView:
    row = session.get(Institution, institution)
    if row is None:
        raise Refused(404, f"no institution {institution}")
    row.enabled = enabled
    session.commit()
    return institution_view(row)
