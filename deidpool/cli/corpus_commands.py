"""`deidpool corpus ...` and `deidpool evaluate`: the corpus layer on the command line."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import typer

from deidpool.cli.groups import command_group
from deidpool.corpus.categories import markdown_table
from deidpool.corpus.document import Document
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.formats import FORMATS, read_corpus, write_corpus

corpus_app = command_group("Read, convert, generate and describe annotated notes.")


@contextlib.contextmanager
def clean_errors() -> Iterator[None]:
    """Turn bad-input errors into one clear line on stderr and exit status 2."""
    try:
        yield
    except CorpusError as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None


def notes_language(documents: Iterable[Document]) -> str:
    """The language `detect_language` finds in `documents`, said on the terminal (for commands
    whose --language the user left out)."""
    from deidpool.corpus.language import LanguageError, detect_language

    try:
        found = detect_language(document.text for document in documents)
    except LanguageError as error:
        raise typer.BadParameter(str(error), param_hint="--language") from None
    typer.echo(f"the notes are in {found} (detected; --language names it)")
    return found


@corpus_app.command("categories")
def categories() -> None:
    """Print the table mapping every source PHI type to its i2b2 category/type and HIPAA flag."""
    typer.echo(markdown_table())


def evaluate(
    gold: Path = typer.Argument(..., help="Gold-standard file or folder."),
    pred: Path = typer.Argument(..., help="Predicted file or folder."),
    fmt: str = typer.Option(..., "--format", help="Format of GOLD, and of PRED unless --pred-format is given."),
    pred_format: str | None = typer.Option(None, "--pred-format", help="Format of PRED."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of the table."),
) -> None:
    """Score predicted PHI against gold PHI: token-level binary HIPAA and all-PHI with the official
    i2b2 2014 tokens and HIPAA types (primary) and with the project's tokenizer, entity strict and
    relaxed, each F1 with its 95% bootstrap interval over the notes. Overlapping predicted spans are
    scored as the official script scores them, with a warning."""
    from deidpool.corpus.metrics import evaluate_corpus, format_report

    with clean_errors():
        result = evaluate_corpus(read_corpus(gold, fmt), read_corpus(pred, pred_format or fmt, overlaps=True))
    typer.echo(json.dumps(result, indent=2) if as_json else format_report(result))


@corpus_app.command("synth")
def synth(
    out: Path = typer.Argument(..., help="Output file or folder (as the format needs)."),
    notes: int = typer.Option(200, "--notes", min=1, help="Number of notes to generate."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same corpus."),
    fmt: str = typer.Option("i2b2", "--format", help="Output format."),
) -> None:
    """Generate synthetic English clinical notes with surrogate PHI of every i2b2 2014 type."""
    from deidpool.corpus.synth import generate_documents

    with clean_errors():
        documents = list(generate_documents(notes, seed=seed))
        write_corpus(documents, out, fmt, replace=True)
    typer.echo(f"wrote {len(documents)} documents, {sum(len(d.spans) for d in documents)} spans to {out}")


@corpus_app.command("convert")
def convert(
    source: Path = typer.Argument(..., help="Input file or folder (as --from needs)."),
    out: Path = typer.Argument(..., help="Output file or folder (as --to needs); replaced only once complete."),
    from_format: str = typer.Option(..., "--from", help="Input format: i2b2, meddocan, brat, physionet, conll, json."),
    to_format: str = typer.Option(..., "--to", help="Output format (same choices)."),
    split: str | None = typer.Option(None, "--split", help="Read only this named split (the nearest "
                                                        "splits.json: PhysioNet, MEDDOCAN)."),
    strict: bool = typer.Option(False, "--strict", help="Treat suspicious input (warnings) as errors."),
) -> None:
    """Convert annotated notes from one format to another."""
    with clean_errors():
        documents = read_corpus(source, from_format, split=split, strict=strict)
        write_corpus(documents, out, to_format, replace=True)
    typer.echo(f"wrote {len(documents)} documents, {sum(len(d.spans) for d in documents)} spans to {out} ({to_format})")


@corpus_app.command("stats")
def stats(
    source: Path = typer.Argument(..., help="Input file or folder (as --format needs)."),
    fmt: str = typer.Option(..., "--format", help=f"Input format: {', '.join(FORMATS)}."),
    split: str | None = typer.Option(None, "--split", help="Read only this named split (the nearest "
                                                        "splits.json: PhysioNet, MEDDOCAN)."),
    embeddings: str = typer.Option("glove", "--embeddings", help="Embeddings for the OOV rate (glove, fasttext:PATH, "
                                   "word2vec:PATH, glove-text:PATH) or 'none'."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of the tables."),
) -> None:
    """Describe a corpus: documents, sentences, tokens, PHI spans per category, OOV rate."""
    from deidpool.corpus.stats import corpus_stats, format_stats

    is_known = None
    if embeddings != "none":
        from deidpool.representer.embeddings import load_embeddings

        try:
            is_known = load_embeddings(embeddings).is_known
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--embeddings") from None
    with clean_errors():
        result = corpus_stats(read_corpus(source, fmt, split=split), is_known)
    typer.echo(json.dumps(result, indent=2) if as_json else format_stats(result))
