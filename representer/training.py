"""Training plumbing shared by every training procedure (plain tagger, three-phase, DANN): the
`TrainingProcedure` interface, the epoch loop with early stopping, checkpoints and resume, and
the plain tagger procedure, which also trains across the workers of a `tf.distribute` cluster."""

from __future__ import annotations

import abc
import contextlib
import contextvars
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from deidpool.representer.dataset import BATCH_SIZE, SentenceData, inference_batches, training_batches
from deidpool.representer.distribution import gathered, replica_batches, run_alike
from deidpool.representer.progress import progress_bar
from deidpool.representer.tagger import tagger_loss

CHECKPOINT = "checkpoints/latest.npz"
RESUMABLE_EXIT_STATUS = 75  # EX_TEMPFAIL: the commands' exit status after a time budget ran out
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


class TimeBudgetExhausted(Exception):
    """Training stopped cleanly, its last epoch checkpointed, because the next epoch would not
    finish inside the time budget; rerunning the same command resumes it."""


def stop_if_over_budget(next_epoch_seconds: float, message: str) -> None:
    """Raise `TimeBudgetExhausted(message)` when, inside a `time_budget`, an epoch of
    `next_epoch_seconds` would end past the deadline."""
    if _over_budget(next_epoch_seconds):
        raise TimeBudgetExhausted(message)


def _over_budget(next_epoch_seconds: float) -> bool:
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() + next_epoch_seconds > deadline


@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Within the block, every `run_training` stops (raising `TimeBudgetExhausted`) after the
    last epoch that it expects to end `seconds` from now: a long run lives in chunks of
    processes (a 10-minute GPU lease, a CPU session). None: no budget."""
    token = _DEADLINE.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class TrainingProcedure(abc.ABC):
    """One way of training a set of models, driven epoch by epoch by `run_training`."""

    name = "procedure"
    # Early stopping watches `monitor` in each epoch's record; "min": lower is better, "max": higher.
    monitor, monitor_mode = "val_loss", "min"
    # Reduce on plateau: every `plateau_patience` epochs without improvement on the best, every
    # optimizer's learning rate is multiplied by `plateau_decay`; None: constant learning rates.
    plateau_decay: float | None = None
    plateau_patience = 1
    # The `tf.distribute` strategy whose scope the models were built in; `run_training` runs on
    # every worker of its cluster. The default: one device, no distribution.
    strategy: tf.distribute.Strategy = tf.distribute.get_strategy()

    @abc.abstractmethod
    def models(self) -> dict[str, keras.Model]:
        """The trained models by name: checkpointed, restored to their best epoch, saved."""

    @abc.abstractmethod
    def optimizers(self) -> dict[str, keras.optimizers.Optimizer]:
        """The optimizers by name, already built, so that a checkpoint can restore their state."""

    @abc.abstractmethod
    def train_epoch(self, train, epoch: int, rng: np.random.Generator) -> dict[str, float]:
        """One pass over `train`; all its randomness (shuffling, sampling) comes from `rng`,
        which is seeded per epoch. Returns training metrics, e.g. {"loss": ...}."""

    @abc.abstractmethod
    def validate(self, valid) -> dict[str, float]:
        """Metrics on `valid`, e.g. {"loss": ..., "f1": ...}; recorded with a "val_" prefix."""

    def config(self) -> dict:
        """The procedure's hyperparameters, for config.json (JSON values)."""
        return {}


