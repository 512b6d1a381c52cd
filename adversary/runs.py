"""Representer runs from documents: adversarial training (three-phase or DANN) into a run
folder, and the privacy audit of a trained run folder. The CLI and `deidpool demo` share them;
TensorFlow is imported only when a run starts, so importing the settings stays light."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deidpool.adversary.verdicts import HELD_OUT_DRAWS
from deidpool.corpus.casing import CASING
from deidpool.corpus.document import Document
from deidpool.corpus.prepare import LabeledSentence, prepare_document
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.pseudonymization.schemes import EXPORT_SCHEME, SCHEMES
from deidpool.representer.embeddings import Embeddings, load_embeddings
from deidpool.representer.settings import check_at_least, check_one_of

LABELS = {"source_type": lambda span: span.source_type, "type": lambda span: span.type}


@dataclass(frozen=True)
class AdversarialSettings:
    """Sizes and budgets of an adversarial run (defaults: docs/method.md's reference values)."""

    neighbours: int = 100
    repr_size: int = 50
    lam: float = 1.0
    max_epochs: int = 40
    patience: int = 10
    pretrain_epochs: int = 20
    pretrain_patience: int = 5
    representer_units: int = 128
    tagger_units: int = 128
    adversary_units: int = 64
    casing: bool = True
    learning_rate: float = 0.002
    input_noise: float | None = None  # initial std of the representer's input noise (None: its default)
    output_noise: float | None = None  # initial std of the representer's output noise (None: its default)
    output_noise_floor: float = 0.0  # the output noise std no training goes below
    selection: str = "loss"  # how P1, P3 and DANN pick their best epoch (adversary.procedures.SELECTIONS)
    pseudonymized_copy: bool = False  # also train on every training sentence with its PHI replaced as at export
    representer_chars: bool = False  # the representer reads each token's characters beside its embedding
    seed: int = 0


@dataclass(frozen=True)
class AuditSettings:
    """What an audit attacks and how hard (defaults: `deidpool audit`'s)."""

    # the pairs: PHI pseudonymized among N `neighbours` under `scheme`, in the notes' `language`
    neighbours: int = 100
    scheme: str = EXPORT_SCHEME
    language: str = "en"
    # attack what `client export` shares (PHI pseudonymized before the representer), else the bare representer
    export_path: bool = True
    # the attacks' budgets: epochs of `passes` fresh draws of pairs (None: `procedures.automatic_passes`),
    # the inversions' epochs (None: epochs x passes), the adversaries' units and learning rate
    epochs: int = 20
    passes: int | None = None
    inversion_epochs: int | None = None
    units: int = 64
    learning_rate: float = 0.01
    # draws of pairs of the held-out sentences every attack is judged on, and the seed of every draw
    held_out_draws: int = HELD_OUT_DRAWS
    seed: int = 0

    def __post_init__(self) -> None:
        check_at_least(self, 1, "neighbours", "epochs", "passes", "inversion_epochs", "units", "held_out_draws")
        check_at_least(self, 0, "learning_rate")
        check_one_of(self, "scheme", SCHEMES)


def sentences(documents: Sequence[Document], label: str = "source_type") -> list[LabeledSentence]:
    """Every document's training sentences (BIO tags of `label`: source_type or type)."""
    return [sentence for document in documents for sentence in prepare_document(document, "BIO", LABELS[label])]


def train_adversarial_run(procedure: str, train_documents: Sequence[Document], valid_documents: Sequence[Document],
                          out: str | Path, settings: AdversarialSettings = AdversarialSettings(), *,
                          embeddings: str = "glove", tags: Sequence[str] | None = None, label: str = "source_type",
                          loaded_embeddings: Embeddings | None = None, data: dict | None = None,
                          language: str = "en", progress: bool = True) -> dict:
    """Train representer, tagger and adversaries by `procedure` ("three-phase" or "dann") in
    the run folder `out` (an interrupted run resumes); returns the final metrics.

    `tags` is the tag vocabulary (default: BIO tags of the labels in the documents); `data`
    describes the data source in config.json. With `settings.pseudonymized_copy` the training
    sentences are doubled by a copy of each whose PHI tokens are replaced under the export's scheme
    in the notes' `language` (`pseudonymized_copy`); validation stays on the notes as they are."""
    import keras

    from deidpool.adversary.procedures import AdversarialData, build_models, train_dann, train_three_phase
    from deidpool.representer.tagger import compute_class_weights

    if procedure not in ("three-phase", "dann"):
        raise ValueError(f"unknown procedure {procedure!r}: three-phase or dann")
    if procedure == "dann" and settings.representer_chars:
        raise ValueError("a representer that reads characters is trained by the three-phase procedure only")
    vectors = loaded_embeddings or load_embeddings(embeddings)
    if tags is None:
        tags = tag_vocabulary({LABELS[label](span) for document in (*train_documents, *valid_documents)
                               for span in document.spans})
    train_sentences = sentences(train_documents, label)
    if settings.pseudonymized_copy:
        train_sentences += pseudonymized_copy(train_sentences, vectors, language, settings.seed)
    chars = settings.representer_chars
    train = AdversarialData.from_sentences(train_sentences, vectors, tags, settings.neighbours, chars)
    valid = AdversarialData.from_sentences(sentences(valid_documents, label), vectors, tags, settings.neighbours, chars)
    keras.utils.set_random_seed(settings.seed)
    models = build_models(vectors.dim, len(tags), settings.repr_size, representer_units=settings.representer_units,
                          tagger_units=settings.tagger_units, adversary_units=settings.adversary_units,
                          use_casing=settings.casing, input_noise=settings.input_noise,
                          output_noise=settings.output_noise,
                          output_noise_floor=settings.output_noise_floor, representer_chars=chars)
    config = {"embeddings": embeddings, "embeddings_id": vectors.source_id, "tags": list(tags), "scheme": "BIO",
              "label": label, "neighbours": settings.neighbours, "repr_size": settings.repr_size,
              "embedding_dim": vectors.dim,
              "casing": {"feature": "reimers-gurevych-2017", "classes": list(CASING)} if settings.casing else None,
              "units": {"representer": settings.representer_units, "tagger": settings.tagger_units,
                        "adversary": settings.adversary_units},
              **({"initial_input_noise": settings.input_noise} if settings.input_noise is not None else {}),
              **({"representer_chars": True} if chars else {}),
              "initial_output_noise": models[0].get_layer("output_noise").initial_stddev,
              "output_noise_floor": models[0].get_layer("output_noise").min_stddev,
              "data": {**(data or {}), "train_sentences": len(train.sentences), "train_pairs": len(train.pairs),
                       **({"pseudonymized_copy": EXPORT_SCHEME} if settings.pseudonymized_copy else {}),
                       "valid_sentences": len(valid.sentences), "valid_pairs": len(valid.pairs)}}
    options = {"class_weights": compute_class_weights(train.sentences.tag_counts(len(tags))), "lam": settings.lam,
               "seed": settings.seed, "selection": settings.selection, "config": config,
               "learning_rate": settings.learning_rate, "progress": progress}
    if procedure == "three-phase":
        pretrain = (settings.pretrain_epochs, settings.pretrain_epochs, settings.max_epochs)
        patience = (settings.pretrain_patience, settings.pretrain_patience, settings.patience)
        return train_three_phase(*models, train, valid, out, max_epochs=pretrain, patience=patience, **options)
    return train_dann(*models, train, valid, out, max_epochs=settings.max_epochs, patience=settings.patience, **options)


def pseudonymized_copy(sentences: Sequence[LabeledSentence], vectors: Embeddings, language: str,
                       seed: int) -> list[LabeledSentence]:
    """`sentences` with every PHI token replaced as `client export` replaces it (`EXPORT_SCHEME`, one
    seeded draw), so that a representer also learns from text shaped like what it will be given."""
    return Pseudonymizer(vectors, 1, EXPORT_SCHEME, language).labeled_sentences(sentences, random.Random(seed))


def run_models(representer: Path, adversary: Path | None = None,
               p1_representer: Path | None = None) -> tuple[Path, Path | None, Path | None, dict]:
    """The representer file, adversary, P1 representer and run config; a run folder supplies
    models/representer.keras and, unless given, models/adversary.keras and representer_p1.keras."""
    representer = Path(representer)
    if not representer.is_dir():
        return representer, adversary, p1_representer, {}
    models = representer / "models"

    def existing(path: Path) -> Path | None:
        return path if path.exists() else None

    config = json.loads((representer / "config.json").read_text()) if (representer / "config.json").exists() else {}
    return (models / "representer.keras", adversary or existing(models / "adversary.keras"),
            p1_representer or existing(models / "representer_p1.keras"), config)


def audit_run(representer: Path, kept: Sequence[Document], held_out: Sequence[Document], out: str | Path,
              settings: AuditSettings = AuditSettings(), *, adversary: Path | None = None,
              p1_representer: Path | None = None, embeddings: str | None = None,
              loaded_embeddings: Embeddings | None = None, data: dict | None = None, progress: bool = True,
              workers: int = 1, parts: Sequence[str] | None = None) -> dict | None:
    """Freeze the representer of `representer` (a .keras file or a run folder) and attack it
    with pairs from `kept`, judged on `held_out` under `settings` (see `deidpool.adversary.audit.run_audit`;
    by default on the export path, pseudonymized among `settings.neighbours` under `settings.scheme` in the
    notes' `settings.language`); returns the report. A run folder's config names the label its sentences
    are prepared with, and the embeddings (spec `embeddings` otherwise, default glove) unless
    `loaded_embeddings` are given; `data` describes the data source in config.json.

    With `workers` 2, a second process (one TensorFlow thread, its own copy of the embeddings) runs
    the first of `audit.PART_SHARES` while this one runs the second (the attacks, inversions and
    lookups of each); then this one resumes every part from its checkpoint, reads the inversions'
    and lookups' kept results and reports: on a 2-core machine this keeps both cores busy
    (experiments/bench_demo.py measures it; see its results page).
    Call it under `if __name__ == "__main__":` in a script (a spawned process imports the script).
    `parts` trains only those (see `run_audit`) and returns None."""
    if workers not in (1, 2):
        raise ValueError(f"an audit runs in 1 or 2 processes, not {workers}")
    if workers == 2:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from deidpool.adversary.audit import PART_SHARES

        # what every process of the audit shares: the settings and the models' and data's sources
        shared = {"adversary": adversary, "p1_representer": p1_representer, "embeddings": embeddings, "data": data}
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_one_thread) as pool:
            second = pool.submit(audit_run, representer, kept, held_out, out, settings, parts=PART_SHARES[0],
                                 progress=False, **shared)
            audit_run(representer, kept, held_out, out, settings, parts=PART_SHARES[1],
                      loaded_embeddings=loaded_embeddings, progress=progress, **shared)
            second.result()
        return audit_run(representer, kept, held_out, out, settings, loaded_embeddings=loaded_embeddings,
                         progress=progress, **shared)
    import keras

    from deidpool.adversary.audit import run_audit
    from deidpool.adversary.pairs import PairSource
    from deidpool.pseudonymization.pseudonymize import Pseudonymizer
    from deidpool.representer.representation import load_representer, reads_chars

    representer_file, adversary_file, p1_file, run_config = run_models(representer, adversary, p1_representer)
    spec = embeddings or run_config.get("embeddings", "glove")
    vectors = loaded_embeddings or load_embeddings(spec)
    model = load_representer(representer_file)
    if int(model.input["embeddings"].shape[-1]) != vectors.dim:
        raise ValueError(f"{representer_file} reads {model.input['embeddings'].shape[-1]}-dimensional embeddings, "
                         f"{spec} has {vectors.dim}")
    label = run_config.get("label", "source_type")
    pseudonymizer = Pseudonymizer(vectors, settings.neighbours, settings.scheme, settings.language)
    train = PairSource(sentences(kept, label), pseudonymizer, chars=reads_chars(model))
    test = PairSource(sentences(held_out, label), pseudonymizer, chars=reads_chars(model))
    keras.utils.set_random_seed(settings.seed)
    trained = keras.saving.load_model(adversary_file, compile=False) if adversary_file else None
    p1 = load_representer(p1_file) if p1_file else None
    config = {"representer": str(representer_file), "adversary": adversary_file and str(adversary_file),
              "p1_representer": p1_file and str(p1_file), "embeddings": spec, "pseudonymization": settings.scheme,
              "language": settings.language, "data": data or {}}
    return run_audit(model, train, test, out, epochs=settings.epochs, adversary=trained, p1_representer=p1,
                     units=settings.units, seed=settings.seed, passes=settings.passes,
                     inversion_epochs=settings.inversion_epochs, export_path=settings.export_path,
                     held_out_draws=settings.held_out_draws, config=config,
                     learning_rate=settings.learning_rate, progress=progress, parts=parts)


def _one_thread() -> None:
    """A second audit process's TensorFlow runs one operation at a time on one thread (read when
    TensorFlow starts, which is here, in a spawned process, without its load-time notices)."""
    import os

    from deidpool.representer.loading import load_tensorflow

    os.environ.update({"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"})
    load_tensorflow()
