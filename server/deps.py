"""The routes' dependencies: the server state and a database session, who is calling (admin,
viewer, metrics reader, institution), and request bodies read only after the credentials and
capped in size (`AuthenticatedFirstRoute` for JSON, `receive_payload` for binary bodies)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session

from deidpool.contribution.container import CONTENT_TYPE
from deidpool.contribution.signed_requests import (
    CONTENT_SHA256_HEADER,
    INSTITUTION_HEADER,
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
)
from deidpool.server.auth import (
    NONCE_PATTERN,
    UNSIGNED,
    AuthError,
    check_admin_authorization,
    check_metrics_authorization,
    check_viewer_authorization,
)
from deidpool.server.database import Institution
from deidpool.server.errors import Refused
from deidpool.server.nonces import use_nonce
from deidpool.server.payloads import PayloadTooLarge, StagedPayload
from deidpool.server.settings import MAX_CLOCK_SKEW_SECONDS
from deidpool.server.signatures import MAX_INSTITUTION_CHARS, SignedRequest, signer
from deidpool.server.state import ServerState

log = logging.getLogger(__name__)
MAX_JSON_BYTES = 1 << 20  # the body of a JSON route (audit reports are the largest)
BUNDLE_TYPE = "application/x-tar"
OCTET_STREAM = "application/octet-stream"
BUNDLE_TYPES = (BUNDLE_TYPE, OCTET_STREAM)  # the Content-Types each binary route accepts (else 415)
CONTRIBUTION_TYPES = (CONTENT_TYPE, OCTET_STREAM)
LOGIN = 'Basic realm="deidpool dashboard", charset="UTF-8"'  # a browser asks for the dashboard's token


def server_state(request: Request) -> ServerState:
    return request.app.state.server


StateDep = Annotated[ServerState, Depends(server_state)]


def get_session(state: StateDep) -> Iterator[Session]:
    """A database session, closed when the route returns (before the response is sent): what the
    route did not commit is rolled back."""
    with state.sessions() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session, scope="function")]
_admin_bearer = HTTPBearer(auto_error=False, scheme_name="AdminToken",
                          description="The admin token printed by `deidpool server init`.")
_metrics_bearer = HTTPBearer(auto_error=False, scheme_name="MetricsToken",
                             description="The metrics token printed by `deidpool server rotate-metrics-token`, or "
                                         "the admin token.")
_institution_key = APIKeyHeader(name=INSTITUTION_HEADER, scheme_name="Institution", auto_error=False,
                                description="The id of a registered institution, which signs the request with its "
                                            f"Ed25519 key in {SIGNATURE_HEADER} (an upload: the SHA-256 of its "
                                            "body too; docs/server.md, Signed institution requests).")
InstitutionIdDep = Annotated[str | None, Depends(_institution_key)]
# The nonce's rule, declared in the OpenAPI document; check_signed_request enforces it (401, as any signed request's)
NonceHeader = Annotated[str | None, Header(alias=NONCE_HEADER,
                                           json_schema_extra={"pattern": f"^{NONCE_PATTERN.pattern}$"})]
TimestampHeader = Annotated[str | None, Header(alias=TIMESTAMP_HEADER)]
SignatureHeader = Annotated[str | None, Header(alias=SIGNATURE_HEADER)]
ContentSha256Header = Annotated[str | None, Header(alias=CONTENT_SHA256_HEADER,
                                                   description="The SHA-256 (hex) of the body, which the request's "
                                                               "signature covers.")]


def _authorization(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    return f"{credentials.scheme} {credentials.credentials}" if credentials else None


def _refuse_unless_authorized(check, authorization: str | None, token_hashes, **refusal) -> None:
    """`check(authorization, token_hashes)`, its AuthError answered 401 (with `refusal`'s headers)."""
    try:
        check(authorization, token_hashes)
    except AuthError as error:
        raise Refused(401, str(error), **refusal) from None


def require_admin(state: StateDep,
                  credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_admin_bearer)]) -> None:
    _refuse_unless_authorized(check_admin_authorization, _authorization(credentials), state.admin_token_sha256())


def require_metrics_reader(state: StateDep, credentials: Annotated[HTTPAuthorizationCredentials | None,
                                                                   Depends(_metrics_bearer)]) -> None:
    _refuse_unless_authorized(check_metrics_authorization, _authorization(credentials),
                              state.metrics_token_sha256s())


def require_viewer(state: StateDep, authorization: Annotated[str | None, Header()] = None) -> None:
    """Refuse (401, asking a browser to log in) unless the request carries the viewer or admin token."""
    _refuse_unless_authorized(check_viewer_authorization, authorization, state.viewer_token_sha256s(),
                              headers={"WWW-Authenticate": LOGIN})


