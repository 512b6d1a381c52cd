"""`deidpool coordinator ...`: the coordinator's administration of a pooling server over its
HTTP API (institutions, the current representer, pooled training runs, audits, publication).
The admin token comes from --token or $DEIDPOOL_ADMIN_TOKEN and is never printed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from deidpool.cli.client_commands import clean_errors, private_key
from deidpool.cli.groups import command_group
from deidpool.cli.http import ALLOW_INSECURE_HTTP_HELP, ServerConnection
from deidpool.client.server_url import ALLOW_INSECURE_HTTP
from deidpool.representer import keys

TOKEN_ENV = "DEIDPOOL_ADMIN_TOKEN"
FINISHED = ("succeeded", "failed")

coordinator_app = command_group("The coordinator: institutions, representer, pooled "
                                                         "training runs, audits and publication on a pooling server.")

Server = Annotated[str, typer.Option("--server", help="The pooling server's base URL, e.g. https://pool.example.org "
                                                     "or http://127.0.0.1:8000.")]
Insecure = Annotated[bool, typer.Option(ALLOW_INSECURE_HTTP, help=ALLOW_INSECURE_HTTP_HELP)]
Token = Annotated[str, typer.Option("--token", envvar=TOKEN_ENV, show_default=False,
                                    help=f"The admin token (better: set ${TOKEN_ENV}).")]


@coordinator_app.command("register")
def register(
    server: Server, token: Token,
    institution: str = typer.Option(..., "--institution", help="The institution id its contributions carry."),
    public_key: Path = typer.Option(..., "--public-key", help="The institution's public key (institution.pub)."),
    insecure: Insecure = False,
) -> None:
    """Register an institution and its public key."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        keys.load_public_key(public_key, keys.SIGNING)
        row = connection.call("POST", "/api/institutions", json={"id": institution,
                                                                 "public_key": public_key.read_text()})
    typer.echo(f"registered {row['id']} (key {row['fingerprint']})")


@coordinator_app.command("disable")
def disable(institution: Annotated[str, typer.Argument(help="Institution id.")], server: Server, token: Token,
            insecure: Insecure = False) -> None:
    """Refuse an institution's uploads from now on."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        connection.call("POST", f"/api/institutions/{institution}/disable")
    typer.echo(f"disabled {institution}")


@coordinator_app.command("enable")
def enable(institution: Annotated[str, typer.Argument(help="Institution id.")], server: Server, token: Token,
           insecure: Insecure = False) -> None:
    """Accept an institution's uploads again."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        connection.call("POST", f"/api/institutions/{institution}/enable")
    typer.echo(f"enabled {institution}")


@coordinator_app.command("contributions")
def contributions(institution: Annotated[str, typer.Argument(help="Institution id.")], server: Server,
                  token: Token, insecure: Insecure = False) -> None:
    """List an institution's stored contributions (metadata only), quarantined ones marked."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        rows = connection.call("GET", f"/api/contributions/of/{institution}")
    for row in rows:
        typer.echo(f"{row['sha256']}  {row['received']}  {row['sentences']:>7} sentences  {row['representer_id']}"
                   + ("  QUARANTINED" if row["quarantined"] else ""))
    typer.echo(f"{len(rows)} contributions")


@coordinator_app.command("quarantine")
def quarantine(sha256: Annotated[str, typer.Argument(help="The contribution's SHA-256.")], server: Server,
               token: Token, release: bool = typer.Option(False, "--release", help="Let it back into runs."),
               insecure: Insecure = False) -> None:
    """Hold a contribution out of the training runs queued from now on (or, with --release, let it back in)."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        connection.call("POST", f"/api/contributions/{sha256}/{'release' if release else 'quarantine'}")
    typer.echo(f"{'released' if release else 'quarantined'} {sha256}")


@coordinator_app.command("set-representer")
def set_representer(bundle: Annotated[Path, typer.Argument(help="The provider-signed representer bundle (.tar).")],
                    server: Server, token: Token, insecure: Insecure = False) -> None:
    """Upload a representer bundle and make it the one contributions must be made with."""
    if not bundle.is_file():
        raise typer.BadParameter(f"{bundle} is not a file (a bundle .tar)", param_hint="BUNDLE")
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        row = connection.call("POST", "/api/representers", file=bundle, content_type="application/x-tar")
    typer.echo(f"current representer: {row['representer_id']}")


@coordinator_app.command("start-run")
def start_run(
    server: Server, token: Token,
    max_epochs: int = typer.Option(30, "--max-epochs", min=1),
    patience: int = typer.Option(5, "--patience", min=1, help="Stop after this many epochs without improvement."),
    seed: int = typer.Option(0, "--seed", min=0),
    valid_fraction: float = typer.Option(0.1, "--valid-fraction", min=0.0, max=1.0,
                                         help="Share of each institution's sentences held out for validation."),
    monitor: str = typer.Option("val_loss", "--monitor", help="What early stopping and the kept epoch go by: "
                                                              "val_loss (validation loss), val_f1 (validation PHI F1: "
                                                              "PHI tokens found) or val_tag_f1 (their type and B/I "
                                                              "right too)."),
    lstm_units: int = typer.Option(128, "--lstm-units", min=1, max=1024,
                                   help="LSTM units per direction of each of the pooled tagger's two layers."),
    insecure: Insecure = False,
) -> None:
    """Queue a pooled training run over the contributions of the current representer (but those of disabled
    institutions and those in quarantine); prints its id."""
    config = {"max_epochs": max_epochs, "patience": patience, "seed": seed, "valid_fraction": valid_fraction,
              "monitor": monitor, "lstm_units": lstm_units}
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        run = connection.call("POST", "/api/runs", json=config)
    typer.echo(run["id"])


