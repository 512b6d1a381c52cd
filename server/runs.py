"""Pooled training runs as the coordinator queues them; the worker (`deidpool.server.worker`) claims
and trains them."""

from __future__ import annotations

from sqlalchemy import select

from deidpool.server.database import QUEUED, Contribution, Institution, TrainingRun
from deidpool.server.errors import Refused
from deidpool.server.representers import current_representer
from deidpool.server.state import ServerState


def queue_run(state: ServerState, config: dict) -> TrainingRun:
    """A queued run over every accepted contribution of the current representer, but those of
    disabled institutions and those in quarantine, trained with `config` (max_epochs, patience,
    seed, valid_fraction)."""
    with state.sessions.begin() as session:
        representer = current_representer(session)
        if representer is None:
            raise Refused(409, "there is no current representer: register one first (POST /api/representers)")
        contributions = session.scalars(
            select(Contribution.sha256).join(Institution)
            .where(Contribution.representer_id == representer.id, Institution.enabled, ~Contribution.quarantined)
            .order_by(Contribution.received, Contribution.sha256)).all()
        if not contributions:
            raise Refused(409, f"no contribution for the current representer {representer.id} to train on yet (those "
                               "of disabled institutions and those in quarantine are left out)")
        run = TrainingRun(representer_id=representer.id, status=QUEUED, config=config,
                          contributions=list(contributions), epochs_done=0)
        session.add(run)
    return run
