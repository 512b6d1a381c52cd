"""Tests for sentence data and its length-bucketed batch pipelines."""

import numpy as np
import pytest

from deidpool.corpus.document import Document, Span
from deidpool.corpus.metrics import evaluate_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.representer.characters import char_ids
from deidpool.representer.dataset import (
    SHUFFLE_SENTENCES,
    SentenceData,
    SentenceStream,
    inference_batches,
    predicted_documents,
    training_batches,
)

DIM = 4
DOCUMENTS = [
    Document("a", "John Smith was seen on 12/03/2020.\n\nHe is 45 years old.",
             (Span(0, 10, "PATIENT", "John Smith"), Span(23, 33, "DATE", "12/03/2020"), Span(42, 44, "AGE", "45"))),
    Document("b", "No PHI here.\n\nCall Mary at St. Mary's.", (Span(19, 23, "PATIENT", "Mary"),)),
]
VOCABULARY = tag_vocabulary(["AGE", "DATE", "PATIENT"])


class FakeEmbeddings:
    """Vectors made from the token text (its length and first character), like `Embeddings`."""

    dim = DIM

    def sentence_matrix(self, tokens):
        return np.array([[len(t.text), ord(t.text[0]), 1, 0] for t in tokens], dtype=np.float32).reshape(-1, DIM)


def numbered(lengths, tagged=True):
    """Sentences whose token features hold (sentence number, position + 1, ...)."""
    features = [np.stack([np.full(n, i), np.arange(1, n + 1), np.ones(n), np.zeros(n)], axis=1)
                for i, n in enumerate(lengths)]
    casing = [np.arange(n) % 7 for n in lengths]
    tags = [np.arange(n) % 3 for n in lengths] if tagged else None
    return SentenceData.from_arrays(features, casing, tags)


def prepared():
    return [prepare_document(document) for document in DOCUMENTS]


def test_from_sentences_encodes_features_casing_and_tags():
    sentences = [s for doc in prepared() for s in doc]
    data = SentenceData.from_sentences(sentences, FakeEmbeddings(), VOCABULARY)
    tokens = [t for s in sentences for t in s.tokens]
    assert list(data.lengths) == [len(s.tokens) for s in sentences] and len(data) == len(sentences)
    assert data.dim == DIM
    np.testing.assert_array_equal(data.features, FakeEmbeddings().sentence_matrix(tokens))
    np.testing.assert_array_equal(data.casing, np.concatenate([s.casing for s in sentences]))
    assert [VOCABULARY[i] for i in data.tags] == [tag for s in sentences for tag in s.tags]
    assert SentenceData.from_sentences(sentences, FakeEmbeddings()).tags is None
    with pytest.raises(ValueError, match="B-AGE"):
        SentenceData.from_sentences(sentences, FakeEmbeddings(), ["O", "B-PATIENT", "I-PATIENT", "B-DATE", "I-DATE"])


def test_character_ids_are_kept_when_asked_for_and_batched_with_the_tokens():
    sentences = [s for doc in prepared() for s in doc]
    data = SentenceData.from_sentences(sentences, FakeEmbeddings(), VOCABULARY, chars=True)
    tokens = [t.text for s in sentences for t in s.tokens]
    np.testing.assert_array_equal(data.chars, char_ids(tokens))
    assert SentenceData.from_sentences(sentences, FakeEmbeddings()).chars is None
    starts = np.cumsum(data.lengths) - data.lengths
    for batch in inference_batches(data, 2).as_numpy_iterator():
        for row, (index, length) in enumerate(zip(batch["index"], batch["length"])):
            own = data.chars[starts[index]:starts[index] + length]
            np.testing.assert_array_equal(batch["chars"][row, :length], own)
            assert not batch["chars"][row, length:].any()
    with pytest.raises(ValueError, match="chars"):
        SentenceData(data.features, data.casing, data.lengths, chars=data.chars[1:])


def test_inconsistent_arrays_are_refused():
    with pytest.raises(ValueError, match="one row per token"):
        SentenceData(np.zeros((3, DIM), np.float32), np.zeros(2, np.int8), np.array([3]))
    with pytest.raises(ValueError, match="at least one token"):
        SentenceData(np.zeros((2, DIM), np.float32), np.zeros(2, np.int8), np.array([2, 0]))


def test_tag_counts():
    np.testing.assert_array_equal(numbered([1, 4]).tag_counts(5), [3, 1, 1, 0, 0])


