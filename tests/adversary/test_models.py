"""Tests for the adversaries T1 and T2, their combination, L_adv and the training step."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from deidpool.adversary.models import (
    DESIGNS,
    LOG_2,
    PAPER,
    POOLED,
    AdversaryT1,
    AdversaryT2,
    CombinedAdversary,
    PartnerOnlyProbe,
    adversary_metrics,
    adversary_outputs,
    adversary_step,
    max_and_mean_over_time,
    train_adversary_step,
)
from deidpool.representer.noise import set_deterministic
from deidpool.representer.representation import build_representer

REPR, DIM, UNITS = 4, 3, 8
numpy = keras.ops.convert_to_numpy


def identity(inputs, training=False):
    return inputs["embeddings"]


def toy_pairs(count, seed, time=6, dim=DIM):
    """Random sequences of 2..`time` tokens vs. themselves (label 1) or vs. a copy with one real
    token moved by a random vector of length 2 (label 0), with garbage at the padded positions."""
    rng = np.random.default_rng(seed)
    original = rng.normal(size=(count, time, dim)).astype("float32")
    lengths = rng.integers(2, time + 1, size=count)
    labels = (np.arange(count) % 2).astype("float32")
    partner = original.copy()
    for row in np.flatnonzero(labels == 0):
        step = rng.normal(size=dim)
        partner[row, rng.integers(lengths[row])] += 2 * step / np.linalg.norm(step)
    return {"original": original, "partner": partner, "shared_original": original, "shared_partner": partner,
            "mask": np.arange(time)[None, :] < lengths[:, None],
            "label": labels}


def adversary_inputs(batch):
    """T1/T2 inputs for the identity representer (representations are the embeddings)."""
    return {"embeddings": batch["original"], "representation": batch["original"],
            "partner_representation": batch["partner"], "mask": batch["mask"]}


def random_inputs(lengths, time, seed):
    rng = np.random.default_rng(seed)
    values = {name: rng.normal(size=(len(lengths), time, size)).astype("float32")
              for name, size in (("embeddings", DIM), ("representation", REPR), ("partner_representation", REPR))}
    return {**values, "mask": np.arange(time)[None, :] < np.array(lengths)[:, None]}


@pytest.fixture(scope="module", params=DESIGNS)
def combined(request):
    return CombinedAdversary(UNITS, request.param)


def test_outputs_are_probabilities_and_combined_is_their_mean(combined):
    outputs = {name: numpy(value) for name, value in combined(random_inputs([2, 5], 5, 0)).items()}
    assert all(value.shape == (2,) and np.all((value > 0) & (value < 1)) for value in outputs.values())
    np.testing.assert_allclose(outputs["combined"], (outputs["t1"] + outputs["t2"]) / 2, rtol=1e-6)


def test_padded_positions_do_not_change_the_outputs(combined):
    padded = random_inputs([3, 6], 6, seed=1)
    alone = {name: value[:1, :3] for name, value in padded.items()}
    for adversary in (combined.t1, combined.t2):
        np.testing.assert_allclose(numpy(adversary(padded))[0], numpy(adversary(alone))[0], atol=1e-6)


@pytest.mark.parametrize("adversary_class", [CombinedAdversary, PartnerOnlyProbe])
def test_a_representation_with_its_mask_attached_is_read_without_a_warning(adversary_class):
    """A representer's output carries its mask; the adversaries read the same mask from
    inputs["mask"] and return one value per pair, so no mask is left to pass on (nor a warning)."""
    representer = build_representer(DIM, repr_size=REPR, lstm_units=4)
    inputs = random_inputs([3, 5], 5, seed=5)
    representation = representer({"embeddings": inputs["embeddings"], "mask": inputs["mask"]})
    assert getattr(representation, "_keras_mask", None) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outputs = adversary_class(UNITS, POOLED)({**inputs, "partner_representation": representation})
    assert all(getattr(value, "_keras_mask", None) is None for value in outputs.values())


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("adversary_class, reads", [
    (AdversaryT1, {"embeddings", "partner_representation"}),
    (AdversaryT2, {"representation", "partner_representation"}),
    (PartnerOnlyProbe, {"partner_representation"})])
def test_each_adversary_reads_exactly_the_inputs_its_task_names(adversary_class, reads, design):
    """T1 must read the original's embeddings and the partner's representation: the original is
    the same in a real and a fake pair, so nothing but the representer can tell them apart."""
    adversary = adversary_class(UNITS, design)
    inputs = random_inputs([3, 5], 5, seed=7)
    base = numpy(keras.ops.convert_to_tensor(_output(adversary(inputs))))
    for name in ("embeddings", "representation", "partner_representation"):
        changed = {**inputs, name: inputs[name] + 1.0}
        differs = not np.allclose(numpy(_output(adversary(changed))), base, atol=1e-6)
        assert differs == (name in reads), name


def test_the_pooled_design_reduces_over_the_kept_positions_only():
    sequence = np.array([[[1.0, -2.0], [3.0, -4.0], [9.0, 9.0]]], dtype="float32")
    pooled = numpy(max_and_mean_over_time(sequence, np.array([[True, True, False]])))
    np.testing.assert_allclose(pooled, [[3.0, -2.0, 2.0, -3.0]])


def test_the_pooled_t2_reads_the_element_wise_difference_and_product():
    """Both designs read the same inputs; only the pooled T2 adds |r - r'| and r * r' per token."""
    inputs = random_inputs([3], 3, seed=4)
    widths = {design: int(AdversaryT2(UNITS, design).pair_features(inputs).shape[-1]) for design in DESIGNS}
    assert widths == {PAPER: 2 * REPR + 1, POOLED: 4 * REPR + 1}


def test_an_unknown_design_is_refused():
    with pytest.raises(ValueError, match="paper, pooled"):
        CombinedAdversary(UNITS, "deep")


def _output(outputs):
    return outputs["combined"] if isinstance(outputs, dict) else outputs


def test_adversaries_load_from_saved_files(combined, tmp_path):
    inputs = random_inputs([4, 2], 4, seed=2)
    expected = numpy(combined(inputs)["combined"])
    combined.save(tmp_path / "adversary.keras")
    loaded = keras.saving.load_model(tmp_path / "adversary.keras")
    assert isinstance(loaded, CombinedAdversary) and loaded.units == UNITS
    assert loaded.design == loaded.t1.design == loaded.t2.design == combined.design
    np.testing.assert_allclose(numpy(loaded(inputs)["combined"]), expected, atol=1e-6)


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("adversary_class", [AdversaryT1, AdversaryT2])
def test_each_adversary_learns_to_tell_identical_from_perturbed_sequences(adversary_class, design):
    keras.utils.set_random_seed(0)
    adversary = adversary_class(UNITS, design)
    adversary.compile(keras.optimizers.Adam(0.02), loss="binary_crossentropy", metrics=[keras.metrics.BinaryAccuracy()])
    train, test = toy_pairs(512, seed=0), toy_pairs(256, seed=1)
    adversary.fit(adversary_inputs(train), train["label"], batch_size=32, epochs=12, verbose=0)
    _, accuracy = adversary.evaluate(adversary_inputs(test), test["label"], verbose=0)
    assert accuracy > 0.9


def test_adversary_loss_is_the_mean_cross_entropy_of_the_single_adversaries():
    outputs = {"t1": np.array([0.9, 0.2, 0.6, 0.4]), "t2": np.array([0.7, 0.6, 0.1, 0.2])}
    outputs["combined"] = (outputs["t1"] + outputs["t2"]) / 2
    labels = np.array([1.0, 0.0, 1.0, 0.0])
    metrics = {name: float(value) for name, value in adversary_metrics(outputs, labels).items()}
    bce = {name: -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)) for name, p in outputs.items()}
    assert metrics["loss"] == pytest.approx((bce["t1"] + bce["t2"]) / 2, rel=1e-5)
    assert metrics["loss_combined"] == pytest.approx(bce["combined"], rel=1e-5)
    assert metrics["loss_t1"] == pytest.approx(bce["t1"], rel=1e-5)
    assert metrics["loss_t2"] == pytest.approx(bce["t2"], rel=1e-5)
    assert (metrics["accuracy"], metrics["accuracy_t1"], metrics["accuracy_t2"]) == (0.75, 1.0, 0.5)


def test_two_adversaries_sure_of_opposite_answers_are_not_a_coin_flip():
    """T1 says "real" and T2 "fake" to every pair: the averaged output is 0.5 and its cross-entropy
    log 2 with no gradient left through the saturated outputs; L_adv must see two bad adversaries."""
    labels = np.array([1.0, 0.0, 1.0, 0.0])
    sure, unsure = np.full(4, 1 - 1e-4, "float32"), np.full(4, 1e-4, "float32")
    metrics = adversary_metrics({"t1": sure, "t2": unsure, "combined": (sure + unsure) / 2}, labels)
    assert float(metrics["loss_combined"]) == pytest.approx(LOG_2, rel=1e-4)
    assert float(metrics["loss"]) > 4.0


def test_the_p3b_penalty_is_taken_per_pair_and_per_adversary():
    """An accurate, over-confident adversary: BCE 0.01 on three pairs and 2.74 on one, so the
    batch mean is log 2 (the old |mean BCE - log 2| was ~0), but every pair is far from a
    coin flip and the per-pair penalty is large."""
    labels = np.array([1.0, 1.0, 0.0, 0.0])
    confident = np.array([0.99, 0.99, 0.01, 1 - np.exp(-(4 * LOG_2 + 3 * np.log(0.99)))]).astype("float32")
    metrics = adversary_metrics({"t1": confident, "t2": confident, "combined": confident}, labels)
    bce = -np.log(np.where(labels == 1, confident, 1 - confident))
    assert abs(float(np.mean(bce)) - LOG_2) < 0.01
    assert float(metrics["penalty"]) == pytest.approx(np.mean(np.abs(bce - LOG_2)), rel=1e-5)
    assert float(metrics["penalty"]) > 0.6
    coin = np.full(4, 0.5, "float32")
    guessing = adversary_metrics({"t1": coin, "t2": confident, "combined": (coin + confident) / 2}, labels)
    assert float(guessing["penalty"]) == pytest.approx(float(metrics["penalty"]) / 2, rel=1e-5)
    alone = adversary_metrics({"combined": coin}, labels)
    assert float(alone["penalty"]) == pytest.approx(0.0, abs=1e-6) and set(alone) == {"loss", "accuracy", "penalty"}


def test_real_pairs_reach_t2_as_two_independent_noisy_passes():
    representer = build_representer(DIM, repr_size=REPR, lstm_units=4)
    batch = toy_pairs(4, seed=3)
    seen = {}

    def spy(inputs, training=False):
        seen.update({name: numpy(value) for name, value in inputs.items()})
        return {"combined": batch["label"]}

    real = batch["label"] == 1
    adversary_outputs(spy, representer, batch)
    assert "partner_embeddings" not in seen
    np.testing.assert_array_equal(seen["embeddings"], batch["original"])
    assert not np.allclose(seen["representation"][real], seen["partner_representation"][real])
    set_deterministic(representer, True)
    adversary_outputs(spy, representer, batch)
    np.testing.assert_allclose(seen["representation"][real], seen["partner_representation"][real], atol=1e-6)


def test_a_reference_computes_the_originals_side_and_the_representer_only_the_shared_one():
    representer = build_representer(DIM, repr_size=REPR, lstm_units=4)
    reference = build_representer(DIM, repr_size=REPR, lstm_units=4)
    set_deterministic(reference, True)
    batch = toy_pairs(4, seed=3)
    seen = {}

    def spy(inputs, training=False):
        seen.update({name: numpy(value) for name, value in inputs.items()})
        return {"combined": batch["label"]}

    adversary_outputs(spy, representer, batch, reference=reference)
    expected = numpy(reference({"embeddings": batch["shared_original"], "mask": batch["mask"]}))
    np.testing.assert_allclose(seen["representation"], expected, atol=1e-6)
    # the shared side is the noisy representer's: two calls differ
    first = seen["partner_representation"]
    adversary_outputs(spy, representer, batch, reference=reference)
    assert not np.allclose(first, seen["partner_representation"])
    np.testing.assert_allclose(seen["representation"], expected, atol=1e-6)


def test_training_step_trains_the_adversary_and_leaves_the_representer_alone():
    representer = build_representer(DIM, repr_size=REPR, lstm_units=4)
    adversary, optimizer = CombinedAdversary(UNITS), keras.optimizers.Adam(0.01)
    batch = toy_pairs(8, seed=4)
    adversary_step(adversary, representer, batch)
    before = [numpy(v) for v in representer.weights], [numpy(v) for v in adversary.weights]
    train_adversary_step(adversary, representer, optimizer, batch)
    for old, new in zip(before[0], representer.weights):
        np.testing.assert_array_equal(old, numpy(new))
    assert any(not np.array_equal(old, numpy(new)) for old, new in zip(before[1], adversary.weights))


def test_combined_adversary_learns_raw_embedding_pairs():
    keras.utils.set_random_seed(0)
    adversary, optimizer = CombinedAdversary(UNITS), keras.optimizers.Adam(0.02)
    step = tf.function(lambda batch: train_adversary_step(adversary, identity, optimizer, batch), reduce_retracing=True)
    train, test = toy_pairs(512, seed=5), toy_pairs(256, seed=6)
    for _ in range(10):
        for start in range(0, 512, 32):
            step({name: value[start:start + 32] for name, value in train.items()})
    metrics = adversary_step(adversary, identity, test)
    assert float(metrics["accuracy"]) > 0.9 and float(metrics["loss"]) < 0.5
