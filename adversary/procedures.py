"""Adversarial training of a representer (docs/method.md, Training): the three phases of Feutry et
al. (2018) and the DANN comparison as `TrainingProcedure`s, and the drivers that run them."""

from __future__ import annotations

import functools
import itertools
import json
import math
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from deidpool.adversary.gradient_reversal import GradientReversal
from deidpool.adversary.models import (
    DEFAULT_UNITS,
    PAPER,
    CombinedAdversary,
    adversary_answers,
    adversary_metrics,
    adversary_outputs,
    adversary_step,
    metric_name,
    train_adversary_step,
)
from deidpool.adversary.pairs import PairSource
from deidpool.adversary.verdicts import cluster_design_effect
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.dataset import (
    BATCH_SIZE,
    INFERENCE_BATCH_SIZE,
    SentenceData,
    inference_batches,
    training_batches,
)
from deidpool.representer.representation import (
    INPUT_NOISE_STDDEV,
    OUTPUT_NOISE_FLOOR,
    OUTPUT_NOISE_STDDEV,
    build_representer,
    output_noise_to_signal,
    representer_inputs,
)
from deidpool.representer.tagger import build_tagger, tagger_loss
from deidpool.representer.training import (
    CHECKPOINT,
    TrainingProcedure,
    _write_config,
    _write_json,
    loss_and_phi_f1,
    run_training,
)

PHASES = ("p1", "p2", "p3")
# Optimizer steps per adversary epoch when the draws are chosen automatically (P2 and audit
# attacks): a corpus with few PHI sentences gets as many fresh draws of its pairs as it takes for
# an adversary to learn at all (one draw an epoch left even the raw-embedding control near chance).
MIN_EPOCH_STEPS = 180


@dataclass(frozen=True, eq=False)
class AdversarialData:
    """The data of adversarial training: every sentence as tagger input (word embeddings as
    features), and the real/fake pairs drawn from its sentences with PHI."""

    sentences: SentenceData
    pairs: PairSource

    @classmethod
    def from_sentences(cls, sentences: Sequence, embeddings, tags: Sequence[str], neighbours: int,
                       chars: bool = False) -> AdversarialData:
        """From `deidpool.corpus.prepare` sentences, tag ids in `tags`, fake pairs among `neighbours` = N;
        with `chars` each token's character ids too (for a representer that reads them)."""
        return cls(SentenceData.from_sentences(sentences, embeddings, tags, chars=chars),
                   PairSource(sentences, Pseudonymizer(embeddings, neighbours), chars=chars))


def build_adversary(representation_dim: int, embedding_dim: int, units: int = DEFAULT_UNITS,
                    kind: type = CombinedAdversary, design: str = PAPER):
    """An adversary of `kind` (`CombinedAdversary` or `PartnerOnlyProbe`) and `design` (see
    adversary.models) with its weights created (ready for an optimizer or a checkpoint)."""
    adversary = kind(units, design)
    representation, embeddings = (np.zeros((1, 1, representation_dim), "float32"),
                                  np.zeros((1, 1, embedding_dim), "float32"))
    adversary({"embeddings": embeddings, "representation": representation, "partner_representation": representation,
               "mask": np.ones((1, 1), bool)})
    return adversary


def build_models(embedding_dim: int, num_tags: int, repr_size: int = 50, *, representer_units: int = 128,
                 tagger_units: int = 128, adversary_units: int = DEFAULT_UNITS, use_casing: bool = True,
                 recurrent_dropout: float = 0.5, input_noise: float | None = None,
                 output_noise: float | None = None, output_noise_floor: float = OUTPUT_NOISE_FLOOR,
                 representer_chars: bool = False) -> tuple[keras.Model, keras.Model, CombinedAdversary]:
    """The representer (its input and output noise starting at std `input_noise` and
    `output_noise`, None: the representer's defaults, the output noise never below
    `output_noise_floor`; reading characters too with `representer_chars`), the tagger reading its
    output and the adversaries, all built."""
    return (build_representer(embedding_dim, repr_size, representer_units,
                              input_noise_stddev=INPUT_NOISE_STDDEV if input_noise is None else input_noise,
                              output_noise_stddev=OUTPUT_NOISE_STDDEV if output_noise is None else output_noise,
                              output_noise_floor=output_noise_floor, use_chars=representer_chars),
            build_tagger(repr_size, num_tags, use_casing=use_casing, lstm_units=tagger_units,
                         recurrent_dropout=recurrent_dropout),
            build_adversary(repr_size, embedding_dim, adversary_units))


