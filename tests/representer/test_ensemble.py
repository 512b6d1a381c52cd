"""Tests for seed ensembles of taggers: decoding as one, the best mean path score, and usage."""

import itertools

import keras
import numpy as np
import pytest

from deidpool.representer.dataset import SentenceData
from deidpool.representer.ensemble import TaggerEnsemble
from deidpool.representer.tagger import build_tagger, tag_sentences
from tests.representer.test_tagger import INPUT_DIM, TAGS, UNITS, batch, numpy


@pytest.fixture(scope="module")
def members():
    keras.utils.set_random_seed(3)
    taggers = [build_tagger(INPUT_DIM, TAGS, lstm_units=UNITS) for _ in range(3)]
    rng = np.random.default_rng(3)
    for tagger in taggers:  # transitions strong enough to matter against the unaries
        tagger.crf.transitions.assign(rng.normal(0, 2, (TAGS, TAGS)).astype("float32"))
        tagger.crf.start_transitions.assign(rng.normal(0, 2, TAGS).astype("float32"))
    return taggers


def test_an_ensemble_of_one_tags_as_its_tagger(members):
    inputs = batch([4, 2, 6], seed=5)
    np.testing.assert_array_equal(numpy(TaggerEnsemble(members[:1]).predict_tags(inputs)),
                                  numpy(members[0].predict_tags(inputs)))


def test_the_ensemble_path_has_the_best_mean_score_over_its_members(members):
    ensemble = TaggerEnsemble(members)
    inputs = batch([3, 2], time=3, seed=7)
    paths = numpy(ensemble.predict_tags(inputs))
    unaries = [tagger(inputs, training=False) for tagger in members]
    candidates = np.array(list(itertools.product(range(TAGS), repeat=3)), dtype="int32")
    for row, length in enumerate((3, 2)):
        mask = np.tile(inputs["mask"][row:row + 1], (len(candidates), 1))
        tags = np.where(mask, candidates, 0)
        mean = np.mean([numpy(tagger.crf.sequence_score(np.repeat(numpy(u)[row:row + 1], len(tags), 0), tags, mask))
                        for tagger, u in zip(members, unaries)], axis=0)
        best = tags[int(np.argmax(mean))]
        np.testing.assert_array_equal(paths[row, :length], best[:length])
    single = [numpy(tagger.predict_tags(inputs)) for tagger in members]
    assert any(not np.array_equal(paths, path) for path in single)  # the members do not all agree with it


def test_tag_sentences_takes_an_ensemble(members):
    lengths = [3, 1, 5]
    inputs = batch(lengths, seed=2)
    data = SentenceData.from_arrays([f[:n] for f, n in zip(inputs["features"], lengths)],
                                    [c[:n] for c, n in zip(inputs["casing"], lengths)])
    ensemble = TaggerEnsemble(members)
    expected = numpy(ensemble.predict_tags(inputs))
    assert [list(path) for path in tag_sentences(ensemble, data, batch_size=2)] == [
        list(row[:n]) for row, n in zip(expected, lengths)]


def test_members_must_share_their_tags(members):
    with pytest.raises(ValueError, match="share their tags"):
        TaggerEnsemble([members[0], build_tagger(INPUT_DIM, TAGS + 1, lstm_units=UNITS)])
    with pytest.raises(ValueError, match="at least one"):
        TaggerEnsemble([])
