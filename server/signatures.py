"""Who signed an institution request (docs/server.md, Signed institution requests): the
registered institution whose key verifies the request's signature, or nobody. Both the rate
limits (server/limits.py), which count a request against an institution only once it proves to
be that institution's, and the routes' dependencies (server/deps.py), which also record its
nonce, ask here."""

from __future__ import annotations

import dataclasses

from deidpool.server.auth import check_signed_request, load_ed25519_public_key
from deidpool.server.database import Institution
from deidpool.server.state import ServerState

MAX_INSTITUTION_CHARS = 64  # the longest id an institution can be registered with


@dataclasses.dataclass(frozen=True)
class SignedRequest:
    """What a signed institution request's signature covers, and the signature."""

    institution: str
    host: str
    method: str
    path: str
    timestamp: str | None
    nonce: str | None
    signature: str | None
    content_sha256: str | None = None


def signer(state: ServerState, request: SignedRequest) -> Institution:
    """The registered institution whose signature `request` carries (its nonce is not looked at);
    AuthError saying why not."""
    row = None
    if 0 < len(request.institution) <= MAX_INSTITUTION_CHARS:
        with state.sessions() as session:
            row = session.get(Institution, request.institution)
    key = load_ed25519_public_key(row.public_key, f"the key of {row.id}") if row is not None else None
    check_signed_request(key, request.institution, request.host, request.method, request.path, request.timestamp,
                         request.nonce, request.signature, request.content_sha256)
    return row
