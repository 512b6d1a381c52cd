"""Tests for the trainable Gaussian noise layer."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from deidpool.representer.noise import TrainableGaussianNoise, noise_free_copy, set_deterministic


def _numpy(tensor):
    return keras.ops.convert_to_numpy(tensor)


def _inputs(shape=(2, 3, 4), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


@pytest.mark.parametrize("training", [True, False])
def test_noise_is_on_in_training_and_inference(training):
    layer = TrainableGaussianNoise(0.5)
    x = _inputs()
    first = _numpy(layer(x, training=training))
    second = _numpy(layer(x, training=training))
    assert not np.allclose(first, x)
    assert not np.allclose(first, second)


def test_noise_is_on_in_predict_and_the_graph_draws_fresh_noise():
    model = keras.Sequential([keras.Input((3, 4)), TrainableGaussianNoise(0.5)])
    x = _inputs()
    assert not np.allclose(model.predict(x, verbose=0), model.predict(x, verbose=0))


def test_stddev_is_a_trainable_per_dimension_weight_that_receives_gradients():
    layer = TrainableGaussianNoise(0.3)
    x = _inputs()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(layer(x)))
    (gradient,) = tape.gradient(loss, layer.trainable_weights)
    assert layer.trainable_weights == [layer.log_stddev]
    assert tuple(layer.log_stddev.shape) == (4,)
    assert np.all(_numpy(gradient) != 0)
    np.testing.assert_allclose(_numpy(layer.stddev), 0.3, rtol=1e-5)


def test_an_optimizer_moves_the_stddev_by_a_share_of_itself_per_step():
    """100 Adam steps at lr 0.01 that reward more noise multiply s by the same factor (about
    e, each step moving log s by about the learning rate), from 0.1 as from 1.0."""
    factors = []
    for start in (0.1, 1.0):
        layer = TrainableGaussianNoise(start)
        layer.build((None, 2))
        optimizer = keras.optimizers.Adam(0.01)
        for _ in range(100):
            with tf.GradientTape() as tape:
                loss = -tf.reduce_sum(layer.stddev)
            optimizer.apply(tape.gradient(loss, layer.trainable_weights), layer.trainable_weights)
        factors.append(_numpy(layer.stddev) / start)
    assert np.all(factors[0] > 2.5) and np.all(factors[0] < 4)
    np.testing.assert_allclose(factors[0], factors[1], rtol=0.01)


def test_stddev_never_falls_below_its_floor_and_must_start_above_it():
    layer = TrainableGaussianNoise(0.5, min_stddev=0.2)
    layer.build((None, 3))
    layer.log_stddev.assign([-60.0, 0.0, 3.0])
    assert np.all(_numpy(layer.stddev) >= 0.2)
    np.testing.assert_allclose(_numpy(layer.stddev)[0], 0.2, rtol=1e-6)
    for initial, floor in ((0.0, 0.0), (0.2, 0.2), (0.1, -0.1)):
        with pytest.raises(ValueError):
            TrainableGaussianNoise(initial, min_stddev=floor)
    with pytest.raises(ValueError, match="min_stddev"):
        layer.assign_stddev([0.3, 0.1, 0.3])


def test_deterministic_mode_is_the_identity():
    layer = TrainableGaussianNoise(0.5, deterministic=True)
    x = _inputs()
    np.testing.assert_array_equal(_numpy(layer(x)), x)
    np.testing.assert_array_equal(_numpy(layer(x)), _numpy(layer(x)))


def test_empirical_stddev_matches_the_assigned_stddev_per_dimension():
    stddev = np.array([0.05, 0.5, 1.0, 2.0])
    layer = TrainableGaussianNoise(0.1)
    layer.build((None, 4))
    layer.assign_stddev(stddev)
    x = _inputs(shape=(20000, 4))
    noise = _numpy(layer(x)) - x
    np.testing.assert_allclose(noise.std(axis=0), stddev, rtol=0.03)
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=0.05)


def test_mask_is_propagated_unchanged():
    layer = TrainableGaussianNoise(0.5)
    mask = np.array([[True, True, False], [True, False, False]])
    x = _inputs()
    layer(x, mask=mask)  # an explicit mask is accepted
    np.testing.assert_array_equal(_numpy(layer.compute_mask(x, mask)), mask)


def test_config_round_trip_through_the_registered_name():
    layer = TrainableGaussianNoise(0.25, min_stddev=0.05, deterministic=True, name="noise")
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == "deidpool>TrainableGaussianNoise"
    restored = keras.saving.deserialize_keras_object(serialized)
    assert (restored.initial_stddev, restored.min_stddev, restored.deterministic, restored.name) == (
        0.25, 0.05, True, "noise")


def test_set_deterministic_reaches_nested_layers_and_retraces_predict():
    inner = keras.Sequential([keras.Input((3, 4)), TrainableGaussianNoise(0.5)])
    outer = keras.Sequential([keras.Input((3, 4)), inner, TrainableGaussianNoise(0.5)])
    x = _inputs()
    outer.predict(x, verbose=0)  # trace once with the noise on
    assert set_deterministic(outer) == 2
    np.testing.assert_allclose(outer.predict(x, verbose=0), x, atol=1e-6)
    assert set_deterministic(outer, False) == 2
    assert not np.allclose(outer.predict(x, verbose=0), x)


def test_a_noise_free_copy_has_the_weights_and_no_noise_and_leaves_the_original_noisy():
    from deidpool.representer.representation import build_representer

    model = build_representer(4, repr_size=3, lstm_units=2)
    inputs = {"embeddings": _inputs((2, 5, 4)), "mask": np.ones((2, 5), bool)}
    copy = noise_free_copy(model)
    first, second = _numpy(copy(inputs)), _numpy(copy(inputs))
    np.testing.assert_array_equal(first, second)
    assert not np.allclose(_numpy(model(inputs)), _numpy(model(inputs)))
    set_deterministic(model, True)
    np.testing.assert_allclose(_numpy(model(inputs)), first, atol=1e-6)


def test_seeding_pythons_random_does_not_make_the_noise_replayable():
    """A process that seeds `random` (an experiment, the demo) still draws unforeseeable noise: the
    layer's seed comes from the operating system (Keras' default would come from `random`)."""
    import random

    x = _inputs()
    draws = []
    for _ in range(2):
        random.seed(0)
        draws.append(_numpy(TrainableGaussianNoise(0.5)(x)))
    assert not np.allclose(*draws)
