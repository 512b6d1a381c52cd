"""Request rate limits (docs/server.md, Rate limits): an ASGI middleware that answers 429 with
Retry-After, before any other work, to a request over its limit. Requests signed by a registered
institution count per institution and client address, other requests (a stranger's naming an
institution too) per client address; the admin's are not limited. Token buckets in the server
process, sized by server.json."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from fastapi.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from deidpool.contribution.signed_requests import (
    CONTENT_SHA256_HEADER,
    INSTITUTION_HEADER,
    NONCE_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
)
from deidpool.server.auth import AuthError, check_admin_authorization
from deidpool.server.signatures import SignedRequest, signer
from deidpool.server.state import ServerState


class TokenBuckets:
    """One bucket per key, holding up to `burst` requests and refilled at `per_minute`."""

    def __init__(self, per_minute: int, burst: int, clock: Callable[[], float] = time.monotonic):
        if per_minute < 1 or burst < 1:
            raise ValueError(f"per_minute and burst must be positive, got {per_minute} and {burst}")
        self.per_minute, self.burst, self._clock = per_minute, burst, clock
        self._rate = per_minute / 60
        self._buckets: dict[object, tuple[float, float]] = {}  # key -> (requests left, when counted)
        self._pruned = clock()
        self._lock = threading.Lock()

    def take(self, key: object) -> float:
        """Count a request of `key`: 0 when it may go on, else the seconds until it may."""
        with self._lock:
            now = self._clock()
            self._prune(now)
            left = self._left(key, now)
            if left < 1:
                self._buckets[key] = (left, now)
                return (1 - left) / self._rate
            self._buckets[key] = (left - 1, now)
            return 0.0

    def _left(self, key: object, now: float) -> float:
        left, when = self._buckets.get(key, (self.burst, now))
        return min(self.burst, left + (now - when) * self._rate)

    def _prune(self, now: float) -> None:
        """Forget the buckets full again (as good as new), at most once per time to refill one."""
        if now - self._pruned >= self.burst / self._rate:
            self._pruned = now
            left = {key: self._left(key, now) for key in self._buckets}
            self._buckets = {key: (count, now) for key, count in left.items() if count < self.burst}


class RateLimits:
    """The ASGI middleware; `state.settings` sizes the buckets (read at start)."""

    def __init__(self, app, state: ServerState):
        self.app, self.state = app, state
        settings = state.settings
        self.institutions = TokenBuckets(settings.institution_requests_per_minute, settings.institution_request_burst)
        self.addresses = TokenBuckets(settings.address_requests_per_minute, settings.address_request_burst)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        address = scope["client"][0] if scope.get("client") else "unknown"
        admin, institution = False, None
        if "authorization" in headers or INSTITUTION_HEADER in headers:
            admin, institution = await run_in_threadpool(self._caller, headers, scope["method"], scope["path"])
        if admin:
            return await self.app(scope, receive, send)
        if institution is None:
            buckets, wait, who = self.addresses, self.addresses.take(address), f"address {address}"
        else:
            buckets, wait, who = self.institutions, self.institutions.take((institution, address)), institution
        if not wait:
            return await self.app(scope, receive, send)
        seconds = max(1, math.ceil(wait))
        reply = JSONResponse({"detail": f"too many requests from {who} (at most {buckets.per_minute} a minute, "
                                        f"{buckets.burst} at once): retry in {seconds} s"},
                             status_code=429, headers={"Retry-After": str(seconds)})
        await reply(scope, receive, send)

    def _caller(self, headers: Headers, method: str, path: str) -> tuple[bool, str | None]:
        """Whether the request carries the admin token, and the registered institution that signed it."""
        if "authorization" in headers:
            try:
                check_admin_authorization(headers["authorization"], self.state.admin_token_sha256())
                return True, None
            except AuthError:
                pass
        if INSTITUTION_HEADER not in headers:
            return False, None
        try:
            return False, signer(self.state, SignedRequest(
                headers[INSTITUTION_HEADER], headers.get("host", ""), method, path, headers.get(TIMESTAMP_HEADER),
                headers.get(NONCE_HEADER), headers.get(SIGNATURE_HEADER), headers.get(CONTENT_SHA256_HEADER))).id
        except AuthError:
            return False, None
