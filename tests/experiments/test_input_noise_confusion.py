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


def test_the_page_states_the_records_date_commit_and_command_not_todays():
    row = {"corpus": "physionet", "embedding": "glove", "dim": 50, "words": 5599, "tokens": 158890,
           "per_dimension_std": 0.622, "neighbour_distance": 3.02, "stddev": 0.1, "noise_norm": 0.71, "kept": 1.0}
    run = {"command": "python experiments/input_noise_confusion.py --noise 0.1", "commit": "abc1234",
           "date": "2020-01-02"}
    page = input_noise_confusion.report({"rows": [row], "record": run})
    assert page.splitlines()[2].startswith(f"2020-01-02, commit abc1234; command `{run['command']}`. ")
    trained = input_noise_confusion.report({"rows": [row], "record": {**run, "trained_at": ["0aa0000"]}})
    assert trained == page.replace("commit abc1234", "trained at 0aa0000; reported at abc1234", 1)
    assert page.splitlines()[-1] == ("| physionet | glove | 50 | 5,599 (158,890) | 0.622 | 3.02 | 0.1 | 0.71 "
                                     "| **1.000** |")
