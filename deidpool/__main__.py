"""`python -m deidpool`: the `deidpool` command."""

from deidpool.cli import app

app()
