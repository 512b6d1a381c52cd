"""experiments/input_noise_confusion.py on hand-made word vectors (nothing is trained)."""

import numpy as np
import pytest
from gensim.models import KeyedVectors

import input_noise_confusion
from deidpool.corpus.document import Document
from deidpool.representer.embeddings import Embeddings


def test_words_far_apart_survive_small_noise_and_drown_in_large_noise():
    words = np.eye(4, dtype=np.float32) * 10  # every word 14 apart from the others
    counts = np.array([1, 1, 1, 97])
    assert input_noise_confusion.kept_share(words, counts, 0.5, 2000, 0) == 1.0
    drowned = input_noise_confusion.kept_share(words, counts, 1000.0, 2000, 0)
    assert drowned == pytest.approx(0.25, abs=0.05)  # chance among four words
    assert input_noise_confusion.neighbour_distance(words, 10, 0) == pytest.approx(10 * 2 ** 0.5)


def test_corpus_words_counts_tokens_per_distinct_vector_and_leaves_unknown_words_out():
    vectors = KeyedVectors(2)
    vectors.add_vectors(["bill", "paid"], np.array([[1, 0], [0, 1]], np.float32))
    embeddings = Embeddings(vectors, "tiny")  # lowercased: "Bill" and "bill" share a vector
    words, counts = input_noise_confusion.corpus_words(
        [Document("n", "Bill paid bill. Zzyzx paid.", ())], embeddings)
    assert sorted(zip(map(tuple, words.tolist()), counts.tolist())) == [((0.0, 1.0), 2), ((1.0, 0.0), 2)]
