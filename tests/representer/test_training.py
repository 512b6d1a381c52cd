"""Tests for the training loop (run files, early stopping, resume) and the plain tagger procedure."""

import json

import keras
import numpy as np
import pytest

from deidpool.representer.dataset import SentenceData
from deidpool.representer.tagger import build_tagger, compute_class_weights, tag_sentences
from deidpool.representer.training import (
    TaggerTraining,
    TimeBudgetExhausted,
    TrainingProcedure,
    phi_token_counts,
    run_training,
    tag_token_counts,
    time_budget,
)

INPUT_DIM, TAGS = 8, 3


class ScriptedProcedure(TrainingProcedure):
    """Sets its one weight to the epoch number; validation losses follow a script."""

    name = "scripted"

    def __init__(self, losses):
        self.losses = losses
        self.model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)])

    def models(self):
        return {"model": self.model}

    def optimizers(self):
        return {}

    def train_epoch(self, train, epoch, rng):
        self.model.set_weights([np.full((1, 1), epoch, dtype="float32")])
        return {"loss": float(epoch)}

    def validate(self, valid):
        return {"loss": self.losses[int(self.model.get_weights()[0].item()) - 1]}


def test_early_stopping_restores_the_best_epoch_and_writes_the_run_files(tmp_path):
    procedure = ScriptedProcedure([3.0, 1.0, 2.0, 2.5, 0.5])
    metrics = run_training(procedure, None, None, tmp_path, max_epochs=5, patience=2, progress=False)
    assert metrics == {**json.loads((tmp_path / "metrics.json").read_text())}
    assert metrics["best_epoch"] == 2 and metrics["epochs"] == 4 and metrics["stopped_early"]
    assert metrics["val_loss"] == 1.0
    assert procedure.model.get_weights()[0].item() == 2.0
    history = json.loads((tmp_path / "history.json").read_text())
    assert [record["val_loss"] for record in history] == [3.0, 1.0, 2.0, 2.5]
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["procedure"] == "scripted" and config["patience"] == 2
    saved = keras.saving.load_model(tmp_path / "models" / "model.keras")
    assert saved.get_weights()[0].item() == 2.0
    rerun = ScriptedProcedure(procedure.losses)
    assert run_training(rerun, None, None, tmp_path, max_epochs=5, patience=2, progress=False) == metrics
    assert rerun.model.get_weights()[0].item() == 2.0  # restored from the checkpoint, nothing retrained


class SlowProcedure(ScriptedProcedure):
    """A scripted procedure whose epochs take `seconds` of a fake monotonic clock."""

    def __init__(self, losses, clock, seconds):
        super().__init__(losses)
        self.clock, self.seconds = clock, seconds

    def train_epoch(self, train, epoch, rng):
        self.clock.now += self.seconds
        return super().train_epoch(train, epoch, rng)


def test_a_time_budget_stops_after_the_last_epoch_that_fits_and_reruns_finish_the_same(tmp_path, monkeypatch):
    from deidpool.representer import training as training_module

    clock = type("Clock", (), {"now": 0.0})()
    monkeypatch.setattr(training_module.time, "monotonic", lambda: clock.now)
    monkeypatch.setattr(training_module.time, "perf_counter", lambda: clock.now)
    losses = [5.0, 4.0, 3.0, 3.5, 2.0, 2.5, 2.6]
    whole = run_training(ScriptedProcedure(losses), None, None, tmp_path / "whole", max_epochs=7, patience=2,
                         progress=False)
    chunks = []
    while True:  # 25 s a chunk, 10 s an epoch: two epochs per process, the third would not fit
        started = len(json.loads((tmp_path / "chunked" / "history.json").read_text())) if chunks else 0
        try:
            with time_budget(25):
                result = run_training(SlowProcedure(losses, clock, 10.0), None, None, tmp_path / "chunked",
                                      max_epochs=7, patience=2, progress=False)
            chunks.append(("done", started))
            break
        except TimeBudgetExhausted as stopped:
            assert "rerun to resume" in str(stopped)
            chunks.append(("stopped", started))
    assert chunks == [("stopped", 0), ("stopped", 2), ("stopped", 4), ("done", 6)]
    strip = lambda metrics: {k: v for k, v in metrics.items() if k != "seconds"}  # noqa: E731
    assert strip(result) == strip(whole) and result["best_epoch"] == 5 and result["epochs"] == 7


