"""Privacy audit reports (adversary.audit) recorded for a representer: the report is signed
(Ed25519 over its canonical JSON) by whoever ran the audit, and must name the representer
it audited in `representer_id`."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from deidpool.adversary.verdicts import BROKEN, CHANCE, EXPORT_PATH, INCONCLUSIVE
from deidpool.representer.keys import fingerprint
from deidpool.server.auth import AuthError, canonical_json, load_ed25519_public_key, verify_signature
from deidpool.server.database import Audit, Representer
from deidpool.server.errors import Refused
from deidpool.server.state import ServerState


def record_audit(state: ServerState, report: dict, signature: str, signer_public_key: str) -> Audit:
    try:
        key = load_ed25519_public_key(signer_public_key, "signer_public_key")
    except ValueError as error:
        raise Refused(422, str(error)) from None
    try:
        verify_signature(key, signature, canonical_json(report), "audit report")
    except AuthError as error:
        raise Refused(400, f"{error} with signer_public_key {fingerprint(key)}") from None
    representer_id, verdict = report.get("representer_id"), report.get("verdict")
    if not isinstance(representer_id, str):
        raise Refused(422, "report.representer_id is missing: the signed report must name the audited representer")
    if verdict not in (CHANCE, BROKEN, INCONCLUSIVE):
        raise Refused(422, f"report.verdict {verdict!r} is not one of {CHANCE}, {BROKEN}, {INCONCLUSIVE}")
    with state.sessions.begin() as session:
        if session.get(Representer, representer_id) is None:
            raise Refused(404, f"representer {representer_id} is not registered")
        audit = Audit(representer_id=representer_id, verdict=verdict, report=report,
                      signer_fingerprint=fingerprint(key), signature=signature)
        session.add(audit)
    return audit


def passed_audit(session: Session, representer_id: str) -> Audit | None:
    """The latest audit of the representer's export path (report "path": "export", what
    contributions share) with the verdict "consistent with chance"; an audit of the bare
    representer opens no gate, whatever it says."""
    passed = session.scalars(select(Audit).where(Audit.representer_id == representer_id, Audit.verdict == CHANCE)
                             .order_by(Audit.id.desc()))
    return next((audit for audit in passed if audit.report.get("path") == EXPORT_PATH), None)
