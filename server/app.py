"""The pooling server's HTTP API (docs/server.md, HTTP API): `create_app(data_dir)`.

Routes stay thin: authentication is a dependency (`require_admin`, `signed_institution`),
the work is in uploads / representers / runs / audits / publishing, refusals are `Refused`
answered as `{"detail": message}`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select

from client.identity import check_institution_id
from client.signed_requests import INSTITUTION_HEADER, NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER
from client.transport import CONTENT_TYPE
from representer import keys
from server import dashboard, metrics, views
from server.audits import record_audit
from server.auth import AuthError, check_admin_authorization, check_signed_request, load_ed25519_public_key
from server.database import Audit, Contribution, Institution, Pipeline, RunEpoch, TrainingRun
from server.errors import RefusalBody, Refused
from server.limits import RateLimits
from server.nonces import use_nonce
from server.payloads import PayloadTooLarge, StagedPayload
from server.publishing import publish_run
from server.recovery import reconcile_store
from server.representers import current_representer, register_representer
from server.runs import queue_run
from server.state import ServerState
from server.uploads import accept_contribution, registered_institution

log = logging.getLogger(__name__)
BUNDLE_TYPE = "application/x-tar"
OCTET_STREAM = "application/octet-stream"
BUNDLE_TYPES = (BUNDLE_TYPE, OCTET_STREAM)  # the Content-Types each binary route accepts (else 415)
CONTRIBUTION_TYPES = (CONTENT_TYPE, OCTET_STREAM)
MAX_PEM_CHARS = 4096
MAX_JSON_BYTES = 1 << 20  # the body of a JSON route (audit reports are the largest)
STORAGE_FULL = (errno.ENOSPC, errno.EDQUOT)
RUN_ID = Annotated[int, PathParam(ge=1, le=2**31 - 1, description="Training run id.")]
REFUSALS = {
    400: "The body cannot be parsed, fails a check of its content, or was altered.",
    401: "Credentials missing or wrong: the admin token, or the sending institution or its signature.",
    403: "The institution is disabled.",
    404: "Not found.",
    409: "In conflict with what is stored: already stored, or not possible in the server's present state.",
    413: f"The body is too large (JSON bodies: {MAX_JSON_BYTES >> 20} MiB, uploads: max_upload_bytes).",
    415: "The Content-Type is not one the route accepts.",
    422: "A parameter or the body is invalid.",
    429: "Too many requests from this institution or address (server.json limits): retry after Retry-After seconds.",
    507: "The server's storage is full; nothing was stored.",
}


def refusals(*statuses: int) -> dict:
    """The `responses=` of a route that can refuse with `statuses` (`{"detail": message}`)."""
    return {status: {"model": RefusalBody, "description": REFUSALS[status]} for status in statuses}


class InstitutionIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: str = Field(min_length=1, max_length=64, description="Institution id (letters, digits, '.', '_', '-').")
    public_key: str = Field(min_length=1, max_length=MAX_PEM_CHARS, description="Ed25519 public key, PEM.")


class RunIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    max_epochs: int = Field(30, ge=1, le=10_000)
    patience: int = Field(5, ge=1, le=10_000)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    valid_fraction: float = Field(0.1, gt=0, lt=1, description="Share of each institution's sentences "
                                                               "held out for validation.")


class PublishIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    override_audit: bool = Field(False, description="Publish although the representer has no passing audit.")


class AuditIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    report: dict = Field(description="The audit report (adversary.audit), with `representer_id` and `verdict`.")
    signature: str = Field(min_length=1, max_length=200, description="Base64 Ed25519 signature of the report's "
                                                                     "canonical JSON.")
    signer_public_key: str = Field(min_length=1, max_length=MAX_PEM_CHARS, description="The signer's Ed25519 "
                                                                                       "public key, PEM.")


def server_state(request: Request) -> ServerState:
    return request.app.state.server


State = Annotated[ServerState, Depends(server_state)]
_bearer = HTTPBearer(auto_error=False, description="The admin token printed by `deidpool server init`.")


def require_admin(state: State, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    authorization = f"{credentials.scheme} {credentials.credentials}" if credentials else None
    try:
        check_admin_authorization(authorization, state.admin_token_sha256())
    except AuthError as error:
        raise Refused(401, str(error)) from None


def signed_institution(request: Request, state: State,
                       institution: Annotated[str | None, Header(alias=INSTITUTION_HEADER)] = None,
                       timestamp: Annotated[str | None, Header(alias=TIMESTAMP_HEADER)] = None,
                       nonce: Annotated[str | None, Header(alias=NONCE_HEADER)] = None,
                       signature: Annotated[str | None, Header(alias=SIGNATURE_HEADER)] = None) -> Institution:
    """The institution that signed this request, which it had not sent before (docs/server.md,
    Signed institution requests)."""
    with state.sessions() as session:
        row = session.get(Institution, institution) if institution else None
    if row is None:
        raise Refused(401, f"{INSTITUTION_HEADER} ({institution or 'missing'}) is not a registered institution")
    key = load_ed25519_public_key(row.public_key, f"the key of {row.id}")
    try:
        stale_after = check_signed_request(key, request.method, request.url.path, timestamp, nonce, signature)
        use_nonce(state.sessions, row.id, nonce, stale_after)
    except AuthError as error:
        raise Refused(401, str(error)) from None
    return row


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
    with binary bodies read them in the endpoint, after their dependencies (`_receive`)."""

    def get_route_handler(self):
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler
        admin = any(depends.dependency is require_admin for depends in self.dependencies)

        async def authenticated_first(request: Request) -> Response:
            if admin:
                require_admin(server_state(request), await _bearer(request))
            _check_declared_length(request, MAX_JSON_BYTES)
            return await handler(Request(request.scope, _capped(request.receive, MAX_JSON_BYTES)))

        return authenticated_first


