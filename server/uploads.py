"""Acceptance of an uploaded contribution (docs/server.md, Uploads): the checks in the
documented order, each failure a `Refused` with its HTTP status, and only then the
payload moved into the store and its row committed. A refused upload changes nothing stored.
The row records the signed header and, from the sealed summary that only the server's key
opens, the re-identification bound and what the export's safety net flagged."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session

from deidpool.contribution.container import (
    PSEUDONYMIZATION_SCHEMES,
    BindingError,
    ContributionHeader,
    read_header,
    read_summary,
    verify_contribution,
)
from deidpool.contribution.records import ContributionError
from deidpool.contribution.validation import validate_contribution
from deidpool.pseudonymization.schemes import PRIORS
from deidpool.server.auth import load_ed25519_public_key
from deidpool.server.database import Contribution, Institution, Representer
from deidpool.server.errors import Refused
from deidpool.server.payloads import StagedPayload
from deidpool.server.settings import MAX_CLOCK_SKEW_SECONDS
from deidpool.server.state import ServerState

_STORING = threading.Lock()  # held while an upload moves its payload into place and commits its row (_store)


def accept_contribution(state: ServerState, staged: StagedPayload, institution_header: str | None,
                        sha256_header: str | None) -> Contribution:
    """Check the finished `staged` upload and store it; returns the new row."""
    path = staged.path
    header = _checked(400, lambda: read_header(path), path)
    if header.institution != institution_header:
        raise Refused(401, f"X-Deidpool-Institution ({institution_header or 'missing'}) is not the "
                                 f"contribution header's institution ({header.institution})")
    with state.sessions() as session:
        institution = registered_institution(session, header.institution)
        current = session.scalars(select(Representer).where(Representer.current)).first()
        key = load_ed25519_public_key(institution.public_key, f"the key of {institution.id}")
        known_nonce = session.scalars(select(Contribution.sha256).where(Contribution.nonce == header.nonce)).first()
        stored = session.get(Contribution, staged.sha256) is not None
    _checked(401, lambda: verify_contribution(path, key), path)
    if sha256_header is None or sha256_header.strip().lower() != staged.sha256:
        raise Refused(400, f"X-Deidpool-Content-SHA256 ({sha256_header or 'missing'}) is not the SHA-256 of "
                                 f"the received bytes ({staged.sha256}); the upload was cut short or altered")
    if stored:  # a blob without row (the server stopped before committing it) is verified and completed below
        raise Refused(409, f"contribution {staged.sha256} is already stored")
    if known_nonce is not None:
        raise Refused(400, f"nonce {header.nonce} was already used by contribution {known_nonce} (a replay)")
    # N does not apply to surrogates, drawn whatever the original: only the embedding schemes are held to it
    if header.pseudonymization != PSEUDONYMIZATION_SCHEMES["surrogates"] and \
            header.neighbours < state.settings.min_neighbours:
        raise Refused(422, f"the contribution was pseudonymized among {header.neighbours} neighbours; this server "
                           f"requires at least {state.settings.min_neighbours} (re-export with --neighbours)")
    if header.draws > state.settings.max_draws:
        raise Refused(422, f"the contribution holds {header.draws} draws of every sentence; this server accepts at "
                           f"most {state.settings.max_draws} (re-export with --draws)")
    if state.settings.require_safety_net and not header.safety_net.get("finders"):
        raise Refused(422, "the contribution was exported without the safety net for unlabeled PHI; this server "
                           "requires it (re-export without --safety-net off)")
    created = _check_created(header.created, state.settings.max_age_seconds)
    if current is None:
        raise Refused(422, "the server has no current representer to accept contributions for")
    _checked(422, lambda: validate_contribution(
        path, state.encryption_key, key, representer_ids=[current.id], dim=current.manifest["repr_size"],
        num_tags=len(current.manifest["tags"]["vocabulary"])), path)
    summary = _checked(422, lambda: read_summary(path, state.encryption_key, header), path)
    row = _row(header, summary, staged.sha256, staged.size, created)
    try:
        _store(state, staged, row)
    except IntegrityError:
        if _committed(state, staged.sha256):
            raise Refused(409, f"contribution {staged.sha256} is already stored") from None
        raise Refused(400, f"nonce {header.nonce} was already used (a replay)") from None
    return row


def _store(state: ServerState, staged: StagedPayload, row: Contribution) -> None:
    """Move the payload into place, then commit its row. When the commit fails (a full database
    volume), the payload moved for it goes again unless the row is there after all, so that no
    payload stays without its row; one upload at a time, so that a concurrent upload of the same
    bytes does not count on a payload that is about to go."""
    moved = False
    with _STORING:
        _check_quota(state, row)
        try:
            with state.sessions.begin() as session:
                session.add(row)
                session.flush()  # a concurrent upload of the same bytes or nonce fails here, before the file moves
                moved = state.payloads.commit(staged)
        except BaseException:
            if moved and not _committed(state, row.sha256):
                state.payloads.remove(row.sha256)
            raise


def _check_quota(state: ServerState, row: Contribution) -> None:
    """413 when `row` would take its institution past `max_institution_bytes` of stored contributions."""
    quota = state.settings.max_institution_bytes
    with state.sessions() as session:
        used = session.scalar(select(func.coalesce(func.sum(Contribution.size_bytes), 0))
                              .where(Contribution.institution_id == row.institution_id))
    if used + row.size_bytes > quota:
        raise Refused(413, f"institution {row.institution_id} stores {used:,} bytes of contributions; this one of "
                           f"{row.size_bytes:,} bytes would exceed its quota of {quota:,} bytes (ask the coordinator)")


def _committed(state: ServerState, sha256: str) -> bool:
    """Whether the row of contribution `sha256` is stored (True when the database cannot say: the
    start-up reconciliation then decides about its payload)."""
    try:
        with state.sessions() as session:
            return session.get(Contribution, sha256) is not None
    except SQLAlchemyError:
        return True


def restore_contribution(state: ServerState, sha256: str) -> bool:
    """Give the stored blob `sha256`, found without row, the row of the contribution it is, if
    it is one: its bytes hash to its name and carry a registered institution's signature and an
    unused nonce. A blob gets into the store only after every check of its upload passed, so
    the server stopped between storing it and committing its row. Returns whether it did."""
    path = state.payloads.path(sha256)
    try:
        if not state.payloads.verified(sha256):
            return False
        header = read_header(path)
        with state.sessions() as session:
            institution = session.get(Institution, header.institution)
        if institution is None:
            return False
        verify_contribution(path, load_ed25519_public_key(institution.public_key, f"the key of {institution.id}"))
        row = _row(header, read_summary(path, state.encryption_key, header), sha256, path.stat().st_size,
                   _parse_created(header.created))
        with state.sessions.begin() as session:
            session.add(row)
    except (ContributionError, Refused, IntegrityError):
        return False
    return True


def _row(header: ContributionHeader, summary: dict, sha256: str, size: int, created: datetime) -> Contribution:
    """The row of a contribution: its signed `header`'s fields, and from its sealed `summary` the
    re-identification bound and the safety net's counts (beside the header's finders); 422 when
    either is there but not a JSON object."""
    bound, counts = (summary.get(name, {}) for name in ("reidentification_bound", "safety_net"))
    if type(bound) is not dict or type(counts) is not dict:
        raise Refused(422, "the sealed summary's reidentification_bound and safety_net must be JSON objects")
    return Contribution(sha256=sha256, institution_id=header.institution, representer_id=header.representer_id,
                        nonce=header.nonce, sentences=header.sentences, tokens=header.tokens, dim=header.dim,
                        dtype=header.dtype, size_bytes=size, header_created=created, neighbours=header.neighbours,
                        draws=header.draws, safety_net={**counts, **header.safety_net},
                        reidentification_bound=bound, **_bound_means(bound))


def registered_institution(session: Session, institution_id: str | None) -> Institution:
    """The enabled institution `institution_id` that signed a request or a contribution; 401 unless
    registered, 403 if disabled."""
    if not institution_id:
        raise Refused(401, "the X-Deidpool-Institution header is missing")
    institution = session.get(Institution, institution_id)
    if institution is None:
        raise Refused(401, f"institution {institution_id} is not registered")
    if not institution.enabled:
        raise Refused(403, f"institution {institution_id} is disabled: the server refuses its requests until the "
                           "coordinator enables it again")
    return institution


def _checked(status: int, check, path):
    """`check()`'s result; its ContributionError refuses the upload with `status`, or with 400
    for a body that does not decrypt for its signed header and sender (`BindingError`: a file
    re-signed after sealing, such as one taken from another institution). The message names
    "the upload", not the temporary file."""
    try:
        return check()
    except ContributionError as error:
        raise Refused(400 if isinstance(error, BindingError) else status,
                      str(error).replace(str(path), "the upload")) from None


def _bound_means(bound: dict) -> dict:
    """The overall mean successes of a re-identification bound (None where it has none)."""
    means = bound.get("overall", {}).get("mean_success", {})
    values = {prior: means.get(prior) for prior in PRIORS}
    return {f"bound_{prior}": float(value) if isinstance(value, (int, float)) else None
            for prior, value in values.items()}


def _parse_created(created: str) -> datetime:
    try:
        moment = datetime.fromisoformat(created)
    except ValueError:
        raise Refused(400, f"the header's creation time {created!r} is not an ISO 8601 time") from None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def _check_created(created: str, max_age_seconds: int) -> datetime:
    moment = _parse_created(created)
    now = datetime.now(timezone.utc)
    if moment < now - timedelta(seconds=max_age_seconds):
        raise Refused(400, f"the contribution was created at {created}, more than {max_age_seconds} s ago "
                                 "(stale): export it again")
    if moment > now + timedelta(seconds=MAX_CLOCK_SKEW_SECONDS):
        raise Refused(400, f"the contribution was created at {created}, in the future (stale clock)")
    return moment
