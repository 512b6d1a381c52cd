"""Tests for real/fake pair generation and its length-bucketed batches."""

import random

import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.adversary.pairs import PairSource, pair_batches
from deidpool.corpus.casing import casing_ids
from deidpool.corpus.prepare import LabeledSentence
from deidpool.corpus.tokenize import Token
from deidpool.pseudonymization.pseudonymize import Pseudonymizer, tag_category
from deidpool.representer.embeddings import Embeddings

WORDS = {"smith": [1, 0, 0, 0], "jones": [0.9, 0.1, 0, 0], "brown": [0.8, 0.2, 0, 0], "boston": [0, 1, 0, 0],
         "denver": [0, 0.9, 0.1, 0], "austin": [0, 0.8, 0.2, 0], "seen": [0.3, 0.3, 0.3, 0], "the": [0, 0, 1, 0],
         "in": [0, 0, 0.9, 0.1], "patient": [0.2, 0.1, 0.5, 0.5], "12": [0.5, 0, 0, 0.5], "7": [0.4, 0, 0, 0.6],
         "9": [0.35, 0, 0, 0.65], "34": [0.45, 0, 0, 0.55],
         "twin": [0, 0, 0, 1], "twain": [0, 0, 0, 1]}
NAMES, CITIES = ["Smith", "Jones", "Brown"], ["Boston", "Denver", "Austin"]


@pytest.fixture(scope="module")
def embeddings():
    kv = KeyedVectors(4)
    kv.add_vectors(list(WORDS), np.array(list(WORDS.values()), dtype=np.float32))
    return Embeddings(kv, "toy")


def sentence(*words):
    """A labeled sentence from words like "seen" or "Smith/PATIENT" (tag B-PATIENT)."""
    tokens, tags, start = [], [], 0
    for word in words:
        text, _, label = word.partition("/")
        tokens.append(Token(text, start, start + len(text)))
        tags.append(f"B-{label}" if label else "O")
        start += len(text) + 1
    return LabeledSentence(tokens, casing_ids(tokens), tags)


def corpus(count, seed=0):
    """`count` PHI sentences of 2 to 8 tokens, each with a name, a city or a number."""
    rng = random.Random(seed)
    phi = [f"{rng.choice(NAMES)}/PATIENT", f"{rng.choice(CITIES)}/CITY", "12/DATE"]
    return [sentence(*rng.sample(["seen", "the", "patient", "in", "zqx"], rng.randint(1, 5)), rng.choice(phi),
                     *["in"] * rng.randint(0, 2))
            for _ in range(count)]


@pytest.fixture(scope="module")
def source(embeddings):
    return PairSource(corpus(41), Pseudonymizer(embeddings, 3))


def test_only_sentences_with_a_replaceable_phi_token_give_pairs(embeddings):
    sentences = [sentence("seen", "Smith/PATIENT", "in", "Boston/CITY"),
                 sentence("the", "patient", "was", "seen"),  # no PHI
                 sentence("seen", "Zqx/PATIENT"),  # out of vocabulary
                 sentence("seen", "-/PATIENT"),  # punctuation
                 sentence("Twin/PATIENT", "seen"),  # its only neighbour has the same vector
                 sentence("on", "7/DATE"),
                 sentence("The/PATIENT", "seen")]  # a function word: replaced like any other
    source = PairSource(sentences, Pseudonymizer(embeddings, 2))
    assert source.sentences == [sentences[0], sentences[5], sentences[6]]
    assert source.positions == [[1, 3], [1], [0]]
    np.testing.assert_array_equal(source.lengths, [4, 2, 2])


def test_pairs_need_two_neighbours_and_a_phi_sentence(embeddings):
    with pytest.raises(ValueError, match="neighbours"):
        PairSource(corpus(3), Pseudonymizer(embeddings, 1))
    with pytest.raises(ValueError, match="no sentence"):
        PairSource([sentence("seen", "Zqx/PATIENT")], Pseudonymizer(embeddings, 3))


def test_real_pairs_are_identical_and_fake_pairs_differ_in_exactly_one_phi_token(source, embeddings):
    for epoch in range(3):
        pairs = source.draw(seed=5, epoch=epoch)
        for index, (start, length) in enumerate(zip(source.offsets, source.lengths)):
            original = pairs.original[start:start + length]
            partner = pairs.partner[start:start + length]
            np.testing.assert_array_equal(original, embeddings.sentence_matrix(source.sentences[index].tokens))
            differs = np.flatnonzero(np.any(original != partner, axis=1))
            if pairs.labels[index] == 1:
                assert len(differs) == 0 and pairs.replaced[index] == -1
            else:
                assert list(differs) == [pairs.replaced[index]]
                word = source.sentences[index].tokens[differs[0]].text
                assert source.sentences[index].tags[differs[0]] != "O"
                category = tag_category(source.sentences[index].tags[differs[0]])
                others = [w for w in source.pseudonymizer.candidates(word, category) if w != word]
                assert any(np.array_equal(partner[differs[0]], embeddings.vector(other)) for other in others)


