"""What a raw-text tagger, or a representer, reads of a token's spelling: character ids per
token and the convolution over them (Ma & Hovy 2016), beside its word embedding.

Only a model that sees the institution's own text can read characters: a raw-text tagger, or a
representer built with `use_chars` (inside the institution, on the pseudonymized copy an export
represents). A tagger behind a representer (the published pipeline, the pooled tagger) reads
exported vectors, which carry no characters, so `deidpool.representer.onnx_inference` refuses such
a tagger. Characters help where word vectors are weak: out-of-vocabulary names, identifiers,
e-mail addresses, postal codes.
"""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

CHAR_WIDTH = 20
"""Characters kept per token: all of a short token, the first and last ten of a longer one."""
CHAR_IDS = 512
"""Code points 0-509 keep their own id (Latin-1 and the Latin Extended blocks: every letter of
English and Spanish notes), every other character shares one; id 0 pads."""
_OTHER = 1


def char_ids(tokens: Sequence[str], width: int = CHAR_WIDTH) -> np.ndarray:
    """(len(tokens), width) uint16 character ids of each token, zero-padded (width 0: none)."""
    ids = np.zeros((len(tokens), width), np.uint16)
    if width == 0:
        return ids
    half = width // 2
    for row, token in enumerate(tokens):
        kept = token if len(token) <= width else token[:half] + token[len(token) - (width - half):]
        ids[row, :len(kept)] = [ord(c) + 2 if ord(c) + 2 < CHAR_IDS else _OTHER for c in kept]
    return ids


@keras.saving.register_keras_serializable(package="deidpool")
class CharacterFeatures(keras.layers.Layer):
    """(batch, time, width) character ids -> (batch, time, filters): each token's characters
    embedded, a ReLU convolution of width `kernel` over them and the maximum over its real
    characters (a padded token gives zeros)."""

    def __init__(self, embedding_dim=25, filters=50, kernel=3, **kwargs):
        super().__init__(**kwargs)
        self.embedding_dim, self.filters, self.kernel = embedding_dim, filters, kernel
        self.embedding = keras.layers.Embedding(CHAR_IDS, embedding_dim, name="char_embedding")
        self.convolution = keras.layers.Conv1D(filters, kernel, padding="same", activation="relu", name="char_conv")

    def build(self, input_shape):
        self.embedding.build(input_shape)
        self.convolution.build((None, input_shape[-1], self.embedding_dim))

    def call(self, ids):
        ids = ops.cast(ids, "int32")
        batch, time, width = ops.shape(ids)[0], ops.shape(ids)[1], ops.shape(ids)[2]
        flat = ops.reshape(ids, (-1, width))
        hidden = self.convolution(self.embedding(flat))
        # ReLU outputs are >= 0: zeroed padding never raises a maximum
        hidden = hidden * ops.cast(ops.expand_dims(flat > 0, -1), hidden.dtype)
        return ops.reshape(ops.max(hidden, axis=1), (batch, time, self.filters))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2]) + (self.filters,)

    def get_config(self):
        return {**super().get_config(), "embedding_dim": self.embedding_dim, "filters": self.filters,
                "kernel": self.kernel}