def run_training(procedure: TrainingProcedure, train, valid, run_dir: str | Path, *, max_epochs: int,
                 patience: int, seed: int = 0, config: dict | None = None, progress: bool = True,
                 on_epoch: Callable[[dict], None] | None = None,
                 stop_when: Callable[[dict], bool] | None = None) -> dict:
    """Train epoch by epoch with early stopping on the procedure's `monitor` (and its learning
    rates decayed on plateaus, if it says so), resuming from the checkpoint in `run_dir` if
    there is one; returns the final metrics. Training also ends after the first epoch whose
    record `stop_when(record)` holds (e.g. an audit's positive control once broken).

    After every epoch the model and optimizer variables (random seed states included), the
    best weights, the history and the early-stopping state go to run_dir/checkpoints in one
    atomic write, so a rerun after a crash continues from the last completed epoch, with
    the same epoch randomness (drawn from `seed` and the epoch number) as an uninterrupted
    run. At the end the models get their best epoch's weights and are saved as
    run_dir/models/<name>.keras. `run_dir` also gets config.json (`config` adds entries,
    e.g. data sources), history.json (one record per epoch) and metrics.json (the best
    epoch's record). `on_epoch(record)` is called with each new epoch's record once its
    checkpoint and history are written (not for epochs restored from a checkpoint). Inside a
    `time_budget`, it raises `TimeBudgetExhausted` after a checkpointed epoch when another
    epoch as long as the longest so far would end past the deadline. Call
    `keras.utils.set_random_seed` before building the models for reproducible initial weights;
    run_training does not reseed the global generators, as that would also drop TensorFlow's
    compiled kernels (seconds per compiled function).

    In a multi-worker cluster (`procedure.strategy`) every worker calls run_training alike. Only
    the chief writes `run_dir` and calls `on_epoch`; the others read the chief's checkpoint from
    it (a shared folder) to resume. The procedure's metrics are the same on every worker, and
    the time budget is checked by all together, so all stop after the same epoch.
    """
    if max_epochs < 1 or patience < 1:
        raise ValueError("max_epochs and patience must be at least 1")
    monitor, better = procedure.monitor, _IMPROVES[procedure.monitor_mode]
    run_dir = Path(run_dir)
    chief = procedure.strategy.extended.should_checkpoint
    (_write_config if chief else _check_config)(
        run_dir, {"procedure": procedure.name, **procedure.config(), "max_epochs": max_epochs, "patience": patience,
                  "monitor": monitor, "monitor_mode": procedure.monitor_mode, "plateau_decay": procedure.plateau_decay,
                  "plateau_patience": procedure.plateau_patience, "seed": seed, **(config or {})})
    models, optimizers = procedure.models(), procedure.optimizers()
    state = {"history": [], "best_epoch": 0, "best": None, "wait": 0}
    best_weights = {name: model.get_weights() for name, model in models.items()}
    if (run_dir / CHECKPOINT).exists():
        state, best_weights = _load_checkpoint(run_dir / CHECKPOINT, models, optimizers)
    resumed = gathered(procedure.strategy, [len(state["history"])])
    if np.any(resumed != resumed[0]):
        raise RuntimeError(f"the workers resume {run_dir} after different epochs ({resumed[:, 0].astype(int).tolist()}"
                           "): every worker must see the chief's run directory")
    what = procedure.name if procedure.name == run_dir.name else f"{procedure.name} {run_dir.name}"  # adversary p2
    bar = progress_bar(total=max_epochs, initial=len(state["history"]), desc=what, unit="epoch", disable=not progress)
    longest = max((r["seconds"] for r in state["history"]), default=0.0)

    def stopped() -> bool:
        return stop_when is not None and bool(state["history"]) and stop_when(state["history"][-1])

    while len(state["history"]) < max_epochs and state["wait"] < patience and not stopped():
        if gathered(procedure.strategy, [_over_budget(longest)]).any():
            raise TimeBudgetExhausted(f"{procedure.name}: stopped after epoch {len(state['history'])} of at most "
                                      f"{max_epochs} to stay within the time budget; rerun to resume")
        epoch = len(state["history"]) + 1
        started = time.perf_counter()
        record = {"epoch": epoch, **procedure.train_epoch(train, epoch, np.random.default_rng([seed, epoch]))}
        record.update({f"val_{name}": value for name, value in procedure.validate(valid).items()})
        record["seconds"] = time.perf_counter() - started
        longest = max(longest, record["seconds"])
        if monitor not in record:
            raise KeyError(f"monitor {monitor!r} is not among the metrics {sorted(record)}")
        state["history"].append(record)
        if state["best"] is None or better(record[monitor], state["best"]):
            state.update(best=record[monitor], best_epoch=epoch, wait=0)
            best_weights = {name: model.get_weights() for name, model in models.items()}
        else:
            state["wait"] += 1
            if procedure.plateau_decay is not None and state["wait"] % procedure.plateau_patience == 0:
                for optimizer in optimizers.values():  # the rate is an optimizer variable: checkpointed
                    optimizer.learning_rate = learning_rate(optimizer) * procedure.plateau_decay
        if chief:
            _save_checkpoint(run_dir / CHECKPOINT, state, models, optimizers, best_weights)
            _write_json(run_dir / "history.json", state["history"])
            if on_epoch is not None:
                on_epoch(record)
        bar.update()
        bar.set_postfix({name: f"{value:.4g}" for name, value in record.items() if name not in ("epoch", "seconds")})
    bar.close()
    for name, model in models.items():
        model.set_weights(best_weights[name])
    metrics = {**state["history"][state["best_epoch"] - 1], "best_epoch": state["best_epoch"],
               "epochs": len(state["history"]), "stopped_early": state["wait"] >= patience}
    if chief:
        (run_dir / "models").mkdir(exist_ok=True)
        for name, model in models.items():
            model.save(run_dir / "models" / f"{name}.keras")
        _write_json(run_dir / "metrics.json", metrics)
    return metrics


