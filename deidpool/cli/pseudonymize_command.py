"""`deidpool pseudonymize`: write a corpus with every PHI token moved to an embedding neighbour."""

from __future__ import annotations

import random
from pathlib import Path

import typer

from deidpool.cli.corpus_commands import clean_errors
from deidpool.corpus.formats import iter_corpus, write_corpus


def pseudonymize(
    source: Path = typer.Argument(..., help="Annotated notes (file or folder, as --format needs)."),
    out: Path = typer.Argument(..., help="Output file or folder; replaced only once complete."),
    fmt: str = typer.Option(..., "--format", help="Input format."),
    to_format: str | None = typer.Option(None, "--to", help="Output format (default: the input format)."),
    neighbours: int = typer.Option(100, "--neighbours", "-n", min=1,
                                   help="N: pick among the N nearest neighbours (itself included)."),
    embeddings: str = typer.Option("glove", "--embeddings",
                                   help="glove, fasttext:PATH, word2vec:PATH or glove-text:PATH."),
    split: str | None = typer.Option(None, "--split", help="Read only this named split (the nearest "
                                                        "splits.json: PhysioNet, MEDDOCAN)."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the replacements."),
) -> None:
    """Replace every PHI token with a letter or digit by a random one of its N nearest embedding
    neighbours (a word the embeddings do not know: one of its category's stand-in's)."""
    from deidpool.adversary.pseudonymize import Pseudonymizer
    from deidpool.representer.embeddings import load_embeddings
    from deidpool.representer.progress import progress_bar

    try:
        pseudonymizer = Pseudonymizer(load_embeddings(embeddings), neighbours)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--embeddings") from None
    rng = random.Random(seed)
    with clean_errors():
        documents = [pseudonymizer.document(d, rng)
                     for d in progress_bar(iter_corpus(source, fmt, split=split), desc="pseudonymizing", unit="doc")]
        write_corpus(documents, out, to_format or fmt)
    typer.echo(f"wrote {len(documents)} pseudonymized documents (N={neighbours}) to {out}")