Admin = [Depends(require_admin)]
RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}}
TOO_MANY = {429: {**refusals(429)[429], "headers": RETRY_AFTER}}  # any route may answer it (server/limits.py)
api = APIRouter(prefix="/api", route_class=AuthenticatedFirstRoute, responses=TOO_MANY)


@api.get("/health", tags=["public"])
def health() -> dict:
    return {"status": "ok"}


@api.get("/keys", tags=["public"])
def server_keys(state: State) -> dict:
    """The server's public keys: contributions are encrypted to the first, pipelines signed by the second."""
    encryption = keys.load_public_key(state.layout.encryption_public_key, keys.ENCRYPTION)
    signing = keys.load_public_key(state.layout.signing_public_key, keys.SIGNING)
    return {"encryption_public_key": state.layout.encryption_public_key.read_text(),
            "signing_public_key": state.layout.signing_public_key.read_text(),
            "fingerprints": {"encryption": keys.fingerprint(encryption), "signing": keys.fingerprint(signing),
                             "provider": state.settings.provider_fingerprint}}


@api.post("/institutions", status_code=201, dependencies=Admin, tags=["admin"],
          responses=refusals(400, 401, 409, 413, 422))
def register_institution(body: InstitutionIn, state: State) -> dict:
    try:
        check_institution_id(body.id)
        key = load_ed25519_public_key(body.public_key, "public_key")
    except ValueError as error:
        raise Refused(422, str(error)) from None
    with state.sessions.begin() as session:
        if session.get(Institution, body.id) is not None:
            raise Refused(409, f"institution {body.id} is already registered")
        row = Institution(id=body.id, public_key=body.public_key, fingerprint=keys.fingerprint(key), enabled=True)
        session.add(row)
    return views.institution_view(row)


@api.get("/institutions", dependencies=Admin, tags=["admin"], responses=refusals(401))
def list_institutions(state: State) -> list[dict]:
    with state.sessions() as session:
        return [views.institution_view(row) for row in session.scalars(select(Institution).order_by(Institution.id))]


def _set_enabled(state: ServerState, institution: str, enabled: bool) -> dict:
    with state.sessions.begin() as session:
        row = session.get(Institution, institution)
        if row is None:
            raise Refused(404, f"no institution {institution}")
        row.enabled = enabled
    return views.institution_view(row)


@api.post("/institutions/{institution}/disable", dependencies=Admin, tags=["admin"],
          responses=refusals(401, 404, 422))
def disable_institution(institution: str, state: State) -> dict:
    """Refuse the institution's uploads (403) from now on."""
    return _set_enabled(state, institution, False)


@api.post("/institutions/{institution}/enable", dependencies=Admin, tags=["admin"],
          responses=refusals(401, 404, 422))
def enable_institution(institution: str, state: State) -> dict:
    return _set_enabled(state, institution, True)


def _body_schema(media_types: tuple[str, ...]) -> dict:
    binary = {"schema": {"type": "string", "format": "binary"}}
    return {"requestBody": {"required": True, "content": {media_type: binary for media_type in media_types}}}


