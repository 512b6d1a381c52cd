"""Where a client may send credentials and contributions: a pooling server reached over
https://, or over plain http:// only on this machine (127.0.0.0/8, ::1, localhost) unless the
caller explicitly accepts an unencrypted, unauthenticated connection (`--allow-insecure-http`)."""

from __future__ import annotations

import ipaddress
import urllib.parse

ALLOW_INSECURE_HTTP = "--allow-insecure-http"


class ServerURLError(ValueError):
    """A server URL the client refuses; the message names it and what to do."""


def checked_server_url(server: str, allow_insecure_http: bool = False) -> str:
    """`server` if it is https://, or http:// to this machine or with `allow_insecure_http`;
    ServerURLError naming it and the option otherwise."""
    url = urllib.parse.urlsplit(server)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ServerURLError(f"{server} is not a server URL: give https://host[:port] (or http:// on this machine)")
    if url.scheme == "http" and not (allow_insecure_http or _loopback(url.hostname)):
        raise ServerURLError(f"{server}: plain http:// beyond this machine sends tokens, contributions and the "
                             f"server's keys unencrypted, for anyone on the way to read or change; use https:// (the "
                             f"server behind a TLS reverse proxy) or pass {ALLOW_INSECURE_HTTP}")
    return server


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
