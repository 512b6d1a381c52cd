"""Representer bundles the provider signed: verified with the pinned provider key, stored in
the payload store, and one of them made current (the one contributions must be made with)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from deidpool.representer.bundle import BundleError, open_bundle
from deidpool.server.database import Representer
from deidpool.server.errors import Refused
from deidpool.server.payloads import StagedPayload
from deidpool.server.state import ServerState


def current_representer(session: Session) -> Representer | None:
    return session.scalars(select(Representer).where(Representer.current)).first()


def register_representer(state: ServerState, staged: StagedPayload) -> tuple[Representer, bool]:
    """Verify the finished `staged` bundle, store it and make it current; returns the row and
    whether the representer is new (False: an already known one made current again)."""
    try:
        bundle = open_bundle(staged.path, state.provider_key)
    except BundleError as error:
        raise Refused(400, str(error).replace(str(staged.path), "the uploaded bundle")) from None
    try:
        with state.sessions.begin() as session:
            row = session.get(Representer, bundle.representer_id)
            created = row is None
            if created:
                row = Representer(id=bundle.representer_id, payload_sha256=staged.sha256, manifest=bundle.manifest)
                session.add(row)
            session.execute(update(Representer).where(Representer.id != row.id).values(current=False))
            row.current = True
            session.flush()
            if created:
                state.payloads.commit(staged)
    except IntegrityError:
        raise Refused(409, f"representer {bundle.representer_id} was registered by a concurrent request") from None
    return row, created
