"""Additive Gaussian noise with a trainable standard deviation per feature dimension.

Unlike `keras.layers.GaussianNoise` the noise is drawn at inference too: a noisy export is
the representer's defence against lookup-table attacks (METHOD.md, attack A2).
"""

import keras
import numpy as np
from keras import ops


def _inverse_softplus(value):
    """The unconstrained weight whose softplus is `value` (> 0)."""
    return np.log(np.expm1(value))


@keras.saving.register_keras_serializable(package="deidpool")
class TrainableGaussianNoise(keras.layers.Layer):
    """Adds noise N(0, s_d) to every feature d of the input, in training and inference.

    The standard deviation is parameterised as s = softplus(w) with one unconstrained
    trainable weight w per feature (the last input axis), so s stays positive whatever the
    optimiser does, and the output x + s * eps (eps ~ N(0, 1)) is differentiable w.r.t. s.

    Args:
        initial_stddev: the starting value of every s_d (> 0).
        deterministic: when True the layer is the identity. For tests only: an exporting
            client must keep it False (see `set_deterministic`).

    The noise is seeded from Keras' default seed (Python's `random`), never from the
    config, so two loads of one saved model draw different noise.
    """

    def __init__(self, initial_stddev=0.1, deterministic=False, **kwargs):
        super().__init__(**kwargs)
        if not initial_stddev > 0:
            raise ValueError(f"initial_stddev must be positive, got {initial_stddev}")
        self.initial_stddev = float(initial_stddev)
        self.deterministic = bool(deterministic)
        self.supports_masking = True
        self.seed_generator = keras.random.SeedGenerator()

    def build(self, input_shape):
        self.raw_stddev = self.add_weight(
            name="raw_stddev",
            shape=(input_shape[-1],),
            initializer=keras.initializers.Constant(_inverse_softplus(self.initial_stddev)),
            trainable=True,
        )

    @property
    def stddev(self):
        """The positive per-feature standard deviations s = softplus(raw_stddev)."""
        return ops.softplus(self.raw_stddev)

    def assign_stddev(self, stddev):
        """Sets s to `stddev` (a positive scalar or one value per feature)."""
        values = np.broadcast_to(np.asarray(stddev, dtype="float64"), self.raw_stddev.shape)
        if not np.all(values > 0):
            raise ValueError("standard deviations must be positive")
        self.raw_stddev.assign(_inverse_softplus(values).astype(self.raw_stddev.dtype))

    def call(self, inputs, mask=None):
        # `mask` is accepted so callers may pass it explicitly; it is propagated unchanged.
        if self.deterministic:
            return inputs
        eps = keras.random.normal(ops.shape(inputs), dtype=inputs.dtype, seed=self.seed_generator)
        return inputs + ops.cast(self.stddev, inputs.dtype) * eps

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(initial_stddev=self.initial_stddev, deterministic=self.deterministic)
        return config


def _walk(layer):
    yield layer
    for sublayer in getattr(layer, "layers", []):
        yield from _walk(sublayer)


def set_deterministic(model, deterministic=True):
    """Turns the noise of every `TrainableGaussianNoise` inside `model` off (or back on).

    Also drops the models' cached `fit`/`evaluate`/`predict` functions, which were traced
    with the previous setting. Returns the number of noise layers changed.
    """
    count = 0
    for layer in _walk(model):
        if isinstance(layer, TrainableGaussianNoise):
            layer.deterministic = bool(deterministic)
            count += 1
        if isinstance(layer, keras.Model):
            layer.train_function = layer.test_function = layer.predict_function = None
    return count
