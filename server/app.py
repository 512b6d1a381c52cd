"""The pooling server's HTTP API (docs/server.md, HTTP API): `create_app(data_dir)` includes the
routers of server/routes and answers refusals (`Refused`) and errors as `{"detail": message}`."""

from __future__ import annotations

import contextlib
import errno
import logging
import sqlite3
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from deidpool.server.errors import Refused
from deidpool.server.limits import RateLimits
from deidpool.server.metrics import RequestMetrics, ServerMetrics
from deidpool.server.recovery import reconcile_store
from deidpool.server.routes import ROUTERS
from deidpool.server.state import ServerState

log = logging.getLogger(__name__)
STORAGE_FULL = (errno.ENOSPC, errno.EDQUOT)
POSTGRES_DISK_FULL = "53100"  # SQLSTATE disk_full
CLIENT_CLOSED_REQUEST = 499
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


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
    app.state.metrics = ServerMetrics(state)
    for router in ROUTERS:
        app.include_router(router)
    app.add_middleware(RateLimits, state=state)
    app.add_middleware(RequestMetrics, metrics=app.state.metrics)  # outermost: sees the 429s too
    _add_exception_handlers(app)
    return app


def _add_exception_handlers(app: FastAPI) -> None:
    @app.exception_handler(Refused)
    async def refused(request: Request, error: Refused) -> JSONResponse:
        headers = error.headers or ({"WWW-Authenticate": "Bearer"} if error.status == 401 else None)
        return JSONResponse({"detail": error.detail}, status_code=error.status, headers=headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        """Starlette's 405 allows the methods of the first route of the path: Allow names all its routes' methods."""
        if error.status_code == 405:
            error = HTTPException(405, error.detail, headers={"Allow": ", ".join(_allowed_methods(request))})
        return await http_exception_handler(request, error)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_message(error)}, status_code=422)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    @app.exception_handler(OSError)
    @app.exception_handler(DBAPIError)
    async def storage_error(request: Request, error: OSError | DBAPIError) -> JSONResponse:
        """A full payload or database volume gives 507 (what was being written is discarded as for
        any refusal)."""
        if not storage_full(error):
            return await unexpected(request, error)
        reason = error.strerror if isinstance(error, OSError) else error.orig  # not the SQL and its parameters
        log.error("%s %s: the server's storage is full (%s)", request.method, request.url.path, reason)
        return JSONResponse({"detail": "the server's storage is full, nothing was stored: try again later"},
                            status_code=507)

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, error: ClientDisconnect) -> Response:
        """The client went away before its request arrived whole: no one reads the answer, which the
        metrics and access log count as 499 (as nginx does), not as a server error."""
        return Response(status_code=CLIENT_CLOSED_REQUEST)


def storage_full(error: BaseException) -> bool:
    """Whether `error` says that a volume is full: the payload store's (ENOSPC, EDQUOT) or the
    database's (SQLite's SQLITE_FULL, PostgreSQL's disk_full)."""
    if isinstance(error, OSError):
        return error.errno in STORAGE_FULL
    cause = getattr(error, "orig", None)
    return (getattr(cause, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or getattr(cause, "sqlstate", None) == POSTGRES_DISK_FULL)


def _allowed_methods(request: Request) -> list[str]:
    """The methods that some route answers at the request's path."""
    return [method for method in METHODS if any(route.matches({**request.scope, "method": method})[0] is Match.FULL
                                                for route in request.app.router.routes)]


def _validation_message(error: RequestValidationError) -> str:
    """'body.max_epochs: Input should be ...; ...': each problem with the field it is in."""
    problems = []
    for problem in error.errors()[:5]:
        where = ".".join(str(part) for part in problem.get("loc", ()))
        problems.append(f"{where}: {problem.get('msg', 'invalid')}")
    return "; ".join(problems) or "invalid request"