def represent(representer, embeddings, mask, training=False, chars=None):
    """`representer`'s output for a batch (`chars` its character ids, read by a representer that
    reads them), without the Keras mask a representer model attaches to it (consumers read the
    mask explicitly, and layers that ignore masks warn about it)."""
    return tf.identity(representer(representer_inputs(representer, embeddings, mask, chars), training=training))


def deid_loss(representer, tagger, batch, class_weights=None, training=False):
    """L_deid of `tagger` reading `representer`'s output, on a batch of `training_batches`."""
    features = represent(representer, batch["features"], batch["mask"], training, batch.get("chars"))
    return tagger_loss(tagger, {**batch, "features": features}, class_weights, training)


def _apply(optimizer, loss, tape, variables):
    """One optimizer step on `variables` alone: gradients are computed for them only."""
    optimizer.apply(tape.gradient(loss, variables), variables)


class _Procedure(TrainingProcedure):
    """Shared parts: optimizer settings, steps traced once per dataset signature, validation."""

    reference = None  # what computes the original's side of a pair (see `adversary_outputs`)

    def __init__(self, representer, adversary, learning_rate=0.002, clipnorm=1.0, batch_size=BATCH_SIZE,
                 held_out_draws=1):
        self.representer, self.adversary = representer, adversary
        self.learning_rate, self.clipnorm, self.batch_size = learning_rate, clipnorm, batch_size
        if held_out_draws < 1:
            raise ValueError(f"held_out_draws must be at least 1, got {held_out_draws}")
        self.held_out_draws = int(held_out_draws)
        self._steps = {}

    def _optimizer(self, *models):
        """Nadam with gradient-norm clipping, built for the trainable variables of `models`."""
        optimizer = keras.optimizers.Nadam(self.learning_rate, clipnorm=self.clipnorm)
        optimizer.build([v for model in models for v in model.trainable_variables])
        return optimizer

    def _step(self, function, *specs):
        """`function` as a `tf.function` traced once for arguments of `specs`. Wrapped in a partial so
        that TensorFlow counts its tracings per procedure: a bound method's are counted over every
        instance, and the many procedures of a run (P2, P3, each audit attack) each tracing the shared
        validation step read to it as needless retracing (a WARNING in the demo's output)."""
        if function.__name__ not in self._steps:
            self._steps[function.__name__] = tf.function(functools.partial(function), input_signature=list(specs),
                                                         autograph=False)
        return self._steps[function.__name__]

    def config(self):
        # held_out_draws is recorded only when not 1, so that runs made before it existed still resume
        extra = {"held_out_draws": self.held_out_draws} if self.held_out_draws != 1 else {}
        return {"learning_rate": self.learning_rate, "clipnorm": self.clipnorm, "batch_size": self.batch_size, **extra}

    def _adversary_metrics(self, pairs: PairSource) -> dict[str, float]:
        """Adversary metrics on the held-out pairs of `pairs` (`held_out_draws` draws of them), averaged over pairs
        (in batches of INFERENCE_BATCH_SIZE: no gradient, so batch size changes nothing but the speed), and
        every output's `design_effect` (`design_effect_t1`, ...): its answers clustered by held-out sentence
        (`cluster_design_effect`), since the draws ask about the same sentences."""
        batches = pairs.held_out(seed=0, batch_size=INFERENCE_BATCH_SIZE, draws=self.held_out_draws)
        step = self._step(self._adversary_validation_step, batches.element_spec)
        totals, right, asked = {}, {}, np.zeros(len(pairs))
        for batch in batches:
            metrics, answers = step(batch)
            sentence = batch["sentence"].numpy()
            for name, value in metrics.items():
                totals[name] = totals.get(name, 0.0) + float(value) * len(sentence)
            for name, answer in answers.items():
                right[name] = right.get(name, 0.0) + np.bincount(sentence, answer.numpy(), len(pairs))
            asked += np.bincount(sentence, minlength=len(pairs))
        return {**{name: total / asked.sum() for name, total in totals.items()},
                **{metric_name("design_effect", name): cluster_design_effect(counts, asked)
                   for name, counts in right.items()}}

    def _adversary_validation_step(self, batch):
        """`adversary_metrics` of one batch of pairs and whether each output answered each pair right."""
        outputs = adversary_outputs(self.adversary, self.representer, batch, reference=self.reference)
        return adversary_metrics(outputs, batch["label"]), adversary_answers(outputs, batch["label"])


