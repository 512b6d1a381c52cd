"""`deidpool train tagger`, `deidpool train embeddings` and `deidpool predict`: the non-private and
pseudonymization baselines from annotated notes to a run directory, FastText embeddings trained on
notes, and a run directory applied to notes."""

from __future__ import annotations

from pathlib import Path

import typer

from deidpool.cli.budget import TIME_BUDGET, within_budget
from deidpool.cli.corpus_commands import clean_errors
from deidpool.cli.groups import command_group
from deidpool.cli.runtime import start_tensorflow
from deidpool.corpus.formats import read_corpus, write_corpus

train_app = command_group("Train de-identification models.")


def training_documents(data: Path, fmt: str, splits: list[str] | None, valid_data: Path | None,
                       valid_split: str | None, valid_fraction: float, seed: int):
    """(train, validation) documents: the validation set is read from --valid-data/--valid-split
    when given, else a seeded fraction of the training documents is held out."""
    from deidpool.representer.tagger_runs import split_documents

    with clean_errors():
        documents = [d for split in (splits or [None]) for d in read_corpus(data, fmt, split=split)]
        if valid_data is None and valid_split is None:
            return split_documents(documents, valid_fraction, seed)
        return documents, read_corpus(valid_data or data, fmt, split=valid_split)


# the training and validation notes' options of every command that trains a tagger (`training_documents`)
SPLITS = typer.Option(None, "--split", help="Named split(s) to train on (repeatable).")
VALID_DATA = typer.Option(None, "--valid-data", help="Validation notes (default: the training notes).")
VALID_SPLIT = typer.Option(None, "--valid-split", help="Named split for validation.")
VALID_FRACTION = typer.Option(0.1, "--valid-fraction", min=0.01, max=0.5,
                              help="Held-out share of the training documents when no validation set is named.")


@train_app.command("tagger")
def train_tagger(
    data: Path = typer.Option(..., "--data", help="Annotated training notes (file or folder)."),
    fmt: str = typer.Option(..., "--format", help="Format of --data (and --valid-data)."),
    split: list[str] | None = SPLITS,
    valid_data: Path | None = VALID_DATA,
    valid_split: str | None = VALID_SPLIT,
    valid_fraction: float = VALID_FRACTION,
    embeddings: str = typer.Option("glove", "--embeddings",
                                   help="glove, fasttext:PATH, word2vec:PATH or glove-text:PATH."),
    casing: bool = typer.Option(True, "--casing/--no-casing", help="Give the tagger the 7-way casing feature."),
    chars: bool = typer.Option(False, "--chars/--no-chars",
                               help="Give the tagger each token's characters too (a convolution over them)."),
    neighbours: int | None = typer.Option(None, "--neighbours", "-n", min=1,
                                          help="Pseudonymization baseline: train on PHI moved to one of N embedding "
                                               "neighbours."),
    with_originals: bool = typer.Option(False, "--with-originals",
                                        help="With -n: train on the original notes and a pseudonymized copy of each "
                                             "(augmentation)."),
    scheme: str = typer.Option("BIO", "--scheme", help="Tag scheme: BIO or BIOES."),
    label: str = typer.Option("source", "--label",
                              help="Tag labels: source (the corpus's own types) or type (i2b2 2014 types)."),
    lstm_units: int = typer.Option(128, "--lstm-units", min=1),
    max_epochs: int = typer.Option(20, "--max-epochs", min=1),
    patience: int = typer.Option(3, "--patience", min=1),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(..., "--out", help="Run directory (rerun to resume an interrupted run)."),
    time_budget: float | None = TIME_BUDGET,
) -> None:
    """Train the BiLSTM-CRF tagger on raw embeddings (non-private baseline) or on pseudonymized notes."""
    start_tensorflow()

    from deidpool.pseudonymization.pseudonymize import Pseudonymizer
    from deidpool.representer.embeddings import load_embeddings
    from deidpool.representer.tagger_runs import TaggerSettings, train_tagger_run

    train, valid = training_documents(data, fmt, split, valid_data, valid_split, valid_fraction, seed)
    with within_budget(time_budget):
        try:
            settings = TaggerSettings(embeddings=embeddings, casing=casing, chars=chars, scheme=scheme, label=label,
                                      keep_originals=with_originals, lstm_units=lstm_units, max_epochs=max_epochs,
                                      patience=patience, seed=seed)
            vectors = load_embeddings(embeddings)
            metrics = train_tagger_run(train, valid, out, settings,
                                       pseudonymizer=neighbours and Pseudonymizer(vectors, neighbours),
                                       loaded_embeddings=vectors)
        except ValueError as error:
            typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from None
    typer.echo(f"best epoch {metrics['best_epoch']}: val_loss {metrics['val_loss']:.4f}, "
               f"val_f1 {metrics['val_f1']:.4f}; run directory {out}")


