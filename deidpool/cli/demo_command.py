"""`deidpool demo`: the end-to-end federated run (provider, server, three institutions) on this machine."""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from deidpool.cli.runtime import start_tensorflow


def demo(
    data: Path | None = typer.Option(None, "--data", help="Annotated notes with provider/site_a/site_b/site_c/test "
                                                          "splits (e.g. ../shared/data/physionet-deid); default: "
                                                          "synthetic notes."),
    fmt: str | None = typer.Option(None, "--format", help="Format of --data (physionet reads splits.json)."),
    out: Path = typer.Option(Path("demo-run"), "--out", help="New or empty output folder."),
    seed: int = typer.Option(0, "--seed", help="Random seed of data, weights and splits."),
    tiny: bool = typer.Option(False, "--tiny", help="Tiny models and a few notes: a smoke run of every stage."),
) -> None:
    """Play every role of a federated run and write report.html: the provider trains, audits and
    publishes a representer; a pooling server starts; three institutions export and upload;
    the server trains the pooled tagger; an institution de-identifies the test notes."""
    start_tensorflow()

    import dataclasses

    from deidpool.demo import DemoError, DemoSettings, run_demo
    from deidpool.report import format_summary

    logging.basicConfig(format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("deidpool").setLevel(logging.INFO)
    settings = dataclasses.replace(DemoSettings.tiny() if tiny else DemoSettings(), seed=seed)
    try:
        summary = run_demo(out, data, fmt, settings, progress=True)
    except DemoError as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    typer.echo(format_summary(summary))
    typer.echo(f"report: {out / 'report.html'}")
