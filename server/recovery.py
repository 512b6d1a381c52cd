"""Start-up reconciliation of the payload store with the database (docs/server.md, Recovery):
what a server killed in the middle of an upload or a publication left behind."""

from __future__ import annotations

import logging

from sqlalchemy import select

from deidpool.server.database import Contribution, Pipeline, Representer
from deidpool.server.state import ServerState
from deidpool.server.uploads import restore_contribution

log = logging.getLogger(__name__)


def reconcile_store(state: ServerState) -> None:
    """Remove temporary upload and publication files; give a stored contribution found without
    row its row (`restore_contribution`), and delete any other blob no row refers to (a bundle or
    pipeline whose row was never committed, so never acknowledged)."""
    state.payloads.remove_leftovers()
    with state.sessions() as session:
        referenced = {sha256 for column in (Contribution.sha256, Representer.payload_sha256, Pipeline.payload_sha256)
                      for sha256 in session.scalars(select(column))}
    for sha256 in state.payloads.blobs():
        if sha256 in referenced:
            continue
        if restore_contribution(state, sha256):
            log.warning("restored the row of contribution %s, stored without one", sha256)
        else:
            log.warning("deleted payload %s, which no row refers to", sha256)
            state.payloads.path(sha256).unlink(missing_ok=True)