def numbers(*words):
    """Embeddings of the given numbers, each with its own vector, and the 6-digit shape."""
    vectors = np.random.default_rng(0).normal(size=(len(words) + 1, 4)).astype(np.float32)
    kv = KeyedVectors(4)
    kv.add_vectors([*words, "000000"], vectors)
    return Embeddings(kv, "numbers")


def fakes(source, seed_count=20):
    """The words each fake pair put in, by sentence index (found by their vectors)."""
    embeddings = source.pseudonymizer.embeddings
    vocabulary = [*embeddings.kv.index_to_key, "zzz"]  # "zzz": the zero vector of unknown words
    found = {}
    for seed in range(seed_count):
        pairs = source.draw(seed)
        for index in np.flatnonzero(pairs.labels == 0):
            row = pairs.partner[source.offsets[index] + pairs.replaced[index]]
            found.setdefault(index, []).extend(w for w in vocabulary if np.array_equal(embeddings.vector(w), row))
    return found


def test_fake_numbers_keep_the_category_of_their_tag():
    source = PairSource([sentence("aged", "95/AGE"), sentence("id", "95/ID")],
                        Pseudonymizer(numbers(*(str(v) for v in range(10, 100))), 2))
    found = fakes(source)
    assert {int(w) for w in found[0]} <= set(range(90, 100)) and "95" not in found[0]
    assert not {int(w) for w in found[1]} <= set(range(90, 100))


def test_numbers_whose_surrogates_keep_their_vector_give_no_fake_pair():
    """"654321" and nearly all of its surrogates embed as the shape "000000", and the unknown
    "5551234" and its surrogates as zeros: a fake with another vector would be one no export
    makes. "2067" (its own vector) mostly becomes an unknown, zero-vector year: it gives fakes."""
    source = PairSource([sentence("mrn", "654321/ID", "5551234/PHONE", "2067/DATE")],
                        Pseudonymizer(numbers("123456", "2067"), 2))
    assert source.positions == [[3]]
    assert set(fakes(source)[0]) == {"zzz"}


def test_labels_are_balanced_in_every_epoch(source):
    for epoch in range(5):
        labels = source.draw(seed=1, epoch=epoch).labels
        assert len(labels) == 41 and abs(labels.sum() - 20.5) == 0.5


def test_every_epoch_draws_fresh_pairs_reproducibly(source):
    first, second = source.draw(seed=1, epoch=0), source.draw(seed=1, epoch=1)
    assert not np.array_equal(first.labels, second.labels)
    again = source.draw(seed=1, epoch=1)
    np.testing.assert_array_equal(again.labels, second.labels)
    np.testing.assert_array_equal(again.partner, second.partner)
    batches = [[batch["index"].numpy().tolist() for batch in source.epoch(seed=1, epoch=epoch, batch_size=8)]
               for epoch in (0, 1)]
    assert batches[0] != batches[1]


def test_held_out_pairs_are_fixed_for_a_seed(embeddings, source):
    def held_out(pair_source, seed):
        return [{name: value.numpy() for name, value in batch.items()}
                for batch in pair_source.held_out(seed=seed, batch_size=8)]

    first = held_out(source, 3)
    for other in (held_out(source, 3), held_out(PairSource(corpus(41), Pseudonymizer(embeddings, 3)), 3)):
        assert len(other) == len(first)
        for a, b in zip(first, other):
            for name in a:
                np.testing.assert_array_equal(a[name], b[name])
    assert any(not np.array_equal(a["label"], b["label"]) for a, b in zip(first, held_out(source, 4)))


def test_under_groups_every_fake_replacement_has_its_originals_candidates(embeddings):
    sentences = corpus(41)
    groups = PairSource(sentences, Pseudonymizer(embeddings, 3, "groups")).fake_symmetry(seed=1)
    assert groups["fakes"] > 100 and groups["same_candidates"] == groups["fakes"]
    neighbours = PairSource(sentences, Pseudonymizer(embeddings, 3, "neighbours")).fake_symmetry(seed=1)
    assert 0 < neighbours["same_candidates"] < neighbours["fakes"]  # a date's range moves with its value