def test_on_epoch_sees_each_new_epoch_once_it_is_checkpointed(tmp_path):
    seen = []

    def on_epoch(record):
        history = json.loads((tmp_path / "history.json").read_text())
        seen.append((record["epoch"], history[-1] == record, (tmp_path / "checkpoints" / "latest.npz").exists()))

    losses = [3.0, 2.0, 1.0]
    run_training(ScriptedProcedure(losses), None, None, tmp_path, max_epochs=2, patience=5, progress=False,
                 on_epoch=on_epoch)
    run_training(ScriptedProcedure(losses), None, None, tmp_path, max_epochs=3, patience=5, progress=False,
                 on_epoch=on_epoch)  # resumed: epochs 1-2 come from the checkpoint
    assert seen == [(1, True, True), (2, True, True), (3, True, True)]


def test_stop_when_ends_training_after_the_first_epoch_it_holds_for_also_on_resume(tmp_path):
    def broken(record):
        return record["val_loss"] < 2.5

    losses = [3.0, 2.0, 1.0, 0.5]
    metrics = run_training(ScriptedProcedure(losses), None, None, tmp_path, max_epochs=4, patience=4, progress=False,
                           stop_when=broken)
    assert metrics["epochs"] == 2 and metrics["best_epoch"] == 2 and not metrics["stopped_early"]
    rerun = ScriptedProcedure(losses)
    assert run_training(rerun, None, None, tmp_path, max_epochs=4, patience=4, progress=False,
                        stop_when=broken) == metrics
    assert len(json.loads((tmp_path / "history.json").read_text())) == 2


def test_a_run_dir_refuses_another_config_and_unknown_monitors(tmp_path):
    run_training(ScriptedProcedure([1.0]), None, None, tmp_path, max_epochs=1, patience=1, progress=False)
    with pytest.raises(ValueError, match="patience"):
        run_training(ScriptedProcedure([1.0]), None, None, tmp_path, max_epochs=1, patience=3, progress=False)
    watching_f1 = ScriptedProcedure([1.0])
    watching_f1.monitor = "val_f1"
    with pytest.raises(KeyError, match="val_f1"):
        run_training(watching_f1, None, None, tmp_path / "other", max_epochs=1, patience=1, progress=False)


class ScoredProcedure(ScriptedProcedure):
    """Validation reports a scripted score that should grow; one optimizer whose learning rate
    early stopping may decay."""

    monitor, monitor_mode, plateau_decay, plateau_patience = "val_score", "max", 0.5, 2

    def __init__(self, scores):
        super().__init__(scores)
        self.optimizer = keras.optimizers.SGD(0.8)
        self.optimizer.build(self.model.trainable_variables)

    def optimizers(self):
        return {"sgd": self.optimizer}

    def train_epoch(self, train, epoch, rng):
        return {**super().train_epoch(train, epoch, rng), "rate": float(self.optimizer.learning_rate)}

    def validate(self, valid):
        return {"score": super().validate(valid)["loss"]}


def test_a_maximized_monitor_keeps_the_highest_epoch_and_decays_the_rate_on_plateaus(tmp_path):
    scores = [0.5, 0.7, 0.6, 0.8, 0.75, 0.7, 0.9, 0.85, 0.8, 0.8, 0.8]
    metrics = run_training(ScoredProcedure(scores), None, None, tmp_path, max_epochs=11, patience=4, progress=False)
    assert metrics["best_epoch"] == 7 and metrics["val_score"] == 0.9 and metrics["epochs"] == 11
    rates = [record["rate"] for record in json.loads((tmp_path / "history.json").read_text())]
    # halved after the second epoch in a row without a new best (epochs 6, 9, 11)
    np.testing.assert_allclose(rates, [0.8] * 6 + [0.4] * 3 + [0.2] * 2)
    config = json.loads((tmp_path / "config.json").read_text())
    assert [config[key] for key in ("monitor", "monitor_mode", "plateau_decay", "plateau_patience")] == [
        "val_score", "max", 0.5, 2]
    resumed = ScoredProcedure(scores)  # the decayed rate is restored with the optimizer's variables
    run_training(resumed, None, None, tmp_path, max_epochs=11, patience=4, progress=False)
    assert float(resumed.optimizer.learning_rate) == pytest.approx(0.1)


def test_phi_token_counts():
    predicted, gold = np.array([[0, 1, 2, 0, 1]]), np.array([[0, 2, 0, 1, 1]])
    mask = np.array([[True, True, True, True, False]])
    np.testing.assert_array_equal(phi_token_counts(predicted, gold, mask), [1, 1, 1])


