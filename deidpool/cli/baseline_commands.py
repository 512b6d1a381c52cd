"""`deidpool train crf|svm|char-lstm`: the classic non-private baselines from annotated notes to
a run directory that `deidpool predict` applies like a tagger run."""

from __future__ import annotations

from pathlib import Path

import typer

from deidpool.cli.runtime import start_tensorflow
from deidpool.cli.train_commands import train_app, training_documents

DATA = typer.Option(..., "--data", help="Annotated training notes (file or folder).")
FORMAT = typer.Option(..., "--format", help="Format of --data (and --valid-data).")
SPLIT = typer.Option(None, "--split", help="Named split(s) to train on (repeatable).")
VALID_DATA = typer.Option(None, "--valid-data", help="Validation notes (default: --data).")
VALID_SPLIT = typer.Option(None, "--valid-split", help="Named split for validation.")
VALID_FRACTION = typer.Option(0.1, "--valid-fraction", min=0.01, max=0.5,
                              help="Held-out share of the training documents when no validation set is named.")
LABEL = typer.Option("source", "--label", help="Labels: source (the corpus's own types) or type (i2b2 2014 types).")
SEED = typer.Option(0, "--seed", help="Seed of the validation hold-out (and of the network's initial weights).")
OUT = typer.Option(..., "--out", help="Run directory.")


def _train(train, *args, **options) -> dict:
    try:
        return train(*args, **options)
    except ValueError as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None


@train_app.command("crf")
def train_crf(data: Path = DATA, fmt: str = FORMAT, split: list[str] | None = SPLIT,
              valid_data: Path | None = VALID_DATA, valid_split: str | None = VALID_SPLIT,
              valid_fraction: float = VALID_FRACTION, label: str = LABEL,
              c2: list[float] | None = typer.Option(None, "--c2", help="L2 weights to choose from on the validation "
                                                    "set (repeatable; default 0.01 0.05 0.25)."),
              max_iterations: int = typer.Option(100, "--max-iterations", min=1, help="L-BFGS iterations per fit."),
              min_freq: float = typer.Option(4, "--min-freq", min=0, help="Drop features seen fewer times (CRF++ -f)."),
              seed: int = SEED, out: Path = OUT) -> None:
    """CRF with the CEGS N-GRID 2016 hand-crafted features (BIOES, L2 weight chosen on validation)."""
    start_tensorflow()

    from deidpool.baselines import crf

    train, valid = training_documents(data, fmt, split, valid_data, valid_split, valid_fraction, seed)
    metrics = _train(crf.train, train, valid, out, label=label, c2_grid=c2 or crf.C2_GRID,
                     max_iterations=max_iterations, min_freq=min_freq)
    typer.echo(f"chose c2 {metrics['c2']}: val_f1 {metrics['val_f1']:.4f}; run directory {out}")


@train_app.command("svm")
def train_svm(data: Path = DATA, fmt: str = FORMAT, split: list[str] | None = SPLIT,
              valid_data: Path | None = VALID_DATA, valid_split: str | None = VALID_SPLIT,
              valid_fraction: float = VALID_FRACTION, label: str = LABEL,
              c: list[float] | None = typer.Option(None, "--c", help="SVM C values to choose from on the validation "
                                                   "set (repeatable; default 0.3 1 3)."),
              seed: int = SEED, out: Path = OUT) -> None:
    """Linear SVM on Sibanda & Uzuner's local-context features, one class per token."""
    start_tensorflow()

    from deidpool.baselines import svm

    train, valid = training_documents(data, fmt, split, valid_data, valid_split, valid_fraction, seed)
    metrics = _train(svm.train, train, valid, out, label=label, c_grid=c or svm.C_GRID)
    typer.echo(f"chose C {metrics['C']}: val_f1 {metrics['val_f1']:.4f}; run directory {out}")


@train_app.command("char-lstm")
def train_char_lstm(data: Path = DATA, fmt: str = FORMAT, split: list[str] | None = SPLIT,
                    valid_data: Path | None = VALID_DATA, valid_split: str | None = VALID_SPLIT,
                    valid_fraction: float = VALID_FRACTION, label: str = LABEL,
                    embeddings: str = typer.Option("glove", "--embeddings",
                                                   help="glove, fasttext:PATH, word2vec:PATH or glove-text:PATH."),
                    lstm_units: int = typer.Option(100, "--lstm-units", min=1),
                    learning_rate: float = typer.Option(0.002, "--learning-rate", min=0.0),
                    max_epochs: int = typer.Option(20, "--max-epochs", min=1),
                    patience: int = typer.Option(3, "--patience", min=1),
                    seed: int = SEED,
                    out: Path = typer.Option(..., "--out", help="Run directory (rerun to resume).")) -> None:
    """Character-enhanced BiLSTM-CRF (Dernoncourt et al. 2017): word embeddings + character BiLSTM."""
    start_tensorflow()

    from deidpool.baselines import char_lstm
    from deidpool.representer.embeddings import load_embeddings

    train, valid = training_documents(data, fmt, split, valid_data, valid_split, valid_fraction, seed)
    vectors = _train(load_embeddings, embeddings)
    metrics = _train(char_lstm.train, train, valid, out, embeddings=embeddings, label=label, lstm_units=lstm_units,
                     learning_rate=learning_rate, max_epochs=max_epochs, patience=patience, seed=seed,
                     loaded_embeddings=vectors)
    typer.echo(f"best epoch {metrics['best_epoch']}: val_loss {metrics['val_loss']:.4f}, "
               f"val_f1 {metrics['val_f1']:.4f}; run directory {out}")
