"""Seed ensembles of taggers: several `Tagger`s trained alike (same tags, same inputs) with
different seeds, decoded as one. The CRF score of a tag path is linear in the unary scores and
the transitions, so Viterbi over the members' mean unaries under their mean transitions finds
the path with the best mean score over the members."""

from __future__ import annotations

from collections.abc import Sequence

import keras
import numpy as np
from keras import ops

from deidpool.representer.crf import CRF


class TaggerEnsemble:
    """Quacks like a `Tagger` for inference (`__call__` gives unary scores, `predict_tags` the
    Viterbi paths), so `tag_sentences` and the pipelines take it as they are."""

    def __init__(self, taggers: Sequence[keras.Model]):
        if not taggers:
            raise ValueError("an ensemble needs at least one tagger")
        num_tags = {tagger.num_tags for tagger in taggers}
        if len(num_tags) != 1:
            raise ValueError(f"the taggers of an ensemble must share their tags; they have {sorted(num_tags)} tags")
        self.taggers, self.num_tags = list(taggers), num_tags.pop()
        self.crf = CRF(self.num_tags, name="ensemble_crf")
        self.crf.build((None, None, self.num_tags))
        members = [tagger.crf.numpy_weights() for tagger in self.taggers]
        for index, weight in enumerate((self.crf.transitions, self.crf.start_transitions, self.crf.end_transitions)):
            weight.assign(np.mean([weights[index] for weights in members], axis=0))

    def __call__(self, inputs, training=False):
        """The members' mean unary scores (batch, time, num_tags)."""
        return ops.mean(ops.stack([tagger(inputs, training=False) for tagger in self.taggers]), axis=0)

    def predict_tags(self, inputs):
        """Viterbi tag ids (batch, time) int32, 0 at padded positions."""
        return self.crf(self(inputs), mask=inputs["mask"])
