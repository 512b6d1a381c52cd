"""Tests for the gradient reversal layer used by DANN training."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from deidpool.adversary.gradient_reversal import GradientReversal


@pytest.mark.parametrize("scale", [1.0, 0.3])
def test_forward_is_identity_and_gradient_is_negated_and_scaled(scale):
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 3, 4)), tf.float32)
    upstream = tf.constant(np.random.default_rng(1).normal(size=(2, 3, 4)), tf.float32)
    layer = GradientReversal(scale)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tf.reduce_sum(upstream * y)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), -scale * upstream.numpy(), rtol=1e-6)


def test_gradient_reaches_weights_below_it_reversed_inside_tf_function():
    dense = keras.layers.Dense(1, kernel_initializer="ones", use_bias=False)
    reverse = GradientReversal(2.0)
    x = tf.ones((1, 3))

    @tf.function
    def gradients(layer):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(dense(x)))
        return tape.gradient(loss, dense.kernel)

    plain = gradients(lambda inputs: inputs).numpy()
    np.testing.assert_allclose(gradients(reverse).numpy(), -2.0 * plain)


def test_layer_is_serializable(tmp_path):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, GradientReversal(0.5, name="reverse")(keras.layers.Dense(2)(inputs)))
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(loaded.get_layer("reverse"), GradientReversal) and loaded.get_layer("reverse").scale == 0.5
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(x)), keras.ops.convert_to_numpy(model(x)))