def automatic_passes(train_pairs: int, batch_size: int = BATCH_SIZE, min_steps: int = MIN_EPOCH_STEPS) -> int:
    """Draws of `train_pairs` pairs per adversary epoch for at least `min_steps` optimizer steps."""
    return max(1, math.ceil(min_steps / max(1, math.ceil(train_pairs / batch_size))))


class AdversaryTraining(_Procedure):
    """Adversaries on L_adv with the representer frozen (phase P2, and audit attacks): every
    epoch one pass over fresh pairs of a `PairSource`; validation on its held-out pairs.

    `representer` may be a plain function of {"embeddings", "mask"} (e.g. the identity, to
    attack raw embeddings). With `passes` > 1 an epoch is that many fresh draws of pairs:
    a corpus with few PHI sentences (PhysioNet: a few hundred) otherwise gives an attack only
    a dozen steps per epoch. `reference` computes the original's side of every pair (see
    `adversary_outputs`; audits pass a noise-free copy of the representer)."""

    name = "adversary"

    def __init__(self, representer, adversary, passes=1, reference=None, **settings):
        super().__init__(representer, adversary, **settings)
        if passes < 1:
            raise ValueError(f"passes must be at least 1, got {passes}")
        self.passes = int(passes)
        self.reference = reference
        self.optimizer = self._optimizer(adversary)

    def models(self):
        return {"adversary": self.adversary}

    def optimizers(self):
        return {"adversary": self.optimizer}

    def config(self):
        return {**super().config(), "adversary_units": self.adversary.units, "passes": self.passes,
                "noise_free_reference": self.reference is not None}

    def _train_step(self, batch):
        return train_adversary_step(self.adversary, self.representer, self.optimizer, batch, self.reference)

    def train_epoch(self, train: PairSource, epoch, rng):
        seed = int(rng.integers(2**31))
        draws = (train.epoch(seed, epoch * self.passes + k, self.batch_size) for k in range(self.passes))
        first = next(draws)  # the others are drawn as the epoch reaches them
        step = self._step(self._train_step, first.element_spec)
        losses = [float(step(batch)["loss"]) for batch in itertools.chain(first, itertools.chain.from_iterable(draws))]
        return {"loss": float(np.mean(losses))}

    def validate(self, valid: PairSource):
        return self._adversary_metrics(valid)


