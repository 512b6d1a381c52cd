"""`deidpool server ...`: create a pooling server's data directory, replace its tokens, run the
server (with its worker beside it), or run a worker alone."""

from __future__ import annotations

import enum
import signal
import subprocess
import sys
from pathlib import Path

import typer

from deidpool.cli.client_commands import clean_errors
from deidpool.cli.groups import command_group
from deidpool.cli.runtime import start_tensorflow

server_app = command_group("The pooling server: data directory, HTTP API, training worker.")

_DATA_DIR_HELP = "The server's data directory (created by `deidpool server init`)."
_LOG_FORMAT_HELP = ("Log lines as plain text, or one JSON object per line (time, level, logger, message, request "
                    "fields).")
_PR_SET_PDEATHSIG = 1


class LogFormat(str, enum.Enum):  # deidpool.server.logs.FORMATS, without importing the server here
    text = "text"
    json = "json"


KEEP_ALIVE_SECONDS = 30
"""How long an idle client connection stays open: longer than httpx's pool keeps one (5 s), so a
request the client sends on a pooled connection never meets the server closing it (Uvicorn's
default is 5 s too: a request sent 5 s after the last one could find the connection gone)."""


def _log_format_option():
    return typer.Option(LogFormat.text, "--log-format", envvar="DEIDPOOL_LOG_FORMAT", help=_LOG_FORMAT_HELP)


def _end_with_parent() -> None:
    """In the worker, before it starts: Linux sends it SIGTERM when the server process ends,
    however it ends (Uvicorn re-raises the signal that stopped it, so no `finally` runs)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@server_app.command("init")
def init(
    data_dir: Path = typer.Option(..., "--data-dir", help="The data directory to create."),
    provider_key: Path = typer.Option(..., "--provider-key", help="The provider's public key (provider.pub) that "
                                                                  "representer bundles must be signed with."),
    force: bool = typer.Option(False, "--force", help="Re-initialize an existing data directory: pin this provider "
                                                      "key and replace the admin token; keys and data stay."),
) -> None:
    """Create the server's keys, settings and database, and print the admin token once."""
    from deidpool.server.initialize import init_data_dir
    from deidpool.server.settings import Layout

    with clean_errors():
        token = init_data_dir(data_dir, provider_key, force)
    layout = Layout(data_dir)
    typer.echo(f"initialized {data_dir}: contributions are encrypted to {layout.encryption_public_key}, "
               f"pipelines signed with {layout.signing_public_key}")
    _echo_admin_token(token)


@server_app.command("rotate-admin-token")
def rotate_admin_token(data_dir: Path = typer.Option(..., "--data-dir", help=_DATA_DIR_HELP)) -> None:
    """Replace the admin token and print the new one once; a running server refuses the old one at once."""
    from deidpool.server.initialize import rotate_admin_token

    with clean_errors():
        token = rotate_admin_token(data_dir)
    _echo_admin_token(token)


@server_app.command("rotate-viewer-token")
def rotate_viewer_token(data_dir: Path = typer.Option(..., "--data-dir", help=_DATA_DIR_HELP)) -> None:
    """Create or replace the dashboard's read-only viewer token and print it once; a running server
    refuses the old one at once. It opens the dashboard only, never an API route."""
    from deidpool.server.initialize import rotate_viewer_token

    with clean_errors():
        token = rotate_viewer_token(data_dir)
    _echo_token("viewer", token, "for those who may read the dashboard: a browser asks for it as the password, with "
                                "any user name")


@server_app.command("rotate-metrics-token")
def rotate_metrics_token(data_dir: Path = typer.Option(..., "--data-dir", help=_DATA_DIR_HELP)) -> None:
    """Create or replace the token Prometheus reads /metrics with and print it once; a running server
    refuses the old one at once. It opens /metrics only, never an API route or the dashboard."""
    from deidpool.server.initialize import rotate_metrics_token

    with clean_errors():
        token = rotate_metrics_token(data_dir)
    _echo_token("metrics", token, "in the file of Prometheus's scrape config `authorization: credentials_file`")


def _echo_admin_token(token: str) -> None:
    _echo_token("admin", token, "e.g. in a password manager, or DEIDPOOL_ADMIN_TOKEN")


def _echo_token(kind: str, token: str, where: str) -> None:
    typer.echo(f"{kind} token: {token}")
    typer.secho(f"Store the {kind} token now ({where}): it is shown only once, and the server keeps only its hash.",
                fg=typer.colors.YELLOW, err=True)


@server_app.command("run")
def run(
    data_dir: Path = typer.Option(..., "--data-dir", help=_DATA_DIR_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="Port to listen on."),
    worker: bool = typer.Option(True, "--worker/--no-worker", help="Start a training worker process beside it."),
    log_format: LogFormat = _log_format_option(),
) -> None:
    """Serve the HTTP API (OpenAPI at /docs, Prometheus metrics at /metrics) with Uvicorn."""
    import logging

    import uvicorn

    from deidpool.server.app import create_app
    from deidpool.server.logs import configure_logging

    configure_logging(log_format.value)
    with clean_errors():
        app = create_app(data_dir)
    process = None
    if worker:
        process = subprocess.Popen([sys.executable, "-m", "deidpool", "server", "worker", "--data-dir", str(data_dir),
                                    "--log-format", log_format.value],
                                   preexec_fn=_end_with_parent if sys.platform == "linux" else None)
        logging.getLogger("deidpool.server").info("started training worker (pid %d)", process.pid)
    try:  # logging as configured above; the access lines come from deidpool.server.metrics.RequestMetrics
        uvicorn.run(app, host=host, port=port, log_config=None, access_log=False,
                    timeout_keep_alive=KEEP_ALIVE_SECONDS)
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@server_app.command("worker")
def worker(
    data_dir: Path = typer.Option(..., "--data-dir", help=_DATA_DIR_HELP),
    once: bool = typer.Option(False, "--once", help="Train at most one waiting run, then exit."),
    log_format: LogFormat = _log_format_option(),
) -> None:
    """Claim and train queued pooled training runs (resuming a crashed worker's)."""
    from deidpool.server.settings import Layout, check_private

    with clean_errors():  # before the seconds TensorFlow takes to load (run_worker checks again)
        check_private(Layout(data_dir))
    start_tensorflow()

    from deidpool.server.logs import configure_logging
    from deidpool.server.worker import run_worker

    configure_logging(log_format.value)
    with clean_errors():
        run_worker(data_dir, once=once)
