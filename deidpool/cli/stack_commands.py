"""`deidpool client personalize`: a site's stack (the published pipeline, the site's own raw-text
tagger, its PHI memory and the pattern layer, `deidpool.client.stack`), built from its labeled
notes, for `client deidentify --stack`."""

from __future__ import annotations

from pathlib import Path

import typer

from deidpool.cli.client_commands import _check_language, _open_bundle, clean_errors, client_app
from deidpool.cli.runtime import start_tensorflow
from deidpool.cli.train_commands import SPLITS, VALID_DATA, VALID_FRACTION, VALID_SPLIT, training_documents


def _point(point: dict) -> str:
    return (f"threshold {point['threshold']:.2f}: recall {point['recall']:.4f}, precision {point['precision']:.4f}, "
            f"F1 {point['f1']:.4f}")


@client_app.command("personalize")
def personalize(
    pipeline_path: Path = typer.Option(..., "--pipeline", help="The published pipeline (folder or .tar)."),
    provider_key: Path = typer.Option(..., "--provider-key", help="The pinned public key that signed the pipeline "
                                                                  "(server-signing.pub)."),
    notes: Path = typer.Option(..., "--notes", help="The site's PHI-labeled notes (file or folder)."),
    fmt: str = typer.Option(..., "--format", help="Format of the notes: i2b2, meddocan, brat, physionet, conll, json."),
    split: list[str] | None = SPLITS,
    valid_data: Path | None = VALID_DATA,
    valid_split: str | None = VALID_SPLIT,
    valid_fraction: float = VALID_FRACTION,
    min_recall: float | None = typer.Option(None, "--min-recall", min=0.0, max=1.0,
                                            help="The token HIPAA recall the stack must reach on the validation "
                                                 "notes: the largest threshold that reaches it is chosen, and the "
                                                 "precision it costs reported (default: threshold 0.5)."),
    embeddings: str | None = typer.Option(None, "--embeddings", help="Where to find the pipeline's embeddings, if "
                                                                     "not by its own spec."),
    tagger_embeddings: str | None = typer.Option(None, "--tagger-embeddings",
                                                 help="The local tagger's embeddings (e.g. fasttext:PATH from `train "
                                                      "embeddings` on the site's notes; copied into the stack); "
                                                      "default: the pipeline's."),
    language: str | None = typer.Option(None, "--language", help="Language of the notes for the pattern layer (en "
                                                                  "or es); default: detected from the notes."),
    patterns: bool = typer.Option(True, "--patterns/--no-patterns", help="Merge the pattern layer's spans."),
    lstm_units: int = typer.Option(128, "--lstm-units", min=1),
    max_epochs: int = typer.Option(20, "--max-epochs", min=1),
    patience: int = typer.Option(3, "--patience", min=1),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(..., "--out", help="The stack folder to create (readable by its owner only)."),
) -> None:
    """Build the site's stack on top of a published pipeline, for `client deidentify --stack`.

    The stack holds a raw-text tagger (characters on) trained on the site's notes, their PHI
    memory and the operating point chosen on the validation notes: PHI, kept at the site.
    Nothing of it enters an export or an upload."""
    start_tensorflow()

    from deidpool.cli.corpus_commands import notes_language
    from deidpool.client.stack import build_stack

    train, valid = training_documents(notes, fmt, split, valid_data, valid_split, valid_fraction, seed)
    language = language or notes_language([*train, *valid])
    _check_language(language, patterns)
    with clean_errors():
        pipeline, vectors = _open_bundle(pipeline_path, provider_key, embeddings)
        point = build_stack(out, pipeline, vectors, train, valid, embeddings=tagger_embeddings, language=language,
                            patterns=patterns, min_recall=min_recall, lstm_units=lstm_units, max_epochs=max_epochs,
                            patience=patience, seed=seed)
    typer.echo(f"stack in {out} (owner-only) for pipeline {pipeline.representer_id}; on {len(valid)} validation "
               f"notes, token HIPAA, the pipeline weighing {point['weight']} against the local tagger:")
    typer.echo(f"  default {_point(point['default'])}")
    if min_recall is not None:
        chosen = point["chosen"]
        typer.echo(f"  chosen  {_point(chosen)} (--min-recall {min_recall}"
                   f"{'' if point['reached'] else ': not reached, the most recall there is'}; "
                   f"precision {chosen['precision'] - point['default']['precision']:+.4f} against the default)")
