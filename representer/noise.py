"""Additive Gaussian noise with a trainable standard deviation per feature dimension.

Unlike `keras.layers.GaussianNoise` the noise is drawn at inference too: a noisy export is
the representer's defence against lookup-table attacks (docs/method.md, attack A2).
"""

import secrets

import keras
import numpy as np
from keras import ops

SEED_BITS = 62  # the noise seed's entropy (a seed is a signed 64-bit integer)


@keras.saving.register_keras_serializable(package="deidpool")
class TrainableGaussianNoise(keras.layers.Layer):
    """Adds noise N(0, s_d) to every feature d of the input, in training and inference.

    The standard deviation is s = min_stddev + exp(w), one trainable log-scale weight w per
    feature (the last input axis). On the log scale an optimizer step changes s by a share of
    itself, so s can move by orders of magnitude in one training run (under the softplus
    parameterisation it used to have, it moved about 2e-4 a step and stayed at its initial
    value); `min_stddev` is a floor no training can go below. Both are in the layer config,
    so a signed bundle fixes them.

    Args:
        initial_stddev: the starting value of every s_d (> min_stddev).
        min_stddev: the floor of every s_d (>= 0).
        deterministic: when True the layer is the identity. For tests only: an exporting
            client must keep it False (see `set_deterministic`).

    The noise is seeded from the operating system's randomness (62 bits), never from the config
    nor from Python's `random` (Keras' default, which a process that seeds `random` would make
    replayable), so two loads of one saved model draw different noise whatever the process seeded.
    """

    def __init__(self, initial_stddev=0.1, min_stddev=0.0, deterministic=False, **kwargs):
        super().__init__(**kwargs)
        if not min_stddev >= 0:
            raise ValueError(f"min_stddev must be >= 0, got {min_stddev}")
        if not initial_stddev > min_stddev:
            raise ValueError(f"initial_stddev must be above min_stddev ({min_stddev}), got {initial_stddev}")
        self.initial_stddev = float(initial_stddev)
        self.min_stddev = float(min_stddev)
        self.deterministic = bool(deterministic)
        self.supports_masking = True
        self.seed_generator = keras.random.SeedGenerator()  # draws Keras' default seed, as before, then:
        self.seed_generator.state.assign([secrets.randbits(SEED_BITS), 0])  # the noise's seed is the OS's

    def build(self, input_shape):
        self.log_stddev = self.add_weight(
            name="log_stddev",
            shape=(input_shape[-1],),
            initializer=keras.initializers.Constant(np.log(self.initial_stddev - self.min_stddev)),
            trainable=True,
        )

    @property
    def stddev(self):
        """The per-feature standard deviations s = min_stddev + exp(log_stddev)."""
        return self.min_stddev + ops.exp(self.log_stddev)

    def assign_stddev(self, stddev):
        """Sets s to `stddev` (a scalar or one value per feature, each above `min_stddev`)."""
        values = np.broadcast_to(np.asarray(stddev, dtype="float64"), self.log_stddev.shape)
        if not np.all(values > self.min_stddev):
            raise ValueError(f"standard deviations must be above min_stddev ({self.min_stddev})")
        self.log_stddev.assign(np.log(values - self.min_stddev).astype(self.log_stddev.dtype))

    def call(self, inputs, mask=None):
        # `mask` is accepted so callers may pass it explicitly; it is propagated unchanged.
        if self.deterministic:
            return inputs
        eps = keras.random.normal(ops.shape(inputs), dtype=inputs.dtype, seed=self.seed_generator)
        return inputs + ops.cast(self.stddev, inputs.dtype) * eps

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "initial_stddev": self.initial_stddev, "min_stddev": self.min_stddev,
                "deterministic": self.deterministic}


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


def noise_free_copy(model):
    """A copy of `model` with its weights and every noise layer off: what anyone holding the
    public representer computes for a sentence it knows (audits attack with it)."""
    copy = keras.models.clone_model(model)
    copy.set_weights(model.get_weights())
    set_deterministic(copy)
    return copy
