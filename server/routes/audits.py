"""Privacy audit reports of representers: the coordinator records signed ones (admin), everyone
reads their verdicts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from deidpool.server.audits import record_audit
from deidpool.server.database import Audit
from deidpool.server.deps import SessionDep, StateDep
from deidpool.server.routes.institutions import Ed25519PublicKeyPem
from deidpool.server.routes.routers import admin_router, api_router, refusals
from deidpool.server.views import AuditView, audit_view

ED25519_SIGNATURE_PATTERN = "^[A-Za-z0-9+/]{86}==$"  # 64 bytes in base64; record_audit verifies it (400)
admin = admin_router("/api/audits")
router = api_router("/api/audits")


class AuditIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    report: dict = Field(description="The audit report (adversary.audit), with `representer_id` and `verdict`.")
    signature: str = Field(min_length=1, max_length=200, json_schema_extra={"pattern": ED25519_SIGNATURE_PATTERN},
                           description="Base64 Ed25519 signature of the report's canonical JSON.")
    signer_public_key: Ed25519PublicKeyPem = Field(description="The signer's Ed25519 public key, PEM.")


@admin.post("", status_code=201, responses=refusals(400, 404, 413, 422, 507))
def add_audit(body: AuditIn, state: StateDep) -> AuditView:
    """Record a signed privacy audit report of a representer."""
    return audit_view(record_audit(state, body.report, body.signature, body.signer_public_key))


@router.get("")
def list_audits(session: SessionDep) -> list[AuditView]:
    return [audit_view(row) for row in session.scalars(select(Audit).order_by(Audit.id))]
