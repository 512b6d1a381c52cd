"""The routers every resource module declares its routes on, and what routes document in OpenAPI
beyond their signatures: refusals, binary bodies and bundle files.

`admin_router` requires the admin token of every route declared on it (a new admin route cannot
forget it); `api_router` is for the public and institution routes. Both read JSON bodies only
after the credentials, capped (`AuthenticatedFirstRoute`), and give their routes' paths in
full (`/api/...`): the metrics and access log label a request with its route's declared path."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from deidpool.server.deps import BUNDLE_TYPE, MAX_JSON_BYTES, AuthenticatedFirstRoute, require_admin
from deidpool.server.errors import RefusalBody

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
    507: "The server's storage (payload volume or database) is full; nothing was stored.",
}


def refusals(*statuses: int) -> dict:
    """The `responses=` of a route that can refuse with `statuses` (`{"detail": message}`)."""
    return {status: {"model": RefusalBody, "description": REFUSALS[status]} for status in statuses}


RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}}
TOO_MANY = {429: {**refusals(429)[429], "headers": RETRY_AFTER}}  # any route may answer it (server/limits.py)
BINARY = {"schema": {"type": "string", "format": "binary"}}
BUNDLE_FILE = {200: {"description": "The bundle (.tar).", "content": {BUNDLE_TYPE: BINARY}}}


def binary_body(media_types: tuple[str, ...]) -> dict:
    """The `openapi_extra` of a route whose body `receive_payload` reads."""
    return {"requestBody": {"required": True, "content": {media_type: BINARY for media_type in media_types}}}


def api_router(prefix: str, tag: str = "public") -> APIRouter:
    """A router of public (or, with `tag="institution"`, institution) routes under `prefix`."""
    return APIRouter(prefix=prefix, tags=[tag], route_class=AuthenticatedFirstRoute, responses=TOO_MANY)


def admin_router(prefix: str) -> APIRouter:
    """A router under `prefix` whose every route needs the admin token (401 otherwise)."""
    return APIRouter(prefix=prefix, tags=["admin"], route_class=AuthenticatedFirstRoute,
                     dependencies=[Depends(require_admin)], responses={**TOO_MANY, **refusals(401)})