class _JointProcedure(_Procedure):
    """A procedure over representer, tagger and adversaries on `AdversarialData`. Its best
    epoch is picked by `selection` (`SELECTIONS`): "loss", docs/method.md's validation `loss`
    (L_deid + lambda * penalty), or "f1", the same with 1 - PHI F1 in place of L_deid
    (`f1_loss`), since the weighted CRF likelihood on the few validation notes keeps rising
    while F1 still improves."""

    monitors = {"loss": ("val_loss", "min"), "f1": ("val_f1_loss", "min")}

    def __init__(self, representer, tagger, adversary, class_weights=None, lam=1.0, selection="loss", **settings):
        super().__init__(representer, adversary, **settings)
        if selection not in self.monitors:
            raise ValueError(f"unknown selection {selection!r}: one of {', '.join(self.monitors)}")
        self.tagger, self.lam = tagger, float(lam)
        self.class_weights = None if class_weights is None else np.asarray(class_weights, dtype=np.float32)
        self.monitor, self.monitor_mode = self.monitors[selection]

    def config(self):
        return {**super().config(), "lambda": self.lam,
                "class_weights": None if self.class_weights is None else self.class_weights.tolist()}

    def _deid_loss(self, batch, training):
        return deid_loss(self.representer, self.tagger, batch, self.class_weights, training)

    def _joint_batches(self, data: AdversarialData, rng):
        """One epoch: every tagger batch of a pass over the sentences with a pair batch, the
        pairs drawn afresh for every pass over the PHI sentences; and the two element specs."""
        seed = int(rng.integers(2**31))
        sentences = training_batches(data.sentences, rng, self.batch_size)
        passes = (data.pairs.epoch(seed, cycle, self.batch_size) for cycle in itertools.count())
        first = next(passes)
        pairs = itertools.chain(first, itertools.chain.from_iterable(passes))
        return zip(sentences, pairs), (sentences.element_spec, first.element_spec)

    def _joint_epoch(self, function, data: AdversarialData, rng) -> dict[str, float]:
        """`function` (a step on a tagger batch and a pair batch) over one epoch of
        `_joint_batches`; returns the mean of every metric it returns."""
        batches, specs = self._joint_batches(data, rng)
        step = self._step(function, *specs)
        records = [{name: float(value) for name, value in step(*batch).items()} for batch in batches]
        return {name: float(np.mean([r[name] for r in records])) for name in records[0]}

    def models(self):
        return {"representer": self.representer, "tagger": self.tagger, "adversary": self.adversary}

    def _deid_validation_step(self, batch):
        batch = {**batch, "features": represent(self.representer, batch["features"], batch["mask"],
                                                chars=batch.get("chars"))}
        return tagger_loss(self.tagger, batch, self.class_weights), self.tagger.predict_tags(batch)

    def _deid_metrics(self, data: SentenceData) -> dict[str, float]:
        """Validation L_deid, token-level binary PHI F1 of the Viterbi tags, and the
        representer's output noise-to-signal ratio (what the noise has been trained to)."""
        batches = inference_batches(data)
        step = self._step(self._deid_validation_step, batches.element_spec)
        loss, f1 = loss_and_phi_f1(step, batches, len(data))
        return {"loss_deid": loss, "f1": f1, "noise_to_signal": output_noise_to_signal(self.representer)}

    def validate(self, valid: AdversarialData):
        """Both losses, F1, adversary accuracies and `loss` = L_deid + lambda * penalty, the P3b
        loss (see `deidpool.adversary.models.adversary_metrics`)."""
        metrics = self._deid_metrics(valid.sentences)
        metrics.update({f"adv_{name}": value for name, value in self._adversary_metrics(valid.pairs).items()})
        metrics["loss"] = metrics["loss_deid"] + self.lam * metrics["adv_penalty"]
        metrics["f1_loss"] = 1.0 - metrics["f1"] + self.lam * metrics["adv_penalty"]
        return metrics


# How P1, P3 and DANN pick their best epoch: "loss" as docs/method.md says (validation L_deid, plus
# lambda * penalty in P3 and DANN), or "f1" (validation PHI F1 in place of L_deid).
SELECTIONS = tuple(_JointProcedure.monitors)


class DeidTraining(_JointProcedure):
    """P1: representer and tagger trained together on L_deid; validation `loss` is L_deid (the
    best epoch's, or under selection "f1" the best validation PHI F1's)."""

    name = "p1"
    monitors = {"loss": ("val_loss", "min"), "f1": ("val_f1", "max")}

    def __init__(self, representer, tagger, class_weights=None, selection="loss", **settings):
        super().__init__(representer, tagger, None, class_weights, selection=selection, **settings)
        self.optimizer = self._optimizer(representer, tagger)

    def models(self):
        return {"representer": self.representer, "tagger": self.tagger}

    def optimizers(self):
        return {"representer_tagger": self.optimizer}

    def _train_step(self, batch):
        with tf.GradientTape() as tape:
            loss = self._deid_loss(batch, training=True)
        _apply(self.optimizer, loss, tape, self.representer.trainable_variables + self.tagger.trainable_variables)
        return loss

    def train_epoch(self, train: AdversarialData, epoch, rng):
        batches = training_batches(train.sentences, rng, self.batch_size)
        step = self._step(self._train_step, batches.element_spec)
        total = sum(float(step(batch)) * len(batch["index"]) for batch in batches)
        return {"loss": total / len(train.sentences)}

    def validate(self, valid: AdversarialData):
        metrics = self._deid_metrics(valid.sentences)
        return {"loss": metrics.pop("loss_deid"), **metrics}


