"""Tests for the character features of raw-text taggers: ids per token and their convolution."""

import keras
import numpy as np

from deidpool.representer.characters import CHAR_IDS, CHAR_WIDTH, CharacterFeatures, char_ids


def test_char_ids_pad_short_tokens_and_keep_both_ends_of_long_ones():
    ids = char_ids(["Ab", "", "x" * 10 + "MIDDLE" + "y" * 10])
    assert ids.shape == (3, CHAR_WIDTH) and ids.dtype == np.uint16
    assert list(ids[0, :3]) == [ord("A") + 2, ord("b") + 2, 0] and not ids[1].any()
    assert list(ids[2]) == [ord("x") + 2] * 10 + [ord("y") + 2] * 10


def test_spanish_letters_keep_their_ids_and_rare_characters_share_one():
    letters, rare = char_ids(["ñÁü"]), char_ids(["漢€"])
    assert len(set(letters[0, :3])) == 3 and max(letters[0]) < CHAR_IDS
    assert rare[0, 0] == rare[0, 1] == 1


def test_convolution_reads_each_token_alone_and_a_padded_token_gives_zeros():
    keras.utils.set_random_seed(0)
    layer = CharacterFeatures(embedding_dim=4, filters=6)
    layer.build((None, None, CHAR_WIDTH))
    ids = char_ids(["Ana", "Ruiz", "de", "Ana"]).reshape(2, 2, CHAR_WIDTH)
    ids[1, 1] = 0
    features = keras.ops.convert_to_numpy(layer(ids))
    assert features.shape == (2, 2, 6)
    assert not features[1, 1].any() and (features >= 0).all()
    np.testing.assert_allclose(features[0, 0], keras.ops.convert_to_numpy(layer(ids[:1, :1]))[0, 0], atol=1e-6)
    assert not np.allclose(features[0, 0], features[0, 1])
