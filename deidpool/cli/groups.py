"""Every `deidpool` command group is built here, one way: help shown as written."""

import typer


def command_group(help: str) -> typer.Typer:
    """A command group that prints its commands' help as plain text, not Rich markup: square
    brackets stay ("[models/tagger.keras]" was swallowed as a markup tag) and a docstring's line
    breaks no longer cut the group's command list mid-sentence. No arguments: its help."""
    return typer.Typer(no_args_is_help=True, rich_markup_mode=None, help=help)