def _summary(run: dict) -> str:
    line = (f"run {run['id']}: {run['status']}, epoch {run['epochs_done']}/{run['config'].get('max_epochs', '?')}, "
            f"{run['contributions']} contributions")
    if run["epochs"]:
        last = run["epochs"][-1]
        line += "".join(f", {name} {last[name]:.4f}" for name in ("val_loss", "val_phi_f1")
                        if isinstance(last.get(name), (int, float)))
    return line + (f" - {run['error']}" if run["error"] else "")


@coordinator_app.command("runs")
def runs(server: Server, token: Token, insecure: Insecure = False) -> None:
    """List the pooled training runs."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        for run in connection.call("GET", "/api/runs"):
            typer.echo(_summary(run))


@coordinator_app.command("run")
def run(run_id: Annotated[int, typer.Argument(help="Training run id.")], server: Server, token: Token,
        insecure: Insecure = False) -> None:
    """A run's status and its epochs' metrics."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        details = connection.call("GET", f"/api/runs/{run_id}")
    typer.echo(_summary(details))
    for epoch in details["epochs"]:
        typer.echo("  " + ", ".join(f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"
                                    for name, value in epoch.items()))


@coordinator_app.command("wait-run")
def wait_run(run_id: Annotated[int, typer.Argument(help="Training run id.")], server: Server, token: Token,
             interval: float = typer.Option(5.0, "--interval", min=0.1, help="Seconds between polls."),
             insecure: Insecure = False) -> None:
    """Wait for a run to succeed or fail, with a progress line; exit status 1 if it failed."""
    shown = None
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        while True:
            details = connection.call("GET", f"/api/runs/{run_id}")
            if _summary(details) != shown:
                shown = _summary(details)
                typer.echo(shown)
            if details["status"] in FINISHED:
                break
            time.sleep(interval)
    if details["status"] == "failed":
        raise typer.Exit(1)


@coordinator_app.command("publish")
def publish(run_id: Annotated[int, typer.Argument(help="A succeeded training run id.")], server: Server, token: Token,
            override_audit: bool = typer.Option(False, "--override-audit", help="Publish although the representer "
                                                "has no export-path audit with verdict "
                                                "\"consistent with chance\"."),
            ensemble_with: list[int] = typer.Option([], "--ensemble-with", metavar="RUN_ID",
                                                    help="Another succeeded run of the same representer (e.g. "
                                                         "another seed) whose tagger joins a seed ensemble; "
                                                         "repeatable."),
            insecure: Insecure = False) -> None:
    """Publish a succeeded run (or a seed ensemble of runs) as a server-signed pipeline."""
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        pipeline = connection.call("POST", f"/api/runs/{run_id}/publish",
                                   json={"override_audit": override_audit, "ensemble_with": ensemble_with})
    runs = ", ".join(map(str, [run_id, *ensemble_with]))
    typer.echo(f"published pipeline {pipeline['id']} of run{'s' if ensemble_with else ''} {runs} "
               f"(sha256 {pipeline['payload_sha256']})"
               + (" WITHOUT a passing audit (override)" if pipeline["audit_override"] else ""))


@coordinator_app.command("record-audit")
def record_audit(
    report_path: Annotated[Path, typer.Argument(help="The audit report (metrics.json of `deidpool audit`).")],
    server: Server, token: Token,
    key: Path = typer.Option(..., "--key", help="The signer's Ed25519 private key (e.g. provider.key)."),
    representer: str | None = typer.Option(None, "--representer", help="The audited representer id, when the "
                                                                        "report does not name it (default: current)."),
    insecure: Insecure = False,
) -> None:
    """Sign an audit report and record it for its representer."""
    from deidpool.server.auth import signed_audit

    try:
        report = json.loads(report_path.read_text())
    except (OSError, ValueError) as error:
        raise typer.BadParameter(f"cannot read {report_path} as JSON: {error}", param_hint="REPORT") from None
    if not isinstance(report, dict):
        raise typer.BadParameter(f"{report_path} does not hold a JSON object", param_hint="REPORT")
    if representer and report.setdefault("representer_id", representer) != representer:
        raise typer.BadParameter(f"the report audits {report['representer_id']}, not {representer}",
                                 param_hint="--representer")
    with clean_errors(), ServerConnection(server, token, allow_insecure_http=insecure) as connection:
        if "representer_id" not in report:
            report["representer_id"] = connection.call("GET", "/api/representers/current")["representer_id"]
        audit = connection.call("POST", "/api/audits", json=signed_audit(report, private_key(key, keys.SIGNING)))
    typer.echo(f"recorded audit {audit['id']} of {audit['representer_id']}: {audit['verdict']} "
               f"(signed by {audit['signer_fingerprint']})")
