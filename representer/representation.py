"""The representer: noisy BiLSTM that maps a sentence's word embeddings to unit-norm
representation vectors that can be shared (METHOD.md, Components: Representer)."""

from pathlib import Path

import keras

from representer.noise import TrainableGaussianNoise, set_deterministic

# Initial noise levels (the reference default is not known here). GloVe 6B 50d has a
# per-dimension std of about 0.67, so 0.1 on the input is ~15% of the signal; the
# pre-normalisation outputs of a freshly initialised model have a per-dimension std of
# roughly 0.3-0.4, so 0.1 there too. Both stds are trained from these values.
INPUT_NOISE_STDDEV = 0.1
OUTPUT_NOISE_STDDEV = 0.1


def build_representer(
    embedding_dim,
    repr_size=50,
    lstm_units=128,
    input_noise_stddev=INPUT_NOISE_STDDEV,
    output_noise_stddev=OUTPUT_NOISE_STDDEV,
    name="representer",
):
    """Builds the representer as a functional `keras.Model`.

    Inputs (a dict): `embeddings`, float32 (batch, time, embedding_dim), and `mask`, bool
    (batch, time), True at real tokens. The mask is explicit because out-of-vocabulary
    words embed to zero vectors too, so masking zero vectors would drop real tokens.
    Output: (batch, time, repr_size) unit-L2-norm vectors. The vectors at padded positions
    are meaningless; consumers pass the same mask on explicitly (a nested functional model
    does not attach it to its symbolic output).
    """
    embeddings = keras.Input(shape=(None, embedding_dim), dtype="float32", name="embeddings")
    mask = keras.Input(shape=(None,), dtype="bool", name="mask")
    x = TrainableGaussianNoise(input_noise_stddev, name="input_noise")(embeddings)
    x = keras.layers.Bidirectional(
        keras.layers.LSTM(lstm_units, return_sequences=True), name="bilstm"
    )(x, mask=mask)
    x = keras.layers.Dense(repr_size, name="projection")(x)
    x = TrainableGaussianNoise(output_noise_stddev, name="output_noise")(x)
    outputs = keras.layers.UnitNormalization(axis=-1, name="l2_normalize")(x)
    return keras.Model({"embeddings": embeddings, "mask": mask}, outputs, name=name)


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