def test_tag_token_counts_want_the_exact_tag():
    """A PHI token of the wrong tag is a false positive and a false negative; a found one of the
    right tag a true positive; masked tokens count for nothing."""
    predicted, gold = np.array([[0, 1, 2, 0, 3, 2]]), np.array([[0, 2, 0, 1, 3, 2]])
    mask = np.array([[True, True, True, True, True, False]])
    np.testing.assert_array_equal(tag_token_counts(predicted, gold, mask), [1, 2, 2])


def learnable(sentences, seed):
    """Tags 0-2 that the features spell out (one-hot plus noise), random casing."""
    rng = np.random.default_rng(seed)
    tags = [rng.choice(TAGS, size=n, p=[0.7, 0.2, 0.1]) for n in rng.integers(1, 9, size=sentences)]
    features = [np.eye(INPUT_DIM, dtype="float32")[t] + rng.normal(0, 0.3, (len(t), INPUT_DIM)) for t in tags]
    return SentenceData.from_arrays(features, [rng.integers(0, 7, len(t)) for t in tags], tags)


TRAIN, VALID = learnable(160, 0), learnable(40, 1)


def tagger_training(seed):
    keras.utils.set_random_seed(seed)
    tagger = build_tagger(INPUT_DIM, TAGS, lstm_units=4, recurrent_dropout=0.1, dropout=0.1)
    return TaggerTraining(tagger, compute_class_weights(TRAIN.tag_counts(TAGS)), learning_rate=0.05)


def variables(procedure):
    return procedure.tagger.variables + procedure.optimizer.variables


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """A procedure, its initial variable values and an uninterrupted 4-epoch run from them."""
    procedure = tagger_training(seed=0)
    initial = [v.numpy() for v in variables(procedure)]
    run_dir = tmp_path_factory.mktemp("uninterrupted")
    run_training(procedure, TRAIN, VALID, run_dir, max_epochs=4, patience=10, seed=7, progress=False)
    return procedure, initial, procedure.tagger.get_weights(), json.loads((run_dir / "history.json").read_text())


def test_tagger_training_learns_the_pattern(uninterrupted):
    procedure, _, _, history = uninterrupted
    assert history[-1]["loss"] < history[0]["loss"] / 2
    assert max(record["val_f1"] for record in history) > 0.9
    assert max(record["val_tag_f1"] for record in history) > 0.8
    assert all(record["val_tag_f1"] <= record["val_f1"] for record in history)  # an exact tag is a found PHI token
    predicted = np.concatenate(tag_sentences(procedure.tagger, VALID))
    assert np.mean(predicted == VALID.tags) > 0.9


def test_a_tagger_watches_the_monitor_it_is_given(tmp_path):
    tagger = build_tagger(INPUT_DIM, TAGS, lstm_units=4)
    assert TaggerTraining(tagger).monitor == "val_f1"
    procedure = TaggerTraining(tagger, monitor="val_tag_f1")
    run_training(procedure, TRAIN, VALID, tmp_path, max_epochs=1, patience=1, progress=False)
    assert json.loads((tmp_path / "config.json").read_text())["monitor"] == "val_tag_f1"
    assert (TaggerTraining(tagger, monitor="val_loss").monitor_mode, procedure.monitor_mode) == ("min", "max")
    with pytest.raises(ValueError, match="monitor must be one of val_f1, val_tag_f1, val_loss"):
        TaggerTraining(tagger, monitor="loss")


def test_resumed_run_ends_like_an_uninterrupted_one(uninterrupted, tmp_path):
    procedure, initial, final_weights, history = uninterrupted
    for variable, value in zip(variables(procedure), initial):
        variable.assign(value)
    run_training(procedure, TRAIN, VALID, tmp_path, max_epochs=2, patience=10, seed=7, progress=False)
    # "Crash": a fresh process would build a fresh tagger, with other initial weights.
    resumed = tagger_training(seed=1)
    run_training(resumed, TRAIN, VALID, tmp_path, max_epochs=4, patience=10, seed=7, progress=False)
    resumed_history = json.loads((tmp_path / "history.json").read_text())
    assert [r["epoch"] for r in resumed_history] == [1, 2, 3, 4]
    assert [{**r, "seconds": 0} for r in resumed_history] == [{**r, "seconds": 0} for r in history]
    for resumed_weight, weight in zip(resumed.tagger.get_weights(), final_weights):
        np.testing.assert_array_equal(resumed_weight, weight)
