"""`--time-budget` for the long commands: train in chunks of processes that each stop cleanly
after the last epoch that fits and exit with a status that says "resumable"."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

TIME_BUDGET = typer.Option(None, "--time-budget", min=1.0,
                           help="Seconds this process may train: stop after the last epoch that fits and exit with "
                                "status 75 (resumable); the same command run again resumes from the checkpoints.")


@contextlib.contextmanager
def within_budget(seconds: float | None) -> Iterator[None]:
    """Run the block under `deidpool.representer.training.time_budget`; when the budget runs out, say
    so on stderr and exit with `RESUMABLE_EXIT_STATUS`."""
    from deidpool.representer.training import RESUMABLE_EXIT_STATUS, TimeBudgetExhausted, time_budget

    try:
        with time_budget(seconds):
            yield
    except TimeBudgetExhausted as stopped:
        typer.secho(f"resumable: {stopped}", fg=typer.colors.YELLOW, err=True)
        raise typer.Exit(RESUMABLE_EXIT_STATUS) from None
