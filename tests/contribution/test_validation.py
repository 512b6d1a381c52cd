"""Tests of the server's validation of a contribution: what it accepts, what it refuses and how
the refusal names the file and the sentence (`check_sentence`, also run by pooled training:
tests/server/test_pooled.py)."""

import numpy as np
import pytest

from deidpool.contribution.records import ContributionError, ContributionSentence
from deidpool.contribution.validation import check_sentence

from .conftest import DIM, TAGS, random_sentences, validate, write


def test_validation_accepts_a_good_contribution(written, parties):
    assert validate(written[0], parties) == written[1]


@pytest.mark.parametrize("expected, message", [
    ({"representer_ids": ["rep-2"]}, "representer id rep-1 is not one the server expects"),
    ({"dim": DIM + 1}, "vectors of size 6"),
    ({"num_tags": 3}, "tag id >= 3"),
])
def test_validation_rejects_what_the_server_does_not_expect(written, parties, expected, message):
    with pytest.raises(ContributionError, match=message):
        validate(written[0], parties, **expected)


def test_validation_refuses_a_contribution_without_sentences(tmp_path, parties):
    write(tmp_path / "a.dpc", parties, [])
    with pytest.raises(ContributionError, match="a.dpc holds no sentences"):
        validate(tmp_path / "a.dpc", parties)


def _bad(vectors, tags, casing, problem):
    if problem == "tag":
        tags = np.where(np.arange(len(tags)) == len(tags) - 1, TAGS, tags)
    elif problem == "casing":
        casing = np.full_like(casing, 7)
    else:
        vectors = vectors.copy()
        vectors[0, 0] = np.nan
    return vectors, tags, casing


PROBLEMS = {"tag": f"has a tag id >= {TAGS}, outside the tag vocabulary of {TAGS} tags",
            "casing": "has a casing id >= 7", "vectors": "has non-finite vectors"}


@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_bad_sentence_is_refused_naming_the_file_and_its_number(tmp_path, parties, problem):
    sentences = random_sentences(count=12)
    sentences[8] = _bad(*sentences[8], problem)
    write(tmp_path / "a.dpc", parties, sentences)
    with pytest.raises(ContributionError, match=f"a.dpc: sentence 9 {PROBLEMS[problem]}"):
        validate(tmp_path / "a.dpc", parties)


def test_check_sentence_checks_one_sentence_against_what_the_server_expects():
    vectors, tags, casing = random_sentences(count=1)[0]
    sentence = ContributionSentence(vectors, tags, casing)
    check_sentence(sentence, 4, path="x.dpc", num_tags=TAGS, dim=DIM)
    with pytest.raises(ContributionError, match=f"x.dpc: sentence 4 has vectors of size {DIM}; expected 5"):
        check_sentence(sentence, 4, path="x.dpc", num_tags=TAGS, dim=5)
    for problem, message in PROBLEMS.items():
        with pytest.raises(ContributionError, match=f"x.dpc: sentence 4 {message}"):
            check_sentence(ContributionSentence(*_bad(vectors, tags, casing, problem)), 4, path="x.dpc",
                           num_tags=TAGS, dim=DIM)