def _signing_institution(request: Request, state: ServerState, institution: str | None, timestamp: str | None,
                         nonce: str | None, signature: str | None, content_sha256: str | None = None) -> Institution:
    """The enabled institution that signed this request, which it had not sent before (docs/server.md,
    Signed institution requests). Every request whose signature does not hold gets the same 401
    (`UNSIGNED`), its reason logged; only the holder of a registered key learns more (403 when
    disabled, a replay named). The lookup's session is closed before the nonce is recorded: on
    SQLite an open transaction holds the write lock."""
    signed = SignedRequest(institution or "", request.headers.get("host", ""), request.method, request.url.path,
                           timestamp, nonce, signature, content_sha256)
    try:
        row = signer(state, signed)
    except AuthError as error:
        log.info("refused a signed %s %s naming %r: %s", signed.method, signed.path,
                 signed.institution[:MAX_INSTITUTION_CHARS], error)
        raise Refused(401, UNSIGNED) from None
    if not row.enabled:
        raise Refused(403, f"institution {row.id} is disabled: the server refuses its requests until the "
                           "coordinator enables it again")
    try:
        use_nonce(state.sessions, row.id, nonce, int(timestamp) + MAX_CLOCK_SKEW_SECONDS)
    except AuthError as error:
        raise Refused(401, str(error)) from None
    return row


def signed_institution(request: Request, state: StateDep, institution: InstitutionIdDep,
                       timestamp: TimestampHeader = None, nonce: NonceHeader = None,
                       signature: SignatureHeader = None) -> Institution:
    """The enabled institution that signed this request (401 otherwise, 403 if disabled)."""
    return _signing_institution(request, state, institution, timestamp, nonce, signature)


def signed_upload(request: Request, state: StateDep, institution: InstitutionIdDep,
                  timestamp: TimestampHeader = None, nonce: NonceHeader = None, signature: SignatureHeader = None,
                  content_sha256: ContentSha256Header = None) -> Institution:
    """The enabled institution that signed this upload, the SHA-256 of its body included: refused
    before the body is read (the contribution's own signature, at its end, is checked after)."""
    if not content_sha256:
        raise Refused(401, UNSIGNED)
    return _signing_institution(request, state, institution, timestamp, nonce, signature, content_sha256)


def _check_declared_length(request: Request, limit: int) -> None:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise Refused(413, f"the body of {int(declared):,} bytes exceeds the limit of {limit:,} bytes")


def _capped(receive, limit: int):
    """`receive` refusing (413) a body past `limit` bytes."""
    received = 0

    async def capped_receive():
        nonlocal received
        message = await receive()
        received += len(message.get("body", b""))
        if received > limit:  # an HTTPException: FastAPI turns other errors while reading a body into 400
            raise HTTPException(413, f"the body exceeds the limit of {limit:,} bytes")
        return message

    return capped_receive


class AuthenticatedFirstRoute(APIRoute):
    """FastAPI reads and parses a JSON body before it solves dependencies. On routes with one,
    this checks the admin token (admin routes) and caps the body at MAX_JSON_BYTES first, so
    that an unauthenticated or oversized request is refused before its body is read. Routes
    with binary bodies read them in the endpoint, after their dependencies (`receive_payload`)."""

    def get_route_handler(self):
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler
        admin = any(depends.dependency is require_admin for depends in self.dependencies)

        async def authenticated_first(request: Request) -> Response:
            if admin:
                require_admin(server_state(request), await _admin_bearer(request))
            _check_declared_length(request, MAX_JSON_BYTES)
            return await handler(Request(request.scope, _capped(request.receive, MAX_JSON_BYTES)))

        return authenticated_first


def _check_content_type(request: Request, accepted: tuple[str, ...]) -> None:
    """415 unless the Content-Type is one of `accepted`, compared without its parameters
    (`; charset=...` is ignored); a request without one is taken as application/octet-stream
    (RFC 9110, 8.3)."""
    given = request.headers.get("content-type", OCTET_STREAM)
    if given.partition(";")[0].strip().lower() not in accepted:
        raise Refused(415, f"Content-Type {given[:100]!r} is not accepted here: send {' or '.join(accepted)}")


async def receive_payload(request: Request, state: ServerState, accepted: tuple[str, ...]) -> StagedPayload:
    """The request body, of a Content-Type in `accepted` (else 415, unread), in a staged payload
    (413 past max_upload_bytes); the caller discards it."""
    _check_content_type(request, accepted)
    limit = state.settings.max_upload_bytes
    _check_declared_length(request, limit)
    staged = state.payloads.stage(limit)
    try:
        async for chunk in request.stream():
            staged.write(chunk)
        staged.finish()
    except PayloadTooLarge as error:
        staged.discard()
        raise Refused(413, str(error)) from None
    except BaseException:
        staged.discard()
        raise
    return staged