def _check_content_type(request: Request, accepted: tuple[str, ...]) -> None:
    """415 unless the Content-Type is one of `accepted`, compared without its parameters
    (`; charset=...` is ignored); a request without one is taken as application/octet-stream
    (RFC 9110, 8.3)."""
    given = request.headers.get("content-type", OCTET_STREAM)
    if given.partition(";")[0].strip().lower() not in accepted:
        raise Refused(415, f"Content-Type {given[:100]!r} is not accepted here: send {' or '.join(accepted)}")


async def _receive(request: Request, state: ServerState, accepted: tuple[str, ...]) -> StagedPayload:
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


@api.post("/representers", dependencies=Admin, tags=["admin"], status_code=201,
          openapi_extra=_body_schema(BUNDLE_TYPES),
          responses={200: {"description": "An already registered representer made current again."},
                     **refusals(400, 401, 409, 413, 415, 507)})
async def upload_representer(request: Request, state: State) -> JSONResponse:
    """Register the provider-signed representer bundle (.tar) in the body and make it current."""
    with await _receive(request, state, BUNDLE_TYPES) as staged:
        row, created = await run_in_threadpool(register_representer, state, staged)
    return JSONResponse(views.representer_view(row), status_code=201 if created else 200)


def _current(state: ServerState):
    with state.sessions() as session:
        row = current_representer(session)
    if row is None:
        raise Refused(404, "the server has no current representer yet")
    return row


@api.get("/representers/current", tags=["public"], responses=refusals(404))
def current_representer_manifest(state: State) -> dict:
    return views.representer_view(_current(state))


@api.get("/representers/current/bundle", response_class=FileResponse, tags=["public"], responses=refusals(404))
def current_representer_bundle(state: State) -> FileResponse:
    """The provider-signed bundle institutions export their contributions with."""
    row = _current(state)
    return FileResponse(state.payloads.path(row.payload_sha256), media_type=BUNDLE_TYPE,
                        filename=f"{row.id}.tar")


def uploading_institution(state: State,
                          institution: Annotated[str | None, Header(alias=INSTITUTION_HEADER)] = None) -> str:
    """The X-Deidpool-Institution of an upload, refused before the body is read unless it names
    an enabled institution (the body's signature is checked after)."""
    with state.sessions() as session:
        return registered_institution(session, institution).id


@api.post("/contributions", status_code=201, tags=["institution"], openapi_extra=_body_schema(CONTRIBUTION_TYPES),
          responses=refusals(400, 401, 403, 409, 413, 415, 422, 507))
async def upload_contribution(request: Request, state: State,
                              institution: Annotated[str, Depends(uploading_institution)],
                              sha256: Annotated[str | None, Header(alias="X-Deidpool-Content-SHA256")] = None) -> dict:
    """Accept an encrypted, signed contribution (.dpc); see docs/server.md, Uploads."""
    with await _receive(request, state, CONTRIBUTION_TYPES) as staged:
        row = await run_in_threadpool(accept_contribution, state, staged, institution, sha256)
    return views.contribution_view(row)


@api.get("/contributions", tags=["institution"], responses=refusals(401, 422))
def own_contributions(state: State, institution: Annotated[Institution, Depends(signed_institution)]) -> list[dict]:
    """The calling institution's contributions (metadata only); a signed request."""
    with state.sessions() as session:
        rows = session.scalars(select(Contribution).where(Contribution.institution_id == institution.id)
                               .order_by(Contribution.received, Contribution.sha256))
        return [views.contribution_view(row) for row in rows]


def _run_view(session, run: TrainingRun) -> dict:
    epochs = session.scalars(select(RunEpoch).where(RunEpoch.run_id == run.id).order_by(RunEpoch.epoch)).all()
    return views.run_view(run, list(epochs))


@api.post("/runs", status_code=202, dependencies=Admin, tags=["admin"], responses=refusals(400, 401, 409, 413, 422))
def start_run(state: State, body: RunIn = RunIn()) -> dict:
    """Queue a pooled training run over every accepted contribution of the current representer."""
    run = queue_run(state, body.model_dump())
    return views.run_view(run, [])


@api.get("/runs", dependencies=Admin, tags=["admin"], responses=refusals(401))
def list_runs(state: State) -> list[dict]:
    with state.sessions() as session:
        return [_run_view(session, run) for run in session.scalars(select(TrainingRun).order_by(TrainingRun.id))]


