"""The service itself: whether it answers, and the server's public keys."""

from __future__ import annotations

from deidpool.representer import keys
from deidpool.server.deps import StateDep
from deidpool.server.routes.routers import api_router
from deidpool.server.views import Fingerprints, Health, ServerKeys

router = api_router("/api")


@router.get("/health")
def health() -> Health:
    return Health(status="ok")


@router.get("/keys")
def server_keys(state: StateDep) -> ServerKeys:
    """The server's public keys: contributions are encrypted to the first, pipelines signed by the second."""
    layout = state.layout
    encryption = keys.load_public_key(layout.encryption_public_key, keys.ENCRYPTION)
    signing = keys.load_public_key(layout.signing_public_key, keys.SIGNING)
    return ServerKeys(encryption_public_key=layout.encryption_public_key.read_text(),
                      signing_public_key=layout.signing_public_key.read_text(),
                      fingerprints=Fingerprints(encryption=keys.fingerprint(encryption),
                                                signing=keys.fingerprint(signing),
                                                provider=state.settings.provider_fingerprint))
