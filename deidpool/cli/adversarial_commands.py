"""`deidpool train adversarial|dann` (a shareable representer trained against the adversaries)
and `deidpool audit` (attacks on a frozen representer, with positive controls)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import typer

from deidpool.adversary.verdicts import HELD_OUT_DRAWS
from deidpool.cli.budget import TIME_BUDGET, within_budget
from deidpool.cli.runtime import start_tensorflow
from deidpool.cli.train_commands import training_documents
from deidpool.corpus.errors import CorpusError
from deidpool.pseudonymization.schemes import EXPORT_SCHEME, SCHEMES

_DATA = typer.Option(..., "--data", help="Annotated notes (file or folder, as --format needs).")
_FORMAT = typer.Option(..., "--format", help="Format of --data.")
_SPLITS = typer.Option(None, "--split", help="Read only these named splits (repeatable; PhysioNet splits.json).")
_EMBEDDINGS = typer.Option("glove", "--embeddings", help="glove, fasttext:PATH, word2vec:PATH or glove-text:PATH.")
_NEIGHBOURS = typer.Option(100, "--neighbours", "-n", min=2, help="N: fake pairs replace a PHI token by one of "
                                                                 "its N nearest embedding neighbours.")
_REPR_SIZE = typer.Option(50, "--repr-size", min=1, help="Representation size d.")
_LAMBDA = typer.Option(1.0, "--lambda", min=0.0, help="Weight of the adversarial term.")
_OUT = typer.Option(..., "--out", help="Run folder; an interrupted run in it resumes.")
_VALID_DATA = typer.Option(None, "--valid-data", help="Validation notes (default: --data).")
_VALID_SPLIT = typer.Option(None, "--valid-split", help="Named split for validation.")
_VALID_FRACTION = typer.Option(0.1, "--valid-fraction", min=0.01, max=0.5,
                               help="Held-out share of the documents when no validation set is named (by --seed).")
_MAX_EPOCHS = typer.Option(40, "--max-epochs", min=1, help="Most epochs of P3 (DANN: of training).")
_PATIENCE = typer.Option(10, "--patience", min=1, help="Early-stopping patience of P3 (DANN: of training).")
_REPRESENTER_UNITS = typer.Option(128, "--representer-units", min=1, help="Representer LSTM units per direction.")
_TAGGER_UNITS = typer.Option(128, "--tagger-units", min=1, help="Tagger LSTM units per direction.")
_ADVERSARY_UNITS = typer.Option(64, "--adversary-units", min=1, help="Adversary LSTM units per direction.")
_CASING = typer.Option(True, "--casing/--no-casing", help="Give the tagger the casing feature.")
_LEARNING_RATE = typer.Option(0.002, "--learning-rate", min=0.0, help="Nadam learning rate of every model.")
_OUTPUT_NOISE = typer.Option(None, "--output-noise", min=0.0,
                             help="Initial std per dimension of the representer's trainable output noise, added to "
                                  "unit-length vectors (default 0.05: noise-to-signal 0.35 at size 50).")
_OUTPUT_NOISE_FLOOR = typer.Option(0.0, "--output-noise-floor", min=0.0,
                                   help="The output noise std no training goes below (saved in the model, so a "
                                        "signed bundle fixes it).")
_SEED = typer.Option(0, "--seed", help="Random seed (weights, validation split, batches, pairs).")


@contextlib.contextmanager
def _clean_errors() -> Iterator[None]:
    """Bad input (unreadable corpus, no PHI, wrong embeddings) -> one line on stderr, exit status 2."""
    try:
        yield
    except (CorpusError, ValueError, OSError) as error:
        typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
        raise typer.Exit(2) from None


def _train(procedure: str, *, data, fmt, splits, valid_data, valid_split, valid_fraction, embeddings, neighbours,
           repr_size, lam, out, max_epochs, patience, seed, representer_units, tagger_units, adversary_units, casing,
           learning_rate, output_noise, output_noise_floor, time_budget, pretrain_epochs=20,
           pretrain_patience=5, chars=False) -> None:
    """Both train commands, their options passed by name."""
    start_tensorflow()

    from deidpool.adversary.runs import AdversarialSettings, train_adversarial_run

    train_docs, valid_docs = training_documents(data, fmt, splits, valid_data, valid_split, valid_fraction, seed)
    settings = AdversarialSettings(neighbours=neighbours, repr_size=repr_size, lam=lam, max_epochs=max_epochs,
                                   patience=patience, pretrain_epochs=pretrain_epochs,
                                   pretrain_patience=pretrain_patience, representer_units=representer_units,
                                   tagger_units=tagger_units, adversary_units=adversary_units, casing=casing,
                                   learning_rate=learning_rate, output_noise=output_noise,
                                   output_noise_floor=output_noise_floor, representer_chars=chars, seed=seed)
    source = {"path": str(data), "format": fmt, "splits": splits or None, "valid_data": valid_data and str(valid_data),
              "valid_split": valid_split, "valid_fraction": None if valid_split or valid_data else valid_fraction}
    with _clean_errors(), within_budget(time_budget):
        metrics = train_adversarial_run(procedure, train_docs, valid_docs, out, settings, embeddings=embeddings,
                                        data=source)
    typer.echo(f"{procedure} run in {out}: validation F1 {metrics['val_f1']:.4f}, adversary accuracy "
               f"{metrics['val_adv_accuracy']:.3f}, output noise-to-signal {metrics['val_noise_to_signal']:.3f} "
               f"(best epoch {metrics['best_epoch']} of {metrics['epochs']})")


def train_adversarial(
    data: Path = _DATA, fmt: str = _FORMAT, splits: list[str] | None = _SPLITS, valid_data: Path | None = _VALID_DATA,
    valid_split: str | None = _VALID_SPLIT, valid_fraction: float = _VALID_FRACTION, embeddings: str = _EMBEDDINGS,
    neighbours: int = _NEIGHBOURS, repr_size: int = _REPR_SIZE, lam: float = _LAMBDA, out: Path = _OUT,
    max_epochs: int = _MAX_EPOCHS, patience: int = _PATIENCE,
    pretrain_epochs: int = typer.Option(20, "--pretrain-epochs", min=1, help="Most epochs of P1 and of P2."),
    pretrain_patience: int = typer.Option(5, "--pretrain-patience", min=1, help="Early-stopping patience of P1, P2."),
    seed: int = _SEED, representer_units: int = _REPRESENTER_UNITS, tagger_units: int = _TAGGER_UNITS,
    adversary_units: int = _ADVERSARY_UNITS, casing: bool = _CASING, learning_rate: float = _LEARNING_RATE,
    output_noise: float | None = _OUTPUT_NOISE, output_noise_floor: float = _OUTPUT_NOISE_FLOOR,
    chars: bool = typer.Option(False, "--chars/--no-chars",
                               help="The representer also reads a convolution over each token's characters (an "
                                    "export's PHI tokens are pseudonymized first: it reads the surrogates')."),
    time_budget: float | None = TIME_BUDGET,
) -> None:
    """Train representer, tagger and adversaries by the three-phase procedure (P1, P2, P3).

    The run folder gets models/representer.keras, tagger.keras, adversary.keras and
    representer_p1.keras (the audits' positive control), config.json, history.json, metrics.json."""
    _train("three-phase", **locals())


def train_dann(
    data: Path = _DATA, fmt: str = _FORMAT, splits: list[str] | None = _SPLITS, valid_data: Path | None = _VALID_DATA,
    valid_split: str | None = _VALID_SPLIT, valid_fraction: float = _VALID_FRACTION, embeddings: str = _EMBEDDINGS,
    neighbours: int = _NEIGHBOURS, repr_size: int = _REPR_SIZE, lam: float = _LAMBDA, out: Path = _OUT,
    max_epochs: int = _MAX_EPOCHS, patience: int = _PATIENCE, seed: int = _SEED,
    representer_units: int = _REPRESENTER_UNITS,
    tagger_units: int = _TAGGER_UNITS, adversary_units: int = _ADVERSARY_UNITS, casing: bool = _CASING,
    learning_rate: float = _LEARNING_RATE, output_noise: float | None = _OUTPUT_NOISE,
    output_noise_floor: float = _OUTPUT_NOISE_FLOOR, time_budget: float | None = TIME_BUDGET,
) -> None:
    """Train representer, tagger and adversaries jointly with gradient reversal (DANN).

    The comparison procedure, which continued adversary training is expected to break."""
    _train("dann", **locals())


def audit(
    representer: Path = typer.Option(..., "--representer", help="A representer .keras file, or a training run folder."),
    data: Path = _DATA, fmt: str = _FORMAT, splits: list[str] | None = _SPLITS,
    held_out_split: str | None = typer.Option(None, "--held-out-split", help="Held-out documents: this named split."),
    held_out_fraction: float = typer.Option(0.2, "--held-out-fraction", min=0.01, max=0.5,
                                            help="Without --held-out-split: this share of the documents (by --seed)."),
    neighbours: int = typer.Option(100, "--neighbours", "-n", min=2,
                                   help="N of --pseudonymization neighbours or groups: fake pairs replace a PHI "
                                        "token by one of its N nearest embedding neighbours (not used by "
                                        "surrogates, the default)."),
    path: str = typer.Option("export", "--path", help="export: attack what `client export` shares (PHI "
                                                      "pseudonymized before the representer; the verdict "
                                                      "the server's publish gate reads); representer: the bare "
                                                      "deidpool.representer."),
    pseudonymization: str = typer.Option(EXPORT_SCHEME, "--pseudonymization",
                                         help="How pairs and exports are pseudonymized: surrogates (the default), "
                                              "neighbours or groups (as `client export --pseudonymization`)."),
    language: str = typer.Option("en", "--language", help="Language of the notes: surrogates' language and the "
                                                          "bound's frequency prior (en or es; as `client export`)."),
    epochs: int = typer.Option(20, "--epochs", min=1, help="Epochs of attack training."),
    out: Path = typer.Option(..., "--out", help="Report folder (metrics.json, report.md, accuracy.png)."),
    adversary: Path | None = typer.Option(None, "--adversary", help="Trained adversaries to continue "
                                                                    "(default: the run folder's)."),
    p1_representer: Path | None = typer.Option(None, "--p1-representer", help="The positive control representer "
                                                                              "(default: the run folder's P1 one)."),
    embeddings: str | None = typer.Option(None, "--embeddings", help="Embeddings spec (default: the run's, or glove)."),
    units: int = _ADVERSARY_UNITS, seed: int = _SEED,
    learning_rate: float = typer.Option(0.01, "--learning-rate", min=0.0, help="Nadam learning rate of the attacks."),
    passes: int | None = typer.Option(None, "--passes", min=1, help="Fresh draws of the training pairs per attack "
                                                                    "epoch (default: enough for 180 optimizer steps; "
                                                                    "a corpus with few PHI sentences needs many)."),
    inversion_epochs: int | None = typer.Option(None, "--inversion-epochs", min=1,
                                                help="Epochs of every inversion attack (default: epochs x passes, "
                                                     "as many draws as an adversary sees)."),
    held_out_draws: int = typer.Option(HELD_OUT_DRAWS, "--held-out-draws", min=1,
                                       help="Draws of pairs of the held-out sentences every attack is judged on "
                                            "(more draws: a narrower interval; an output reads chance only once "
                                            "its interval lies within 0.45-0.55, which takes about 3,000 answers "
                                            "per output, else the audit is inconclusive)."),
    workers: int = typer.Option(1, "--workers", min=1, max=2,
                                help="Processes that share the attacks: 2 keeps both cores of a small machine busy; "
                                     "--time-budget stops the first process only."),
    time_budget: float | None = TIME_BUDGET,
) -> None:
    """Freeze a representer and attack it, with raw embeddings and the P1 representer as controls.

    Fresh and continued adversaries, inversion (A1) and lookup (A2) attacks; the report
    folder gets metrics.json, report.md, accuracy.png, history.json and config.json."""
    start_tensorflow()

    from deidpool.adversary.runs import AuditSettings, audit_run

    if path not in ("export", "representer"):
        raise typer.BadParameter("choose export or representer", param_hint="--path")
    if pseudonymization not in SCHEMES:
        raise typer.BadParameter(f"choose one of {', '.join(SCHEMES)}", param_hint="--pseudonymization")
    settings = AuditSettings(neighbours=neighbours, scheme=pseudonymization, language=language,
                             export_path=path == "export", epochs=epochs, passes=passes,
                             inversion_epochs=inversion_epochs, units=units, learning_rate=learning_rate,
                             held_out_draws=held_out_draws, seed=seed)
    kept, held_out = training_documents(data, fmt, splits, None, held_out_split, held_out_fraction, seed)
    source = {"path": str(data), "format": fmt, "splits": splits or None, "held_out_split": held_out_split,
              "held_out_fraction": None if held_out_split else held_out_fraction}
    with _clean_errors(), within_budget(time_budget):
        report = audit_run(representer, kept, held_out, out, settings, adversary=adversary,
                           p1_representer=p1_representer, embeddings=embeddings, data=source, workers=workers)
    best = report["attacks"]["target/fresh"]
    typer.echo(f"audit of {representer} ({path} path): {report['verdict']} (fresh adversaries' best held-out accuracy "
               f"{best['accuracy']:.3f}, lookup rate {report['lookup']['target']['rate']:.3f}); report in {out}")
