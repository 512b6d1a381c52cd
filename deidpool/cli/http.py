"""The pooling server as the coordinator and client commands reach it over HTTP: JSON calls,
file uploads and downloads, and the server's refusals as one clear `ServerError` (carrying
its `{"detail"}`, never the credentials sent). A server beyond this machine must be https://
unless the user passes --allow-insecure-http (`checked_server_url`). httpx is imported on first
use, so the commands that make no request do not wait for it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from deidpool.client import server_url

if TYPE_CHECKING:
    import httpx

TIMEOUT_SECONDS = 60.0
CHUNK_BYTES = 1 << 20
ALLOW_INSECURE_HTTP_HELP = ("Reach a server beyond this machine over plain http://: the admin token, contributions "
                            "and the server's keys then travel unencrypted and unauthenticated. Without it such a "
                            "server must be https:// (http:// is for 127.0.0.0/8, ::1 and localhost).")


class ServerError(RuntimeError):
    """The server refused a request or could not be reached."""


def checked_server_url(server: str, allow_insecure_http: bool = False) -> str:
    """`deidpool.client.server_url.checked_server_url`, its refusal a ServerError."""
    try:
        return server_url.checked_server_url(server, allow_insecure_http)
    except server_url.ServerURLError as error:
        raise ServerError(str(error)) from None


def httpx_client(server: str) -> httpx.Client:
    """The HTTP client for `server` (tests substitute one talking to an app in process)."""
    import httpx

    return httpx.Client(base_url=server, timeout=TIMEOUT_SECONDS)


class ServerConnection:
    """Calls to the server at `server`, as the admin when `token` is given (`checked_server_url`
    refuses plain http:// beyond this machine unless `allow_insecure_http`)."""

    def __init__(self, server: str, token: str | None = None, *, allow_insecure_http: bool = False):
        self.server = checked_server_url(server, allow_insecure_http).rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx_client(self.server)

    def __enter__(self) -> ServerConnection:
        return self

    def __exit__(self, *exc_info) -> None:
        self._client.close()

    def call(self, method: str, path: str, *, json=None, headers: dict | None = None, file: Path | None = None,
             content_type: str = "application/octet-stream"):
        """The JSON answer of `method path` with a `json` body or the bytes of `file`."""
        import httpx

        headers = {**self._headers, **(headers or {})}
        options: dict = {"json": json}
        if file is not None:
            headers.update({"Content-Type": content_type, "Content-Length": str(file.stat().st_size)})
            options = {"content": _blocks(file)}
        try:
            response = self._client.request(method, path, headers=headers, **options)
        except httpx.HTTPError as error:
            raise ServerError(f"cannot reach {self.server}{path}: {error}") from None
        _check(response, method, self.server + path)
        return response.json() if response.content else None

    def download(self, path: str, out: Path) -> None:
        """Stream `path` to the new file `out` (complete or absent)."""
        import httpx

        if out.exists():
            raise ServerError(f"{out} already exists; refusing to overwrite it")
        out.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
        try:
            with os.fdopen(descriptor, "wb") as file, self._client.stream("GET", path, headers=self._headers) as reply:
                if reply.is_error:
                    reply.read()
                _check(reply, "GET", self.server + path)
                for block in reply.iter_bytes(CHUNK_BYTES):
                    file.write(block)
            os.replace(temporary, out)
        except httpx.HTTPError as error:
            raise ServerError(f"cannot download {self.server}{path}: {error}") from None
        finally:
            Path(temporary).unlink(missing_ok=True)


def _check(response: httpx.Response, method: str, url: str) -> None:
    if response.is_success:
        return
    try:
        detail = response.json()["detail"]
    except (ValueError, KeyError, TypeError):
        detail = response.text.strip()[:500] or response.reason_phrase
    raise ServerError(f"{method} {url} answered {response.status_code}: {detail}")


def _blocks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as file:
        while block := file.read(CHUNK_BYTES):
            yield block