def learning_rate(optimizer: keras.optimizers.Optimizer) -> float:
    """The optimizer's current learning rate (its variable may be mirrored across replicas)."""
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


_IMPROVES = {"min": lambda value, best: value < best, "max": lambda value, best: value > best}


def _write_json(path: Path, value) -> None:
    """Write `value` as JSON through a temporary file, so readers never see half a file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n")
    os.replace(temporary, path)


def _write_config(run_dir: Path, config: dict) -> None:
    """Write config.json; a resumed run must have the same config except for `max_epochs`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_json(run_dir / "config.json", _check_config(run_dir, config))


def _check_config(run_dir: Path, config: dict) -> dict:
    """`config` as JSON values, once checked against the run's config.json if there is one."""
    path = run_dir / "config.json"
    config = json.loads(json.dumps(config))
    if path.exists():
        previous = json.loads(path.read_text())
        changed = sorted(key for key in config.keys() | previous.keys()
                         if key != "max_epochs" and config.get(key) != previous.get(key))
        if changed:
            raise ValueError(f"{run_dir} holds a run with another config (differs in: {', '.join(changed)})")
    return config


def _save_checkpoint(path: Path, state: dict, models: dict, optimizers: dict, best_weights: dict) -> None:
    arrays = {"state": np.array(json.dumps(state))}
    for name, model in models.items():
        arrays.update(_numbered(f"model/{name}", [v.numpy() for v in model.variables]))
        arrays.update(_numbered(f"best/{name}", best_weights[name]))
    for name, optimizer in optimizers.items():
        arrays.update(_numbered(f"optimizer/{name}", [v.numpy() for v in optimizer.variables]))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as file:
        np.savez(file, **arrays)
    os.replace(temporary, path)


def _load_checkpoint(path: Path, models: dict, optimizers: dict) -> tuple[dict, dict]:
    """Restore the variables saved by `_save_checkpoint`; returns the state and best weights."""
    with np.load(path) as arrays:
        for name, model in models.items():
            _assign(model.variables, _unnumbered(arrays, f"model/{name}"), f"model {name}")
        for name, optimizer in optimizers.items():
            _assign(optimizer.variables, _unnumbered(arrays, f"optimizer/{name}"), f"optimizer {name}")
        best_weights = {name: _unnumbered(arrays, f"best/{name}") for name in models}
        return json.loads(str(arrays["state"])), best_weights


def _numbered(prefix: str, values: list[np.ndarray]) -> dict[str, np.ndarray]:
    return {f"{prefix}/{i}": value for i, value in enumerate(values)}


def _unnumbered(arrays, prefix: str) -> list[np.ndarray]:
    count = sum(1 for key in arrays.files if key.startswith(prefix + "/"))
    return [arrays[f"{prefix}/{i}"] for i in range(count)]


def _assign(variables, values: list[np.ndarray], what: str) -> None:
    if len(variables) != len(values) or any(v.shape != tuple(a.shape) for v, a in zip(variables, values)):
        raise ValueError(f"the checkpoint does not fit the {what}: its variables differ")
    for variable, value in zip(variables, values):
        variable.assign(value)


# What a tagger's early stopping may watch (TaggerTraining), and whether higher or lower is better
MONITORS = {"val_f1": "max", "val_tag_f1": "max", "val_loss": "min"}


