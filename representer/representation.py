"""The representer: noisy BiLSTM that maps a sentence's word embeddings to unit-norm
representation vectors that can be shared (docs/method.md, Components: Representer)."""

from pathlib import Path

import keras
import numpy as np

from deidpool.representer.characters import CHAR_WIDTH, CharacterFeatures
from deidpool.representer.noise import TrainableGaussianNoise, set_deterministic

# Initial noise levels (the reference default is not known here). GloVe 6B 50d has a
# per-dimension std of about 0.67, so 0.1 on the input is ~15% of the signal. The output
# noise is added to unit-length vectors, so its effective noise-to-signal ratio is
# sqrt(sum of s_d^2) (`output_noise_to_signal`): 0.05 per dimension of 50 is 0.35. Both stds
# are trained from these values; the output noise never below its floor (default none).
INPUT_NOISE_STDDEV = 0.1
OUTPUT_NOISE_STDDEV = 0.05
OUTPUT_NOISE_FLOOR = 0.0


def build_representer(
    embedding_dim,
    repr_size=50,
    lstm_units=128,
    input_noise_stddev=INPUT_NOISE_STDDEV,
    output_noise_stddev=OUTPUT_NOISE_STDDEV,
    output_noise_floor=OUTPUT_NOISE_FLOOR,
    use_chars=False,
    name="representer",
):
    """Builds the representer as a functional `keras.Model`.

    Inputs (a dict): `embeddings`, float32 (batch, time, embedding_dim), and `mask`, bool
    (batch, time), True at real tokens. The mask is explicit because out-of-vocabulary
    words embed to zero vectors too, so masking zero vectors would drop real tokens. With
    `use_chars` also `chars`, int (batch, time, CHAR_WIDTH) character ids of each token
    (`deidpool.representer.characters`): their convolution is read beside the noisy embeddings
    (the tokens of an export are pseudonymized first, so they are the surrogates' characters).
    Output: (batch, time, repr_size) unit-L2-norm vectors: the projection is normalised, the
    output noise added, and the sum normalised again, so the noise level relative to the
    signal is what the output noise's stds say, whatever scale the projection learns (noise
    added before the only normalisation is drowned by a projection that grows). The vectors at padded positions
    are meaningless; consumers pass the same mask on explicitly (a nested functional model
    does not attach it to its symbolic output).
    """
    embeddings = keras.Input(shape=(None, embedding_dim), dtype="float32", name="embeddings")
    mask = keras.Input(shape=(None,), dtype="bool", name="mask")
    inputs = {"embeddings": embeddings, "mask": mask}
    x = TrainableGaussianNoise(input_noise_stddev, name="input_noise")(embeddings)
    if use_chars:
        inputs["chars"] = keras.Input(shape=(None, CHAR_WIDTH), dtype="int32", name="chars")
        x = keras.layers.Concatenate(name="with_characters")([x, CharacterFeatures(name="characters")(inputs["chars"])])
    x = keras.layers.Bidirectional(
        keras.layers.LSTM(lstm_units, return_sequences=True), name="bilstm"
    )(x, mask=mask)
    x = keras.layers.Dense(repr_size, name="projection")(x)
    x = keras.layers.UnitNormalization(axis=-1, name="l2_normalize")(x)
    x = TrainableGaussianNoise(output_noise_stddev, output_noise_floor, name="output_noise")(x)
    outputs = keras.layers.UnitNormalization(axis=-1, name="renormalize")(x)
    return keras.Model(inputs, outputs, name=name)


def reads_chars(representer) -> bool:
    """Whether `representer` (a model of `build_representer`, or a plain function of embeddings)
    reads each token's characters."""
    inputs = getattr(representer, "input", None)
    return isinstance(inputs, dict) and "chars" in inputs


def representer_inputs(representer, embeddings, mask, chars=None) -> dict:
    """What `representer` reads of a batch: `chars` only where it reads characters (a representer
    that does, given none, is an error that names the call)."""
    inputs = {"embeddings": embeddings, "mask": mask}
    if reads_chars(representer):
        if chars is None:
            raise ValueError(f"{representer.name!r} reads characters and was given none")
        inputs["chars"] = chars
    return inputs


def output_noise_to_signal(model) -> float:
    """The effective noise-to-signal ratio of a representer's output: the expected norm of the
    output noise, sqrt(sum of s_d^2), against the unit-length signal it is added to."""
    return float(np.sqrt(np.sum(np.square(keras.ops.convert_to_numpy(model.get_layer("output_noise").stddev)))))


def save_representer(model, path):
    """Saves `model` to a `.keras` file."""
    path = Path(path)
    if path.suffix != ".keras":
        raise ValueError(f"a representer is saved as a .keras file, got {path}")
    model.save(path)


def load_representer(path, deterministic=False):
    """Loads a representer saved by `save_representer`, with its noise on by default.

    Importing this module registers the custom layers; `deterministic` is applied after
    loading whatever the saved config says, so a model saved during a test is not
    exported without noise by mistake.
    """
    model = keras.saving.load_model(path, compile=False)
    set_deterministic(model, deterministic)
    return model
