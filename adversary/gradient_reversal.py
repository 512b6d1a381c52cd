"""Gradient reversal layer (Ganin et al. 2016) for DANN training: the identity on the
forward pass, the upstream gradient multiplied by -scale on the backward pass."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="deidpool")
class GradientReversal(keras.layers.Layer):
    """Identity forward; backward, the gradient w.r.t. the input is -scale * upstream.

    Placed between the representer and the adversaries, one optimizer step on the summed
    losses trains the adversaries to win and the representer to make them lose.
    """

    def __init__(self, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = float(scale)
        self.supports_masking = True

    def call(self, inputs):
        @tf.custom_gradient
        def reverse(x):
            return tf.identity(x), lambda upstream: -self.scale * upstream

        return reverse(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}
