"""`deidpool corpus ...` and `deidpool evaluate`: the corpus layer on the command line."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

from corpus.categories import markdown_table
from corpus.errors import CorpusError

corpus_app = typer.Typer(no_args_is_help=True, help="Read, convert, generate and describe annotated notes.")


@contextlib.contextmanager
def clean_errors() -> Iterator[None]:
    """Turn bad-input errors into one clear line on stderr and exit status 2."""
    try:
        yield
    except CorpusError as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None


@corpus_app.command("categories")
def categories() -> None:
    """Print the table mapping every source PHI type to its i2b2 category/type and HIPAA flag."""
    typer.echo(markdown_table())