class AlternatingTraining(_JointProcedure):
    """P3: every epoch (a) with the representer frozen, the tagger on L_deid and the adversaries
    on L_adv, then (b) with tagger and adversaries frozen, the representer on
    L = L_deid + lambda * mean over pairs of |BCE_i - log 2|. Each step pairs a tagger batch
    with a pair batch."""

    name = "p3"

    def __init__(self, representer, tagger, adversary, class_weights=None, lam=1.0, selection="loss", **settings):
        super().__init__(representer, tagger, adversary, class_weights, lam, selection, **settings)
        self.tagger_optimizer = self._optimizer(tagger)
        self.adversary_optimizer = self._optimizer(adversary)
        self.representer_optimizer = self._optimizer(representer)

    def optimizers(self):
        return {"tagger": self.tagger_optimizer, "adversary": self.adversary_optimizer,
                "representer": self.representer_optimizer}

    def combined_loss(self, tagger_batch, pair_batch, training=False) -> dict:
        """The P3b loss on one tagger batch and one pair batch, with its terms and L_adv."""
        deid = self._deid_loss(tagger_batch, training)
        adversarial = adversary_step(self.adversary, self.representer, pair_batch, training)
        return {"loss": deid + self.lam * adversarial["penalty"], "loss_deid": deid,
                "loss_adv": adversarial["loss"], "penalty": adversarial["penalty"]}

    def _step_a(self, tagger_batch, pair_batch):
        with tf.GradientTape() as tape:
            deid = self._deid_loss(tagger_batch, training=True)
        _apply(self.tagger_optimizer, deid, tape, self.tagger.trainable_variables)
        metrics = train_adversary_step(self.adversary, self.representer, self.adversary_optimizer, pair_batch)
        return {"loss_deid": deid, "loss_adv": metrics["loss"], "accuracy_adv": metrics["accuracy"]}

    def _step_b(self, tagger_batch, pair_batch):
        with tf.GradientTape() as tape:
            losses = self.combined_loss(tagger_batch, pair_batch, training=True)
        _apply(self.representer_optimizer, losses["loss"], tape, self.representer.trainable_variables)
        return losses

    def train_part(self, part: str, train: AdversarialData, rng) -> dict[str, float]:
        """Part "a" or "b" of an epoch; returns its mean training metrics, prefixed by the part."""
        metrics = self._joint_epoch(self._step_a if part == "a" else self._step_b, train, rng)
        return {f"{part}_{name}": value for name, value in metrics.items()}

    def train_epoch(self, train: AdversarialData, epoch, rng):
        return {**self.train_part("a", train, rng), **self.train_part("b", train, rng)}


class DANNTraining(_JointProcedure):
    """DANN (Ganin et al. 2016): representer, tagger and adversaries in one optimizer step on
    L_deid + L_adv, with a gradient reversal layer (scale lambda) between representer and
    adversaries, so the adversaries minimise L_adv and the representer maximises it."""

    name = "dann"

    def __init__(self, representer, tagger, adversary, class_weights=None, lam=1.0, selection="loss", **settings):
        super().__init__(representer, tagger, adversary, class_weights, lam, selection, **settings)
        self.reversal = GradientReversal(self.lam)
        self.optimizer = self._optimizer(representer, tagger, adversary)

    def optimizers(self):
        return {"all": self.optimizer}

    def _reversed_representer(self, inputs, training=False):
        return self.reversal(self.representer(inputs, training=training))

    def losses(self, tagger_batch, pair_batch, training=False) -> dict:
        """`loss` = L_deid + L_adv, the adversaries reading the representation through the reversal."""
        deid = self._deid_loss(tagger_batch, training)
        adversarial = adversary_step(self.adversary, self._reversed_representer, pair_batch, training)
        return {"loss": deid + adversarial["loss"], "loss_deid": deid, "loss_adv": adversarial["loss"],
                "accuracy_adv": adversarial["accuracy"]}

    def _train_step(self, tagger_batch, pair_batch):
        with tf.GradientTape() as tape:
            losses = self.losses(tagger_batch, pair_batch, training=True)
        variables = [v for model in self.models().values() for v in model.trainable_variables]
        _apply(self.optimizer, losses["loss"], tape, variables)
        return losses

    def train_epoch(self, train: AdversarialData, epoch, rng):
        return self._joint_epoch(self._train_step, train, rng)


def _final_epochs(run_dir: Path, phase: str, max_epochs: int) -> int:
    """A phase is final once the next one has started: it trains no more, whatever `max_epochs` says."""
    following = PHASES[PHASES.index(phase) + 1:]
    if any((run_dir / later / CHECKPOINT).exists() for later in following):
        return len(json.loads((run_dir / phase / "history.json").read_text()))
    return max_epochs


