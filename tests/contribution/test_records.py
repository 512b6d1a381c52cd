"""Tests of the sentence record codec: round trip, sizes, and refusal of records cut short or
of sentences without one vector, tag and casing id per token."""

import numpy as np
import pytest

from deidpool.contribution.records import (
    ContributionError,
    decode_sentences,
    encode_sentence,
    record_size,
    record_tokens,
)

from .conftest import DIM, random_sentences


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_run_of_records_decodes_to_its_sentences(dtype):
    sentences = random_sentences(count=20)
    records = [encode_sentence(*sentence, dtype=dtype) for sentence in sentences]
    assert [len(record) for record in records] == [record_size(len(tags), DIM, dtype) for _, tags, _ in sentences]
    assert [record_tokens(record) for record in records] == [len(tags) for _, tags, _ in sentences]
    decoded = list(decode_sentences(b"".join(records), DIM, dtype))
    assert len(decoded) == len(sentences)
    for (vectors, tags, casing), got in zip(sentences, decoded):
        assert got.vectors.shape == (len(tags), DIM) and got.vectors.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.tags, tags)
        np.testing.assert_array_equal(got.casing, casing)


@pytest.mark.parametrize("cut", [1, 3, 20])
def test_a_record_cut_short_is_refused(cut):
    data = b"".join(encode_sentence(*sentence) for sentence in random_sentences(count=3))
    with pytest.raises(ContributionError, match="cut short"):
        list(decode_sentences(data[:-cut], DIM, "float16"))


def test_a_sentence_needs_one_vector_tag_and_casing_id_per_token():
    vectors, tags, casing = random_sentences(count=1)[0]
    for arguments in ((vectors, tags[:-1], casing), (vectors, tags, casing[:-1]), (vectors[:0], tags[:0], casing[:0]),
                      (vectors.ravel(), tags, casing)):
        with pytest.raises(ValueError, match="one vector, tag and casing id each"):
            encode_sentence(*arguments)