class TaggerTraining(TrainingProcedure):
    """Trains a `Tagger` alone on `SentenceData` (the non-private tagger on raw embeddings, or
    the pooled tagger on representation vectors): Nadam with gradient-norm clipping on
    `tagger_loss`. Validation reports the loss, the token-level binary PHI F1 of the Viterbi
    tags (a token is PHI when its tag is not "O", tag id 0; `f1`) and their exact-tag F1 (a PHI
    token counts when its tag, type and B/I, is the gold one; `tag_f1`).

    The learning rate 0.002 is Nadam's default in Keras 2, which the reference used. Early
    stopping keeps the epoch of the best validation PHI F1 (the validation loss, weighted by the
    class weights, disagrees with it: on PhysioNet it bottomed out epochs before F1 peaked), or
    with `monitor` "val_tag_f1" of the best exact-tag F1, or "val_loss" of the lowest loss, and
    the learning rate halves after every third epoch in a row that does not improve it.

    Created inside `strategy.scope()`, where its tagger was built, it trains under that
    `tf.distribute` strategy (as Keras optimizers take the strategy of their scope): every
    batch of `batch_size` sentences is split between the replicas (`replica_batches`), each
    replica's loss is its share of the batch's mean loss, and the gradients are summed over the
    replicas before they are clipped, so a step follows the one-device step up to rounding
    (dropout masks aside: each replica draws its own). Outside any scope: one device.
    """

    name = "tagger"
    plateau_decay, plateau_patience = 0.5, 3

    def __init__(self, tagger, class_weights=None, learning_rate=0.002, clipnorm=1.0, batch_size=BATCH_SIZE,
                 monitor: str = "val_f1"):
        if monitor not in MONITORS:
            raise ValueError(f"monitor must be one of {', '.join(MONITORS)}, got {monitor!r}")
        self.tagger, self.monitor, self.monitor_mode = tagger, monitor, MONITORS[monitor]
        self.class_weights = None if class_weights is None else np.asarray(class_weights, dtype=np.float32)
        self.learning_rate, self.clipnorm, self.batch_size = learning_rate, clipnorm, batch_size
        self.strategy = tf.distribute.get_strategy()
        self.optimizer = _NadamClippingSums(learning_rate, clipnorm)
        self.optimizer.build(tagger.trainable_variables)
        self._compiled = {}

    def models(self):
        return {"tagger": self.tagger}

    def optimizers(self):
        return {"optimizer": self.optimizer}

    def config(self):
        return {"learning_rate": self.learning_rate, "clipnorm": self.clipnorm, "batch_size": self.batch_size,
                "class_weights": None if self.class_weights is None else self.class_weights.tolist(),
                "tagger": self.tagger.get_config()}

    def _compile(self, step, batches):
        """`step` run by every replica on its part of a batch (`step` sums its results over the
        replicas), as a `tf.function` traced once for batches of every shape in `batches` (as
        split by `replica_batches`)."""
        if step not in self._compiled:
            self._compiled[step] = tf.function(lambda batch: run_alike(self.strategy, step, batch),
                                               input_signature=[batches.element_spec])
        return self._compiled[step]

    def _train_step(self, batch):
        """The batch's mean loss and sentences (summed over the replicas); updates the tagger."""
        replica = tf.distribute.get_replica_context()
        sentences = tf.shape(batch["mask"])[0]
        batch_sentences = replica.all_reduce("SUM", sentences)
        share = tf.cast(sentences, tf.float32) / tf.cast(batch_sentences, tf.float32)
        with tf.GradientTape() as tape:
            # multiply_no_nan: an empty part of a batch (fewer sentences than replicas) has a NaN mean
            loss = tf.math.multiply_no_nan(tagger_loss(self.tagger, batch, self.class_weights, training=True), share)
        variables = self.tagger.trainable_variables
        # The optimizer sums the gradients over the replicas; static shapes let it do so in one
        # collective operation.
        self.optimizer.apply([tf.ensure_shape(gradient, variable.shape)
                              for gradient, variable in zip(tape.gradient(loss, variables), variables)], variables)
        return replica.all_reduce("SUM", loss), batch_sentences

    def _validation_step(self, batch):
        """The batch's summed loss (float64) and (tp, fp, fn) of its PHI tokens and of their exact
        tags (2 x 3), summed over the replicas."""
        sentences = tf.cast(tf.shape(batch["mask"])[0], tf.float64)
        loss = tf.math.multiply_no_nan(tf.cast(tagger_loss(self.tagger, batch, self.class_weights), tf.float64),
                                       sentences)
        predicted = self.tagger.predict_tags(batch)
        counts = tf.stack([phi_token_counts(predicted, batch["tags"], batch["mask"]),
                           tag_token_counts(predicted, batch["tags"], batch["mask"])])
        replica = tf.distribute.get_replica_context()
        return replica.all_reduce("SUM", loss), replica.all_reduce("SUM", counts)

    def train_epoch(self, train: SentenceData, epoch, rng):
        total = 0.0
        batches = replica_batches(self.strategy, training_batches(train, rng, self.batch_size))
        step = self._compile(self._train_step, batches)
        for batch in batches:
            loss, sentences = step(batch)
            total += float(loss) * int(sentences)
        return {"loss": total / len(train), "learning_rate": learning_rate(self.optimizer)}

    def validate(self, valid: SentenceData):
        batches = replica_batches(self.strategy, inference_batches(valid))
        loss, counts = summed_loss_and_counts(map(self._compile(self._validation_step, batches), batches), len(valid))
        return {"loss": loss, "f1": f1_of(counts[0]), "tag_f1": f1_of(counts[1])}


