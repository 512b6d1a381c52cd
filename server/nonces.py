"""Replay memory of signed institution requests (docs/server.md, Signed institution requests):
each (institution, nonce) is accepted once. The memory is the `request_nonces` table, shared by
every process of the server; a row is kept until its request is stale (its timestamp too far
from the clock to be accepted anyway), and stale rows are pruned as new ones are added. A nonce
that SQLite finds no room for is tried once more, after the failed write truncated the
write-ahead log (`database.make_engine`)."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import sessionmaker

from deidpool.contribution.signed_requests import NONCE_HEADER
from deidpool.server.auth import AuthError
from deidpool.server.database import RequestNonce, sqlite_full, utcnow


def use_nonce(sessions: sessionmaker, institution: str, nonce: str, stale_after: float) -> None:
    """Record `institution`'s `nonce`, remembered until the Unix time `stale_after`; AuthError
    when it was recorded before (the request is a replay)."""
    expires = datetime.fromtimestamp(stale_after, timezone.utc)
    for last in (False, True):
        try:
            with sessions.begin() as session:
                session.execute(delete(RequestNonce).where(RequestNonce.expires < utcnow()))
                session.add(RequestNonce(institution_id=institution, nonce=nonce, expires=expires))
            return
        except IntegrityError:  # the primary key: another request (in any server process) used it first
            raise AuthError(f"this signed request was already received ({NONCE_HEADER} used before): a signed "
                            "request is accepted once, sign each request anew") from None
        except OperationalError as error:
            if last or not sqlite_full(error.orig):
                raise
