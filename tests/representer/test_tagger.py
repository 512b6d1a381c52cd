"""Tests for the BiLSTM-CRF tagger: shapes, masking, casing input, saving, class weights, loss."""

import keras
import numpy as np
import pytest

from deidpool.representer.characters import CHAR_WIDTH, char_ids
from deidpool.representer.dataset import SentenceData
from deidpool.representer.tagger import (
    VariationalLSTMCell,
    build_tagger,
    compute_class_weights,
    sentence_weights,
    tag_sentences,
    tagger_loss,
)

INPUT_DIM, TAGS, UNITS = 8, 5, 4


@pytest.fixture(scope="module")
def tagger():
    keras.utils.set_random_seed(0)
    return build_tagger(INPUT_DIM, TAGS, lstm_units=UNITS)


def batch(lengths, time=None, seed=0):
    """Random inputs with garbage (not zeros) at the padded positions."""
    rng = np.random.default_rng(seed)
    time = time or max(lengths)
    return {"features": rng.normal(size=(len(lengths), time, INPUT_DIM)).astype("float32"),
            "casing": rng.integers(0, 7, size=(len(lengths), time)),
            "tags": rng.integers(0, TAGS, size=(len(lengths), time)),
            "mask": np.arange(time)[None] < np.array(lengths)[:, None]}


def numpy(tensor):
    return keras.ops.convert_to_numpy(tensor)


def test_outputs_have_tag_scores_and_padding_changes_nothing(tagger):
    inputs = batch([5, 2])
    unaries, paths = numpy(tagger(inputs)), numpy(tagger.predict_tags(inputs))
    assert unaries.shape == (2, 5, TAGS) and paths.shape == (2, 5)
    assert not paths[1, 2:].any()
    alone = {name: value[1:, :2] for name, value in inputs.items()}
    np.testing.assert_allclose(numpy(tagger(alone))[0], unaries[1, :2], atol=1e-5)
    np.testing.assert_array_equal(numpy(tagger.predict_tags(alone))[0], paths[1, :2])


def test_dropout_acts_in_training_only(tagger):
    inputs = batch([6, 3])
    np.testing.assert_array_equal(numpy(tagger(inputs)), numpy(tagger(inputs)))
    assert not np.allclose(numpy(tagger(inputs, training=True)), numpy(tagger(inputs, training=True)))


def test_word_dropout_zeroes_whole_tokens_in_training_only_and_is_saved():
    """Each token's feature vector is kept whole (scaled) or zeroed whole; none at inference; a
    tagger without it makes no layer for it (its random streams stay as they were)."""
    keras.utils.set_random_seed(0)
    dropping = build_tagger(INPUT_DIM, TAGS, lstm_units=UNITS, word_dropout=0.5)
    features = np.ones((8, 20, INPUT_DIM), "float32")
    dropped = numpy(dropping.token_dropout(features, training=True))
    per_token = dropped.reshape(-1, INPUT_DIM)
    assert set(np.unique(per_token)) == {0.0, 2.0} and (per_token == per_token[:, :1]).all()
    assert 0.3 < (per_token[:, 0] == 0).mean() < 0.7
    np.testing.assert_array_equal(numpy(dropping.token_dropout(features, training=False)), features)
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(dropping)).word_dropout == 0.5
    assert build_tagger(INPUT_DIM, TAGS, lstm_units=UNITS).token_dropout is None


def test_casing_is_an_input_unless_disabled(tagger):
    inputs = batch([4])
    other = {**inputs, "casing": (inputs["casing"] + 1) % 7}
    assert not np.allclose(numpy(tagger(inputs)), numpy(tagger(other)))
    without = build_tagger(INPUT_DIM, TAGS, use_casing=False, lstm_units=UNITS)
    np.testing.assert_array_equal(numpy(without(inputs)), numpy(without(other)))


