"""Tests of the ONNX Runtime path: the graphs give the Keras models' vectors and tags on tiny
models (within float32 rounding), the noise drawn outside the graph has the Keras layers'
statistics, the NumPy Viterbi is the CRF's, and what cannot be converted says so."""

import keras
import numpy as np
import pytest

from deidpool.representer.ensemble import TaggerEnsemble
from deidpool.representer.noise import set_deterministic
from deidpool.representer.onnx_inference import PipelineSession, RepresenterSession, UnsupportedModel, viterbi
from deidpool.representer.representation import build_representer
from deidpool.representer.tagger import build_tagger

DIM, REPR, UNITS, TAGS = 8, 6, 5, 7
LENGTHS = np.array([1, 7, 3, 9, 9, 2])
TOLERANCE = 1e-5  # float32 rounding of two implementations of the same sums


def randomized(model, seed: int):
    """`model` with every weight drawn afresh (zero biases would hide a gate-order mistake)."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if "log_stddev" not in weight.path:
            weight.assign(rng.normal(0, 0.5, weight.shape).astype("float32"))
    return model


def inputs(lengths=LENGTHS, seed=0):
    """Random features with garbage (not zeros) past each length, and casing ids."""
    rng = np.random.default_rng(seed)
    time = int(max(lengths))
    return (rng.normal(size=(len(lengths), time, DIM)).astype("float32"), rng.integers(0, 7, (len(lengths), time)),
            np.arange(time)[None] < np.asarray(lengths)[:, None])


@pytest.fixture(scope="module")
def representer():
    keras.utils.set_random_seed(1)
    model = randomized(build_representer(DIM, repr_size=REPR, lstm_units=UNITS), seed=1)
    set_deterministic(model)
    return model


@pytest.fixture(scope="module")
def taggers():
    keras.utils.set_random_seed(2)
    return [randomized(build_tagger(REPR, TAGS, lstm_units=UNITS), seed=seed) for seed in (2, 3)]


def test_representer_vectors_are_the_keras_models(representer):
    features, _, mask = inputs()
    expected = keras.ops.convert_to_numpy(representer({"embeddings": features, "mask": mask}))
    vectors = RepresenterSession(representer, DIM)(features, LENGTHS)
    assert vectors.shape == expected.shape
    for row, length in enumerate(LENGTHS):
        np.testing.assert_allclose(vectors[row, :length], expected[row, :length], atol=TOLERANCE)


@pytest.mark.parametrize("noisy_layer", ["input_noise", "output_noise"])
def test_noise_has_the_keras_layers_spread(noisy_layer):
    keras.utils.set_random_seed(4)
    model = randomized(build_representer(DIM, repr_size=REPR, lstm_units=UNITS), seed=4)
    model.get_layer(noisy_layer).assign_stddev(0.3)
    features, _, mask = inputs(lengths=[9] * 400, seed=5)
    set_deterministic(model)
    clean = keras.ops.convert_to_numpy(model({"embeddings": features, "mask": mask}))
    model.get_layer(noisy_layer).deterministic = False
    # One call's spread varies by about 2.5 % (its noise comes from the OS), so each side averages
    # eight calls: the two means then differ by about 1.3 %, far inside the 10 % tolerance.
    keras_spread = np.mean([np.mean(np.square(keras.ops.convert_to_numpy(
        model({"embeddings": features, "mask": mask})) - clean)) for _ in range(8)])
    session = RepresenterSession(model, DIM)
    draws = [session(features, np.full(400, 9)) for _ in range(8)]
    np.testing.assert_allclose(np.linalg.norm(draws[0], axis=-1), 1.0, atol=TOLERANCE)
    assert not np.allclose(draws[0], draws[1])  # fresh noise on every call
    assert np.mean([np.mean(np.square(draw - clean)) for draw in draws]) == pytest.approx(keras_spread, rel=0.1)


@pytest.mark.parametrize("members", [1, 2])
def test_pipeline_tags_are_the_keras_models(representer, taggers, members):
    tagger = taggers[0] if members == 1 else TaggerEnsemble(taggers)
    features, casing, mask = inputs(seed=6)
    vectors = representer({"embeddings": features, "mask": mask})
    expected = keras.ops.convert_to_numpy(tagger.predict_tags({"features": vectors, "casing": casing, "mask": mask}))
    np.testing.assert_array_equal(PipelineSession(representer, tagger, DIM)(features, casing, LENGTHS), expected)


def test_viterbi_is_the_crf_decoding(taggers):
    crf, rng = taggers[0].crf, np.random.default_rng(7)
    scores = rng.normal(0, 2, (len(LENGTHS), int(LENGTHS.max()), TAGS)).astype("float32")
    mask = np.arange(scores.shape[1])[None] < LENGTHS[:, None]
    expected = keras.ops.convert_to_numpy(crf(scores, mask=mask))
    paths = viterbi(scores, LENGTHS, *crf.numpy_weights())
    np.testing.assert_array_equal(paths, expected)
    assert not paths[~mask].any()


def test_what_cannot_be_converted_says_so(representer, taggers):
    with pytest.raises(UnsupportedModel, match="not a representer"):
        RepresenterSession(lambda inputs: inputs["embeddings"], DIM)
    noisy = keras.models.clone_model(representer)
    set_deterministic(noisy, False)
    with pytest.raises(UnsupportedModel, match="without noise"):
        PipelineSession(noisy, taggers[0], DIM)
    with pytest.raises(UnsupportedModel, match="reads characters"):
        PipelineSession(representer, build_tagger(REPR, TAGS, lstm_units=UNITS, use_chars=True), DIM)