def test_several_held_out_draws_are_fresh_draws_of_the_same_sentences(source):
    def pairs(draws):
        batches = [{name: value.numpy() for name, value in batch.items()}
                   for batch in source.held_out(seed=3, batch_size=8, draws=draws)]
        assert all(np.array_equal(batch["sentence"], batch["index"] % len(source)) for batch in batches)
        return {int(index): label for batch in batches for index, label in zip(batch["index"], batch["label"])}

    one, three = pairs(1), pairs(3)
    assert sorted(three) == list(range(3 * len(source)))
    assert all(three[index] == label for index, label in one.items())  # the first draw is the single one
    labels = [[three[k * len(source) + i] for i in range(len(source))] for k in range(3)]
    assert labels[0] != labels[1] != labels[2]  # then fresh real/fake draws


@pytest.mark.parametrize("shuffled", [False, True])
def test_batches_are_padded_masked_and_grouped_by_length(source, shuffled):
    pairs = source.draw(seed=2)
    rng = np.random.default_rng(0) if shuffled else None
    seen, indices = [], []
    for batch in pair_batches(pairs, batch_size=8, rng=rng):
        index, mask = batch["index"].numpy(), batch["mask"].numpy()
        lengths = pairs.lengths[index]
        assert len(index) <= 8 and mask.shape[1] == lengths.max()
        np.testing.assert_array_equal(mask.sum(axis=1), lengths)
        np.testing.assert_array_equal(batch["label"].numpy(), pairs.labels[index])
        for row, pair in enumerate(index):
            start, length = source.offsets[pair], pairs.lengths[pair]
            for name in ("original", "partner"):
                values = batch[name].numpy()[row]
                np.testing.assert_array_equal(values[:length], getattr(pairs, name)[start:start + length])
                assert not values[length:].any()
        seen.append(lengths)
        indices.extend(index)
    assert sorted(indices) == list(range(len(pairs)))
    # sorted by length before cutting: the length ranges of the batches do not overlap
    ranges = sorted((lengths.min(), lengths.max()) for lengths in seen)
    assert all(high <= low for (_, high), (low, _) in zip(ranges, ranges[1:]))


def test_batches_feed_the_adversaries(source):
    from deidpool.adversary.models import CombinedAdversary, adversary_step
    from deidpool.representer.representation import build_representer

    batch = next(iter(source.epoch(seed=0, epoch=0)))
    metrics = adversary_step(CombinedAdversary(4), build_representer(4, repr_size=3, lstm_units=2), batch)
    assert float(metrics["loss"]) > 0 and 0 <= float(metrics["accuracy"]) <= 1


def test_on_the_export_path_the_representer_reads_freshly_pseudonymized_copies(source):
    """The attacker's side keeps the original; what the representer reads has every PHI token
    replaced afresh (a real pair's two sides independently), and nothing else changed."""
    export = PairSource(source.sentences, source.pseudonymizer, export_path=True)
    phi = np.concatenate([[tag != "O" for tag in sentence.tags] for sentence in export.sentences])
    pairs = export.draw(seed=3)
    np.testing.assert_array_equal(pairs.original, export.features)
    for shared, raw in ((pairs.shared_original, pairs.original), (pairs.shared_partner, pairs.partner)):
        np.testing.assert_array_equal(shared[~phi], raw[~phi])
        assert not np.array_equal(shared[phi], raw[phi])
    assert not np.array_equal(pairs.shared_original[phi], pairs.shared_partner[phi])
    bare = source.draw(seed=3)
    assert bare.shared_original is bare.original and bare.shared_partner is bare.partner


def test_under_surrogates_every_known_phi_word_gives_fake_pairs_place_words_included():
    """No word of a span is kept as such any more but the function words joining its parts, which a
    fake's one-token draw does not see: "Hospital" (a place word, drawn whatever it was) and "of"
    give fake pairs like the name."""
    kv = KeyedVectors(4)
    kv.add_vectors([*WORDS, "hospital", "of"], np.array([*WORDS.values(), [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]],
                                                        dtype=np.float32))
    pseudonymizer = Pseudonymizer(Embeddings(kv, "toy"), 3, "surrogates")
    words = ["seen", "Smith", "of", "Hospital", "today"]
    tokens = [Token(word, 6 * i, 6 * i + len(word)) for i, word in enumerate(words)]
    span = LabeledSentence(tokens, casing_ids(tokens), ["O", "B-ORGANIZATION", "I-ORGANIZATION", "I-ORGANIZATION", "O"])
    assert PairSource([span], pseudonymizer).positions == [[1, 2, 3]]