def test_training_batches_are_padded_per_batch_and_cover_every_sentence_once():
    lengths = np.random.default_rng(0).integers(1, 41, size=300)
    data = numbered(lengths)
    seen = []
    for batch in training_batches(data, seed=1).as_numpy_iterator():
        index, length, time = batch["index"], batch["length"], batch["mask"].shape[1]
        assert len(index) <= 32
        assert time == lengths[index].max()  # padded to this batch's longest sentence only
        np.testing.assert_array_equal(length, lengths[index])
        np.testing.assert_array_equal(batch["mask"], np.arange(time)[None] < length[:, None])
        np.testing.assert_array_equal(batch["features"][..., 0], np.where(batch["mask"], index[:, None], 0))
        np.testing.assert_array_equal(batch["features"][..., 1], np.where(batch["mask"], np.arange(1, time + 1), 0))
        np.testing.assert_array_equal(batch["tags"], np.where(batch["mask"], np.arange(time) % 3, 0))
        seen.extend(index)
    assert sorted(seen) == list(range(len(lengths)))


def test_training_order_depends_on_the_seed_only():
    data = numbered(np.random.default_rng(0).integers(1, 20, size=100))

    def order(seed):
        return [int(i) for batch in training_batches(data, seed).as_numpy_iterator() for i in batch["index"]]

    assert order(3) == order(np.random.default_rng(3)) and order(3) != order(4)


def test_inference_batches_sort_by_length_and_index_restores_order():
    lengths = np.random.default_rng(2).integers(1, 30, size=50)
    data = numbered(lengths, tagged=False)
    restored = [None] * len(lengths)
    batches = list(inference_batches(data, batch_size=8).as_numpy_iterator())
    assert "tags" not in batches[0]
    for batch in batches:
        for row, index, length in zip(batch["features"], batch["index"], batch["length"]):
            restored[index] = row[:length]
    np.testing.assert_array_equal(np.concatenate(restored), data.features)
    batch_lengths = np.concatenate([batch["length"] for batch in batches])
    assert list(batch_lengths) == sorted(lengths)


def stream_of(data: SentenceData, shards: int) -> SentenceStream:
    """The sentences of `data` in `shards` shards of consecutive sentences."""
    cuts = np.cumsum(data.lengths)[:-1]
    sentences = list(zip(*(np.split(column, cuts) for column in (data.features, data.casing, data.tags))))
    parts = np.array_split(np.arange(len(sentences)), shards)
    return SentenceStream(tuple(lambda part=part: (sentences[i] for i in part) for part in parts), len(data),
                          data.dim, int(data.lengths.max()))


def test_a_stream_is_batched_by_length_and_shuffled_across_shards_in_bounded_memory():
    lengths = np.random.default_rng(0).integers(1, 41, size=3 * SHUFFLE_SENTENCES)
    stream = stream_of(numbered(lengths), shards=12)

    def numbers(seed):
        order = []
        for batch in training_batches(stream, seed).as_numpy_iterator():
            time = batch["mask"].shape[1]
            assert len(batch["length"]) <= 32 and time == batch["length"].max()
            np.testing.assert_array_equal(batch["mask"], np.arange(time)[None] < batch["length"][:, None])
            numbers = batch["features"][:, 0, 0].astype(int)
            np.testing.assert_array_equal(batch["length"], lengths[numbers])
            np.testing.assert_array_equal(batch["tags"], np.where(batch["mask"], np.arange(time) % 3, 0))
            order.extend(numbers)
        return order

    order = numbers(3)
    assert sorted(order) == list(range(len(lengths)))  # every sentence once
    shard_of_first = {number * 12 // len(lengths) for number in order[:100]}
    assert len(shard_of_first) >= 3  # the first batches mix several shards
    assert order == numbers(np.random.default_rng(3)) and order != numbers(4)


def test_a_stream_is_validated_shard_after_shard_by_length_bucket():
    lengths = np.random.default_rng(2).integers(1, 30, size=200)
    stream = stream_of(numbered(lengths), shards=3)
    batches = list(inference_batches(stream, batch_size=16).as_numpy_iterator())
    numbers = np.concatenate([batch["features"][:, 0, 0] for batch in batches]).astype(int)
    assert sorted(numbers) == list(range(len(lengths))) and len(np.concatenate([b["index"] for b in batches])) == 200
    assert all(np.ptp(batch["length"]) <= max(1, batch["length"].max() // 5) for batch in batches)  # one bucket each


def test_predicted_documents_decode_tags_back_to_spans_for_evaluation():
    sentences = prepared()
    gold = [np.array([VOCABULARY.index(tag) for tag in s.tags]) for doc in sentences for s in doc]
    documents = predicted_documents(DOCUMENTS, sentences, gold, VOCABULARY)
    assert documents == [document.validate() for document in DOCUMENTS]
    assert evaluate_corpus(DOCUMENTS, documents)["entity_strict"]["f1"] == 1.0
    with pytest.raises(ValueError, match="predictions"):
        predicted_documents(DOCUMENTS, sentences, gold[:-1], VOCABULARY)
