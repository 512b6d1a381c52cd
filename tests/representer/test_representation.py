"""Tests for the representer model: shapes, unit norm, noise, masking and saving."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from deidpool.representer.noise import set_deterministic
from deidpool.representer.representation import build_representer, load_representer, save_representer

EMBEDDING_DIM, LSTM_UNITS, REPR_SIZE = 8, 4, 6


@pytest.fixture(scope="module")
def model():
    representer = build_representer(EMBEDDING_DIM, repr_size=REPR_SIZE, lstm_units=LSTM_UNITS)
    yield representer
    set_deterministic(representer, False)


def _batch(lengths, time=None, seed=0):
    """Random embeddings with garbage (not zeros) at the padded positions, and the mask."""
    time = time or max(lengths)
    embeddings = np.random.default_rng(seed).normal(size=(len(lengths), time, EMBEDDING_DIM))
    mask = np.arange(time)[None, :] < np.array(lengths)[:, None]
    return {"embeddings": embeddings.astype("float32"), "mask": mask}


def _run(model, inputs):
    return keras.ops.convert_to_numpy(model(inputs))


def test_outputs_are_unit_norm_vectors(model):
    outputs = _run(model, _batch([3, 5]))
    assert outputs.shape == (2, 5, REPR_SIZE)
    np.testing.assert_allclose(np.linalg.norm(outputs, axis=-1), 1.0, atol=1e-5)


def test_noise_is_on_by_default_and_off_when_deterministic(model):
    inputs = _batch([4])
    set_deterministic(model, False)
    assert not np.allclose(_run(model, inputs), _run(model, inputs))
    set_deterministic(model, True)
    np.testing.assert_array_equal(_run(model, inputs), _run(model, inputs))


def test_both_noise_stddevs_receive_gradients(model):
    set_deterministic(model, False)
    inputs = _batch([4, 2])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(inputs)[..., 0])
    stddevs = [model.get_layer(name).log_stddev for name in ("input_noise", "output_noise")]
    for gradient in tape.gradient(loss, stddevs):
        assert np.any(keras.ops.convert_to_numpy(gradient) != 0)


def test_padded_positions_do_not_influence_real_tokens(model):
    set_deterministic(model, True)
    padded = _batch([3, 6], seed=1)
    alone = {"embeddings": padded["embeddings"][:1, :3], "mask": padded["mask"][:1, :3]}
    np.testing.assert_allclose(_run(model, padded)[0, :3], _run(model, alone)[0], atol=1e-5)


def test_zero_embeddings_of_real_tokens_are_not_masked(model):
    set_deterministic(model, True)
    inputs = _batch([3])
    with_oov = {"embeddings": inputs["embeddings"].copy(), "mask": inputs["mask"]}
    with_oov["embeddings"][0, 1] = 0.0
    without = {"embeddings": inputs["embeddings"][:, [0, 2]], "mask": inputs["mask"][:, :2]}
    assert not np.allclose(_run(model, with_oov)[0, 2], _run(model, without)[0, 1], atol=1e-4)


def test_saved_representer_loads_in_a_fresh_process(model, tmp_path):
    set_deterministic(model, True)
    inputs = _batch([2, 5], seed=2)
    expected = _run(model, inputs)
    path = tmp_path / "representer.keras"
    save_representer(model, path)
    np.savez(tmp_path / "inputs.npz", **inputs)
    script = textwrap.dedent(
        f"""
        import keras, numpy as np
        from deidpool.representer import noise  # noqa: F401 (registers the custom layer for plain keras loading)
        from deidpool.representer.noise import set_deterministic
        from deidpool.representer.representation import load_representer
        inputs = dict(np.load({str(tmp_path / "inputs.npz")!r}))
        plain = keras.saving.load_model({str(path)!r})
        set_deterministic(plain, True)
        helper = load_representer({str(path)!r}, deterministic=True)
        np.save({str(tmp_path / "plain.npy")!r}, keras.ops.convert_to_numpy(plain(inputs)))
        np.save({str(tmp_path / "helper.npy")!r}, keras.ops.convert_to_numpy(helper(inputs)))
        """
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)
    for name in ("plain", "helper"):
        np.testing.assert_allclose(np.load(tmp_path / f"{name}.npy"), expected, atol=1e-5)


def test_loaded_representer_is_noisy_even_if_saved_deterministic(model, tmp_path):
    set_deterministic(model, True)
    path = tmp_path / "representer.keras"
    save_representer(model, path)
    inputs = _batch([4])
    first, second = load_representer(path), load_representer(path)
    assert not np.allclose(_run(first, inputs), _run(second, inputs))
    assert not np.allclose(_run(first, inputs), _run(first, inputs))


def test_save_requires_a_keras_file(model, tmp_path):
    with pytest.raises(ValueError):
        save_representer(model, tmp_path / "representer.h5")