def train_three_phase(representer, tagger, adversary, train: AdversarialData, valid: AdversarialData,
                      run_dir: str | Path, *, class_weights=None, lam: float = 1.0,
                      max_epochs: Sequence[int] = (20, 20, 40), patience: Sequence[int] = (5, 5, 10), seed: int = 0,
                      selection: str = "loss", config: dict | None = None, progress: bool = True,
                      **settings) -> dict:
    """The three-phase procedure, each phase a `run_training` in run_dir/p1, p2, p3 (so a
    killed run resumes in the phase it was in); returns the metrics.

    P1 stops early on validation L_deid, P2 on validation L_adv, P3 on the validation P3b loss
    (under `selection` "f1": P1 on validation PHI F1, P3 on `f1_loss`), each with its best
    epoch's weights restored. A P2 epoch draws the pairs `automatic_passes`
    times, as an audit attack does, so the adversaries P3 starts from are trained as long.
    run_dir/models gets `representer.keras`, `tagger.keras`, `adversary.keras` (after P3) and
    `representer_p1.keras` (after P1, the audits' positive control); run_dir gets config.json
    (`config` adds entries), history.json (every epoch of every phase, with its "phase") and
    metrics.json (P3's best epoch, with "phases": each phase's metrics and "seconds": each
    phase's training time).
    `settings` are the optimizer settings of `_Procedure`.
    """
    run_dir = Path(run_dir)
    p2_passes = automatic_passes(len(train.pairs), settings.get("batch_size", BATCH_SIZE))
    _write_config(run_dir, {"procedure": "three-phase", "lambda": lam, "seed": seed, "p2_passes": p2_passes,
                            "max_epochs": dict(zip(PHASES, max_epochs)), "patience": dict(zip(PHASES, patience)),
                            **({"selection": selection} if selection != "loss" else {}),  # earlier runs resume
                            **settings, **(config or {})})
    procedures = {"p1": (DeidTraining(representer, tagger, class_weights, selection, **settings), train, valid),
                  "p2": (AdversaryTraining(representer, adversary, p2_passes, **settings), train.pairs, valid.pairs),
                  "p3": (AlternatingTraining(representer, tagger, adversary, class_weights, lam, selection, **settings),
                         train, valid)}
    metrics, history = {}, []
    for phase, epochs, wait in zip(PHASES, max_epochs, patience):
        procedure, train_data, valid_data = procedures[phase]
        metrics[phase] = run_training(procedure, train_data, valid_data, run_dir / phase, seed=seed,
                                      max_epochs=_final_epochs(run_dir, phase, epochs), patience=wait,
                                      progress=progress)
        history += [{"phase": phase, **record} for record in json.loads((run_dir / phase / "history.json").read_text())]
        if phase == "p1":
            (run_dir / "models").mkdir(exist_ok=True)
            shutil.copyfile(run_dir / "p1" / "models" / "representer.keras",
                            run_dir / "models" / "representer_p1.keras")
    for name in ("representer", "tagger", "adversary"):
        shutil.copyfile(run_dir / "p3" / "models" / f"{name}.keras", run_dir / "models" / f"{name}.keras")
    seconds = {phase: sum(r["seconds"] for r in history if r["phase"] == phase) for phase in PHASES}
    summary = {**metrics["p3"], "phases": metrics, "seconds": seconds}
    _write_json(run_dir / "history.json", history)
    _write_json(run_dir / "metrics.json", summary)
    return summary


def train_dann(representer, tagger, adversary, train: AdversarialData, valid: AdversarialData, run_dir: str | Path,
               *, class_weights=None, lam: float = 1.0, max_epochs: int = 40, patience: int = 10, seed: int = 0,
               selection: str = "loss", config: dict | None = None, progress: bool = True, **settings) -> dict:
    """DANN training in `run_dir` (files as `run_training` writes them), early stopping on the
    same validation loss as P3: L_deid + lambda * |L_adv - log 2| (`f1_loss` under `selection`
    "f1"). Returns the metrics."""
    procedure = DANNTraining(representer, tagger, adversary, class_weights, lam, selection, **settings)
    return run_training(procedure, train, valid, run_dir, max_epochs=max_epochs, patience=patience, seed=seed,
                        config=config, progress=progress)