def test_characters_are_an_input_when_asked_for_and_saved():
    keras.utils.set_random_seed(0)
    reading = build_tagger(INPUT_DIM, TAGS, lstm_units=UNITS, use_chars=True)
    inputs = batch([4, 2])
    inputs["chars"] = char_ids(["Ana", "Ruiz", "de", "Lugo"] * 2).reshape(2, 4, CHAR_WIDTH)
    other = {**inputs, "chars": char_ids(["Eva", "Sanz", "de", "Lugo"] * 2).reshape(2, 4, CHAR_WIDTH)}
    assert not np.allclose(numpy(reading(inputs)), numpy(reading(other)))
    loaded = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(reading))
    assert loaded.use_chars and "use_chars" not in build_tagger(INPUT_DIM, TAGS, lstm_units=UNITS).get_config()


def test_saved_tagger_loads_with_its_weights(tagger, tmp_path):
    tagger.save(tmp_path / "tagger.keras")
    loaded = keras.saving.load_model(tmp_path / "tagger.keras")
    assert loaded.get_config() == tagger.get_config()
    inputs = batch([3, 1])
    np.testing.assert_allclose(numpy(loaded(inputs)), numpy(tagger(inputs)), atol=1e-6)


def test_variational_cell_is_an_lstm_with_one_recurrent_mask_per_sequence(monkeypatch):
    inputs, mask = batch([5, 3])["features"], batch([5, 3])["mask"]
    layer = keras.layers.RNN(VariationalLSTMCell(UNITS, recurrent_dropout=0.5), return_sequences=True)
    plain = keras.layers.LSTM(UNITS, return_sequences=True)
    layer.build(inputs.shape), plain.build(inputs.shape)
    plain.set_weights(layer.get_weights())
    np.testing.assert_allclose(numpy(layer(inputs, mask=mask)), numpy(plain(inputs, mask=mask)), atol=1e-6)
    masks = []
    original = VariationalLSTMCell.get_recurrent_dropout_mask
    monkeypatch.setattr(VariationalLSTMCell, "get_recurrent_dropout_mask",
                        lambda cell, state: masks.append(original(cell, state)) or masks[-1])
    dropped = numpy(layer(inputs, mask=mask, training=True))
    assert not np.allclose(dropped, numpy(plain(inputs, mask=mask)))
    assert len(masks) > 1 and all(m is masks[0] for m in masks) and masks[0].shape == (2, UNITS)


def test_class_weights_are_clipped_inverse_frequencies():
    weights = compute_class_weights([100, 10, 50, 0, 400], max_weight=5)
    np.testing.assert_allclose(weights, [1, 5, 2, 1, 1])
    assert weights.dtype == np.float32


def test_loss_weights_each_sentence_by_its_rarest_gold_tag(tagger):
    inputs = batch([4, 2, 3], seed=1)
    inputs["tags"][:] = 0
    inputs["tags"][0, 1], inputs["tags"][1, 3], inputs["tags"][2, 2] = 3, 4, 2  # [1, 3] is padding
    class_weights = np.array([1, 2, 3, 4, 5], dtype="float32")
    np.testing.assert_allclose(numpy(sentence_weights(inputs["tags"], inputs["mask"], class_weights)), [4, 1, 3])
    nll = -numpy(tagger.crf.log_likelihood(tagger(inputs), inputs["tags"], inputs["mask"]))
    assert float(tagger_loss(tagger, inputs)) == pytest.approx(nll.mean(), rel=1e-5)
    assert float(tagger_loss(tagger, inputs, class_weights)) == pytest.approx((nll * [4, 1, 3]).mean(), rel=1e-5)


def test_tag_sentences_returns_each_sentence_path_in_order(tagger):
    lengths = [3, 7, 1, 5, 2]
    inputs = batch(lengths, seed=2)
    data = SentenceData.from_arrays([f[:n] for f, n in zip(inputs["features"], lengths)],
                                    [c[:n] for c, n in zip(inputs["casing"], lengths)])
    paths = tag_sentences(tagger, data, batch_size=2)
    expected = numpy(tagger.predict_tags(inputs))
    assert [len(path) for path in paths] == lengths
    for path, row, n in zip(paths, expected, lengths):
        np.testing.assert_array_equal(path, row[:n])