@train_app.command("embeddings")
def train_embeddings(
    data: Path = typer.Option(..., "--data", help="Notes to train on (file or folder; their labels are not used)."),
    fmt: str = typer.Option(..., "--format", help="Format of --data: i2b2, meddocan, brat, physionet, conll, json."),
    split: list[str] | None = typer.Option(None, "--split", help="Named split(s) to train on (repeatable)."),
    dim: int = typer.Option(100, "--dim", min=1, help="Vector size."),
    epochs: int = typer.Option(10, "--epochs", min=1),
    min_count: int = typer.Option(3, "--min-count", min=1, help="Words rarer than this (often PHI) get no vector of "
                                                                 "their own and are embedded by their subwords."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(..., "--out", help="The FastText file to write (.bin, readable by its owner only)."),
) -> None:
    """Train FastText embeddings (gensim, subwords) on notes, for `--embeddings fasttext:OUT`.

    Its vocabulary holds the notes' frequent words, PHI among them: keep the file with the notes."""
    from deidpool.representer.embeddings import train_fasttext_on_notes

    with clean_errors():
        documents = [d for name in (split or [None]) for d in read_corpus(data, fmt, split=name)]
        try:
            sentences = train_fasttext_on_notes(documents, out, dim=dim, epochs=epochs, seed=seed, min_count=min_count)
        except ValueError as error:
            typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from None
    typer.echo(f"trained FastText ({dim} dimensions) on {sentences} sentences of {len(documents)} notes: {out} "
               f"(owner-only); use --embeddings fasttext:{out}")


def predict(
    model: Path = typer.Option(..., "--model", help="Run directory of `deidpool train tagger|crf|svm|char-lstm`."),
    notes: Path = typer.Option(..., "--notes", help="Notes to tag (file or folder; spans in them are ignored)."),
    fmt: str = typer.Option(..., "--format", help="Format of --notes (a folder of .txt files reads as brat)."),
    split: str | None = typer.Option(None, "--split", help="Named split of --notes."),
    out: Path = typer.Option(..., "--out", help="Where to write the predictions."),
    out_format: str | None = typer.Option(None, "--out-format", help="Output format (default: --format)."),
) -> None:
    """Find PHI in notes with a trained tagger (or classic baseline) and write the predicted spans."""
    start_tensorflow()

    from deidpool.baselines.runs import load_baseline, run_kind
    from deidpool.representer.tagger_runs import load_tagger_run, predict_documents

    try:
        if run_kind(model) is not None:
            predict = load_baseline(model).predict_documents
        else:
            tagger, config, vectors = load_tagger_run(model)
            predict = lambda documents: predict_documents(tagger, config, vectors, documents)  # noqa: E731
    except ValueError as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None
    with clean_errors():
        documents = read_corpus(notes, fmt, split=split)
        predicted = predict(documents)
        write_corpus(predicted, out, out_format or fmt, replace=True)
    typer.echo(f"wrote {sum(len(d.spans) for d in predicted)} predicted spans in {len(predicted)} documents to {out}")
