"""Tests of adversary.linkage: sentence-pair scores worked out by hand on a toy neighbour graph
(raw text, the neighbours scheme, the groups scheme, numbers) and the linkage metrics."""

import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.adversary.linkage import linkage_metrics, pair_scores, seen_phi
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.embeddings import Embeddings

# Words at angles (degrees) on the unit circle; with N = 2 a word's candidates are itself and its
# nearest word in angle: paris {paris, lyon}, lyon {lyon, paris}, nantes {nantes, lyon},
# rennes {rennes, brest}, brest {brest, rennes}.
ANGLES = {"paris": 0, "lyon": 10, "nantes": 25, "rennes": 100, "brest": 110}


@pytest.fixture(scope="module")
def embeddings() -> Embeddings:
    kv = KeyedVectors(2)
    radians = np.radians(list(ANGLES.values()))
    kv.add_vectors(list(ANGLES), np.stack([np.cos(radians), np.sin(radians)], axis=1).astype(np.float32))
    return Embeddings(kv, "toy")


def test_raw_text_links_a_repeated_phi_word_perfectly(embeddings):
    sentences = [[("Paris", "CITY")], [("paris", "CITY"), ("12", "DATE")], [("Brest", "CITY")],
                 [("BREST", "CITY")], [("lyon", "CITY")], []]
    scores = pair_scores(sentences, embeddings)
    # CITY holds 5 tokens, paris and brest twice each: LR = 1 / (2 / 5) between their sentences.
    expected = np.zeros((6, 6))
    expected[0, 1] = expected[1, 0] = expected[2, 3] = expected[3, 2] = 2.5
    np.testing.assert_allclose(scores, expected)
    metrics = linkage_metrics(scores, ["a", "a", "b", "b", "c", "d"])
    assert metrics["auc"] == 1.0 and metrics["precision_at_1"] == 1.0
    assert metrics["sentences_at_1"] == 4 and metrics["chance_at_1"] == pytest.approx(1 / 5)
    assert (metrics["reassembled"], metrics["units"], metrics["pair_precision"]) == (1.0, 2, 1.0)


def test_sentence_scores_add_their_token_pairs(embeddings):
    scores = pair_scores([[("paris", "CITY"), ("12", "DATE")], [("Paris", "CITY"), ("12", "DATE")],
                          [("brest", "CITY")]], embeddings)
    # CITY: paris is 2 of 3 tokens, LR 3/2; DATE: 12 is all of them, LR 1.
    assert scores[0, 1] == pytest.approx(2.5) and scores[0, 2] == scores[1, 2] == 0


def test_phi_free_sentences_score_nothing(embeddings):
    pseudonymizer = Pseudonymizer(embeddings, 2)
    scores = pair_scores([[], [("paris", "CITY")], [], [("lyon", "CITY")]], embeddings, pseudonymizer)
    assert not scores[[0, 2]].any() and not scores[:, [0, 2]].any()
    assert scores[1, 3] > 0
    nothing = linkage_metrics(pair_scores([[], [], [], []], embeddings, pseudonymizer), ["a", "a", "b", "b"])
    assert nothing["auc"] == 0.5 and nothing["reassembled"] == 0.0 and nothing["pair_precision"] is None
    assert nothing["precision_at_1"] == pytest.approx(nothing["chance_at_1"]) == pytest.approx(1 / 3)


def test_neighbour_scores_by_hand(embeddings):
    pseudonymizer = Pseudonymizer(embeddings, 2)
    scores = pair_scores([[("paris", "CITY")], [("Lyon", "CITY")], [("rennes", "CITY")]], embeddings,
                         pseudonymizer, steps=1)
    # Possible originals: R(paris) = {paris, lyon}, R(lyon) = {lyon, paris, nantes},
    # R(rennes) = {rennes, brest}, each P(s | o) = 1/2. One EM step from a uniform prior: the
    # posteriors 1/2, 1/2 | 1/3, 1/3, 1/3 | 1/2, 1/2 average to pi(paris) = pi(lyon) = 5/18,
    # pi(nantes) = 1/9, pi(rennes) = pi(brest) = 1/6; under pi the posteriors are 1/2, 1/2 and
    # 5/12, 5/12, 1/6, so LR(paris, lyon) = 2 * (1/2 * 5/12) / (5/18) = 3/2; rennes shares none.
    expected = np.zeros((3, 3))
    expected[0, 1] = expected[1, 0] = 1.5
    np.testing.assert_allclose(scores, expected)


def test_groups_link_only_through_a_shared_group(embeddings):
    pseudonymizer = Pseudonymizer(embeddings, 2, scheme="groups")
    groups = {frozenset(pseudonymizer.candidates(word)) for word in ANGLES}
    assert sorted(map(len, groups)) == [2, 3] and set().union(*groups) == set(ANGLES)
    first, second = sorted(groups, key=len)
    a, b = sorted(first)
    c, d, e = sorted(second)
    sentences = [[(a, "CITY")], [(b, "CITY")], [(c, "CITY")], [(d, "CITY"), (e, "NAME")], [(e, "CITY")]]
    scores = pair_scores(sentences, embeddings, pseudonymizer)
    # Within a group LR = 1 / (share of the category's 5 tokens drawn from it): 5/2 and 5/3,
    # whether or not the surrogates are the same word; across groups and categories nothing.
    expected = np.zeros((5, 5))
    expected[0, 1] = expected[1, 0] = 2.5
    for i, j in [(2, 3), (2, 4), (3, 4)]:
        expected[i, j] = expected[j, i] = 5 / 3
    np.testing.assert_allclose(scores, expected)


@pytest.mark.parametrize("scheme, expected", [("groups", 2.0), ("neighbours", None)])
def test_numbers_link_within_their_blocks(embeddings, scheme, expected):
    pseudonymizer = Pseudonymizer(embeddings, 2, scheme=scheme)
    scores = pair_scores([[("3", "DATE")], [("7", "DATE")], [("20", "DATE")], [("25", "DATE")]], embeddings,
                         pseudonymizer)
    if expected is not None:
        # groups: 3 and 7 come from the block 1..9, 20 and 25 from 13..31, half the tokens each.
        assert scores[0, 1] == pytest.approx(expected) and scores[2, 3] == pytest.approx(expected)
        assert scores[0, 2] == scores[1, 3] == 0  # one digit or two: no common original
    else:
        assert scores[0, 1] > 0 and scores[2, 3] > 0 and scores[0, 2] == 0


def test_the_attacker_sees_phi_the_representer_receives(embeddings):
    words, tags = ["Paris", "zqxw", "12", "met"], ["B-CITY", "I-CITY", "B-DATE", "O"]
    assert seen_phi(words, tags, embeddings) == [("Paris", "CITY")]  # zqxw and 12: zero vectors


def test_ties_share_precision_at_one():
    scores = np.array([[0, 2, 2], [2, 0, 1], [2, 1, 0]], dtype=float)
    metrics = linkage_metrics(scores, ["a", "a", "b"])
    # sentence 0 ties between 1 (own) and 2: 1/2; sentence 1's best is 0 (own): 1.
    assert metrics["precision_at_1"] == pytest.approx(0.75) and metrics["auc"] == pytest.approx(0.75)