@api.get("/runs/{run_id}", dependencies=Admin, tags=["admin"], responses=refusals(401, 404, 422))
def get_run(run_id: RUN_ID, state: State) -> dict:
    with state.sessions() as session:
        run = session.get(TrainingRun, run_id)
        if run is None:
            raise Refused(404, f"no training run {run_id}")
        return _run_view(session, run)


@api.post("/runs/{run_id}/publish", status_code=201, dependencies=Admin, tags=["admin"],
          responses=refusals(400, 401, 404, 409, 413, 422, 507))
def publish(run_id: RUN_ID, state: State, body: PublishIn = PublishIn()) -> dict:
    """Publish a succeeded run as a server-signed pipeline (needs a passing audit, or override_audit)."""
    return views.pipeline_view(publish_run(state, run_id, body.override_audit))


@api.post("/audits", status_code=201, dependencies=Admin, tags=["admin"], responses=refusals(400, 401, 404, 413, 422))
def add_audit(body: AuditIn, state: State) -> dict:
    """Record a signed privacy audit report of a representer."""
    return views.audit_view(record_audit(state, body.report, body.signature, body.signer_public_key))


@api.get("/audits", tags=["public"])
def list_audits(state: State) -> list[dict]:
    with state.sessions() as session:
        return [views.audit_view(row) for row in session.scalars(select(Audit).order_by(Audit.id))]


def _latest_pipeline(state: ServerState) -> Pipeline:
    with state.sessions() as session:
        row = session.scalars(select(Pipeline).order_by(Pipeline.id.desc())).first()
    if row is None:
        raise Refused(404, "no pipeline has been published yet")
    return row


@api.get("/pipelines/latest", tags=["public"], responses=refusals(404))
def latest_pipeline(state: State) -> dict:
    row = _latest_pipeline(state)
    with state.sessions() as session:
        epochs = session.scalars(select(RunEpoch).where(RunEpoch.run_id == row.run_id).order_by(RunEpoch.epoch))
        return {**views.pipeline_view(row), "epochs": [{"epoch": epoch.epoch, **epoch.metrics} for epoch in epochs]}


@api.get("/pipelines/latest/bundle", response_class=FileResponse, tags=["public"], responses=refusals(404))
def latest_pipeline_bundle(state: State) -> FileResponse:
    """The server-signed pipeline that `deidpool client deidentify` uses."""
    row = _latest_pipeline(state)
    return FileResponse(state.payloads.path(row.payload_sha256), media_type=BUNDLE_TYPE,
                        filename=f"pipeline-{row.id}.tar")


def _validation_message(error: RequestValidationError) -> str:
    """'body.max_epochs: Input should be ...; ...': each problem with the field it is in."""
    problems = []
    for problem in error.errors()[:5]:
        where = ".".join(str(part) for part in problem.get("loc", ()))
        problems.append(f"{where}: {problem.get('msg', 'invalid')}")
    return "; ".join(problems) or "invalid request"


def create_app(data_dir: str | Path) -> FastAPI:
    """The API of the server in `data_dir` (created by `deidpool server init`); its database
    is migrated to the latest schema first, and its payload store reconciled with it."""
    state = ServerState.open(data_dir)
    reconcile_store(state)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        state.close()

    app = FastAPI(title="deidpool pooling server", version="1", lifespan=lifespan,
                  description="Institutions upload encrypted, signed contributions; the coordinator trains and "
                              "publishes the pooled tagger. See docs/server.md.")
    app.state.server = state
    app.state.metrics = metrics.ServerMetrics(state)
    app.include_router(api)
    app.include_router(dashboard.router)
    app.include_router(metrics.router, responses=TOO_MANY)
    app.add_middleware(RateLimits, state=state)
    app.add_middleware(metrics.RequestMetrics, metrics=app.state.metrics)  # outermost: sees the 429s too

    @app.exception_handler(Refused)
    async def refused(request: Request, error: Refused) -> JSONResponse:
        headers = error.headers or ({"WWW-Authenticate": "Bearer"} if error.status == 401 else None)
        return JSONResponse({"detail": error.detail}, status_code=error.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_message(error)}, status_code=422)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    @app.exception_handler(OSError)
    async def storage_error(request: Request, error: OSError) -> JSONResponse:
        """A full disk gives 507 (what was being written is discarded as for any refusal)."""
        if error.errno not in STORAGE_FULL:
            return await unexpected(request, error)
        log.error("%s %s: the server's storage is full (%s)", request.method, request.url.path, error.strerror)
        return JSONResponse({"detail": "the server's storage is full, nothing was stored: try again later"},
                            status_code=507)

    return app
