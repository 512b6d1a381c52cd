"""`deidpool pseudonymize`: write a corpus with every PHI token replaced as an export replaces it
(an embedding neighbour, a member of its group, or a realistic surrogate of its type)."""

from __future__ import annotations

import random
from pathlib import Path

import typer

from deidpool.cli.corpus_commands import clean_errors, notes_language
from deidpool.corpus.formats import iter_corpus, write_corpus
from deidpool.pseudonymization.schemes import EXPORT_SCHEME


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
    seed: int | None = typer.Option(None, "--seed", help="Draw the replacements from this seed instead of the "
                                                       "operating system's randomness: for tests only, as anyone "
                                                       "who knows or guesses the seed replays the draws and learns "
                                                       "the originals a redraw skipped."),
    pseudonymization: str = typer.Option(EXPORT_SCHEME, "--pseudonymization",
                                         help="surrogates, groups or neighbours (the paper's baseline), as `client "
                                              "export --pseudonymization`; N does not apply to surrogates."),
    language: str | None = typer.Option(None, "--language", help="Language of the notes' surrogates: en or es "
                                                                  "(default: detected from the notes)."),
) -> None:
    """Replace every PHI token with a letter or digit as an export does: by default a realistic
    value of its type and shape; with --pseudonymization groups a member of its group, with
    neighbours a random one of its N nearest embedding neighbours (a word the embeddings do not
    know: one of its category's stand-in's)."""
    from deidpool.pseudonymization.pseudonymize import Pseudonymizer
    from deidpool.pseudonymization.schemes import SCHEMES
    from deidpool.representer.embeddings import load_embeddings
    from deidpool.representer.progress import progress_bar

    with clean_errors():
        language = language or notes_language(iter_corpus(source, fmt, split=split))
    if pseudonymization not in SCHEMES:
        raise typer.BadParameter(f"choose one of {', '.join(SCHEMES)}", param_hint="--pseudonymization")
    try:
        vectors = load_embeddings(embeddings)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--embeddings") from None
    try:
        pseudonymizer = Pseudonymizer(vectors, neighbours, pseudonymization, language)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--language") from None
    if seed is None:
        rng = random.SystemRandom()
    else:
        typer.echo(f"warning: --seed {seed} makes the replacements replayable; never share this output", err=True)
        rng = random.Random(seed)
    with clean_errors():
        documents = [pseudonymizer.document(d, rng)
                     for d in progress_bar(iter_corpus(source, fmt, split=split), desc="pseudonymizing", unit="doc")]
        write_corpus(documents, out, to_format or fmt, replace=True)
    among = "surrogates" if pseudonymization == "surrogates" else f"N={neighbours} {pseudonymization}"
    typer.echo(f"wrote {len(documents)} pseudonymized documents ({among}) to {out}")