class _NadamClippingSums(keras.optimizers.Nadam):
    """Nadam that clips each variable's gradient to norm `clipnorm` once the replicas' gradients
    are summed (Keras's own `clipnorm` clips each replica's before the sum): on one device, the
    same as `Nadam(clipnorm=clipnorm)`."""

    def __init__(self, learning_rate, clipnorm):
        super().__init__(learning_rate, name="nadam")
        self.summed_clipnorm = clipnorm

    def update_step(self, gradient, variable, learning_rate):
        super().update_step(tf.clip_by_norm(gradient, self.summed_clipnorm), variable, learning_rate)


def loss_and_phi_f1(step, batches, sentences: int) -> tuple[float, float]:
    """Mean loss per sentence and token-level binary PHI F1 over labeled `batches` of
    `sentences` sentences; `step(batch)` returns the batch's mean loss and Viterbi paths."""
    def totals(batch):
        loss, paths = step(batch)
        return float(loss) * len(batch["index"]), phi_token_counts(paths, batch["tags"], batch["mask"])

    return summed_loss_and_phi_f1(map(totals, batches), sentences)


def summed_loss_and_phi_f1(totals, sentences: int) -> tuple[float, float]:
    """Mean loss per sentence and PHI F1 from each batch's (summed loss, (tp, fp, fn))."""
    loss, counts = summed_loss_and_counts(totals, sentences)
    return loss, f1_of(counts)


def summed_loss_and_counts(totals, sentences: int) -> tuple[float, np.ndarray]:
    """Mean loss per sentence and the summed counts from each batch's (summed loss, counts)."""
    total, counts = 0.0, 0
    for loss, batch_counts in totals:
        total += float(loss)
        counts = counts + np.asarray(batch_counts, dtype=np.int64)
    return total / sentences, counts


def f1_of(counts) -> float:
    """F1 from (tp, fp, fn)."""
    tp, fp, fn = (int(count) for count in counts)
    return float(2 * tp / max(2 * tp + fp + fn, 1))


def tag_token_counts(predicted, gold, mask) -> tf.Tensor:
    """(tp, fp, fn) int64 of real PHI tokens by exact tag: a predicted PHI tag is a true positive
    where it is the gold tag, else a false positive; a gold PHI tag not predicted as it is, a false
    negative (a PHI token of the wrong type or B/I counts as both)."""
    mask = tf.cast(mask, tf.bool)
    same = tf.equal(predicted, gold)
    predicted_phi, gold_phi = tf.not_equal(predicted, 0) & mask, tf.not_equal(gold, 0) & mask
    return tf.stack([tf.math.count_nonzero(predicted_phi & same), tf.math.count_nonzero(predicted_phi & ~same),
                     tf.math.count_nonzero(gold_phi & ~same)])


def phi_token_counts(predicted, gold, mask) -> tf.Tensor:
    """(tp, fp, fn) int64 of real tokens tagged PHI (tag id not 0) in `predicted` against `gold`."""
    mask = tf.cast(mask, tf.bool)
    predicted, gold = tf.not_equal(predicted, 0) & mask, tf.not_equal(gold, 0) & mask
    return tf.stack([tf.math.count_nonzero(predicted & gold), tf.math.count_nonzero(predicted & ~gold),
                     tf.math.count_nonzero(~predicted & gold)])
