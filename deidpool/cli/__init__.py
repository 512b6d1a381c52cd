"""The `deidpool` command: one Typer app dispatching to every package's commands."""

import warnings

import typer

from deidpool.cli import corpus_commands, pseudonymize_command

app = typer.Typer(no_args_is_help=True, help="Privacy-preserving pooling of de-identification training data.")
app.add_typer(corpus_commands.corpus_app, name="corpus")
app.command("evaluate")(corpus_commands.evaluate)
app.command("pseudonymize")(pseudonymize_command.pseudonymize)


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"warning: {message}\n"


warnings.formatwarning = _one_line_warning
