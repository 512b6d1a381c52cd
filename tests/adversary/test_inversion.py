"""Tests for the inversion attack A1: only the PHI tokens the method hides are scored, the
frequency baseline on a hand-made case, and the context-only inverter, which must not see them."""

import random

import keras
import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.adversary.audit import raw_embeddings
from deidpool.adversary.inversion import (
    context_only_inversion,
    frequency_baseline,
    hidden_mask,
    hidden_tokens,
    inversion_attack,
)
from deidpool.adversary.pairs import PairSource
from deidpool.corpus.casing import casing_ids
from deidpool.corpus.prepare import LabeledSentence
from deidpool.corpus.tokenize import Token
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.embeddings import Embeddings

NAMES = ["smith", "jones", "brown", "boston", "denver", "austin"]
FILLERS = ["seen", "today", "visit", "home", "in", "was"]
DIM = 8


@pytest.fixture(scope="module")
def pseudonymizer():
    words = NAMES + FILLERS
    kv = KeyedVectors(DIM)
    kv.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), DIM)).astype(np.float32))
    return Pseudonymizer(Embeddings(kv, "toy"), 3)


def sentence(text: str, tags: str) -> LabeledSentence:
    """A sentence of the words of `text` tagged with the tags of `tags` ("O" or a PHI tag)."""
    tokens = [Token(word, 0, len(word)) for word in text.split()]
    return LabeledSentence(tokens, casing_ids(tokens), tags.split())


def test_only_the_tokens_the_method_hides_are_scored(pseudonymizer):
    # PHI: "/" (punctuation) is never replaced, "zzq" (out of vocabulary) gives no fake pair;
    # "in", a function word, is hidden like any other word.
    pairs = PairSource([sentence("Smith / Jones was in Boston zzq", "B-NAME I-NAME I-NAME O B-CITY I-CITY I-CITY"),
                        sentence("seen / today", "O B-DATE O"),
                        sentence("seen Denver", "O B-CITY")], pseudonymizer)
    assert len(pairs) == 2  # the sentence whose only PHI token is "/" gives no pairs
    assert hidden_mask(pairs).tolist() == [True, False, True, False, True, True, False, False, True]
    rows, categories = hidden_tokens(pairs)
    assert rows.tolist() == pseudonymizer.embeddings.lookup_ids(["smith", "jones", "in", "boston", "denver"]).tolist()
    assert categories == ["NAME", "NAME", "CITY", "CITY", "CITY"]
    keras.utils.set_random_seed(0)
    for result in (inversion_attack(raw_embeddings, pairs, pairs, epochs=1, units=4, progress=False),
                   context_only_inversion(pairs, pairs, epochs=1, units=4, progress=False)):
        assert result["tokens"] == 5 and 0 <= result["top1"] <= result["top10"] <= 1


def test_frequency_baseline_ranks_the_training_words_of_each_category(pseudonymizer):
    train = PairSource([sentence(text, tags) for text, tags in [
        ("seen Smith today", "O B-NAME O"), ("seen smith", "O B-NAME"), ("SMITH was seen", "B-NAME O O"),
        ("Jones was seen", "B-NAME O O"), ("jones today", "B-NAME O"), ("Brown was seen", "B-NAME O O"),
        ("in Boston", "O B-CITY"), ("seen Austin Denver", "O B-HOSPITAL I-HOSPITAL")]], pseudonymizer)
    # NAME: smith (3), jones (2), brown (1); CITY: boston; HOSPITAL: austin, denver (a tie: first seen first).
    test = PairSource([sentence(text, tags) for text, tags in [
        ("seen Smith Brown Jones", "O B-NAME I-NAME I-NAME"), ("Denver boston", "B-CITY B-CITY"),
        ("austin denver today", "B-HOSPITAL I-HOSPITAL O"), ("seen Brown", "O B-DOCTOR")]], pseudonymizer)
    # best guesses: smith (1st), brown (3rd), jones (2nd), denver (none), boston (1st), austin (1st),
    # denver (2nd), brown as DOCTOR (no DOCTOR in training: none).
    assert frequency_baseline(train, test) == {"tokens": 8, "top1": 3 / 8, "top10": 6 / 8}


def toy_pairs(pseudonymizer, count: int, seed: int) -> PairSource:
    """Sentences "filler NAME filler" whose context says nothing about the name."""
    rng = random.Random(seed)
    return PairSource([sentence(f"{rng.choice(FILLERS[:4])} {rng.choice(NAMES)} {rng.choice(FILLERS[:4])}", "O B-X O")
                       for _ in range(count)], pseudonymizer)


def test_the_context_only_inverter_does_not_see_the_hidden_tokens(pseudonymizer):
    train, test = toy_pairs(pseudonymizer, 200, seed=1), toy_pairs(pseudonymizer, 60, seed=2)
    options = {"epochs": 8, "units": 8, "learning_rate": 0.02, "progress": False}
    keras.utils.set_random_seed(0)
    seen = inversion_attack(raw_embeddings, train, test, **options)
    keras.utils.set_random_seed(0)
    context = context_only_inversion(train, test, **options)
    assert seen["tokens"] == context["tokens"] == 60
    assert seen["top1"] > 0.9  # the hidden word itself is easy to recover
    assert context["top1"] < 0.5  # from the context alone it is a guess among six names


def test_an_inversion_stopped_by_its_time_budget_resumes_to_the_same_estimates(pseudonymizer, tmp_path, monkeypatch):
    """On the export path too: every epoch's fresh pseudonymization is a function of the epoch."""
    from deidpool.adversary.inversion import in_vocabulary, inverter_estimates
    from deidpool.representer import training as training_module
    from deidpool.representer.training import TimeBudgetExhausted, time_budget

    train = PairSource(toy_pairs(pseudonymizer, 60, seed=3).sentences, pseudonymizer, export_path=True)
    test = toy_pairs(pseudonymizer, 20, seed=4)
    test = PairSource(test.sentences, pseudonymizer, export_path=True)
    options = {"epochs": 4, "units": 4, "progress": False}

    def raw(batch):
        return batch["shared"]

    keras.utils.set_random_seed(0)
    whole = inverter_estimates(raw, in_vocabulary, train, test, **options)
    clock = type("Clock", (), {"now": 0.0})()

    def perf_counter():  # an epoch's two readings are 5 s apart; each advances the clock
        clock.now += 5.0
        return clock.now

    monkeypatch.setattr(training_module.time, "monotonic", lambda: clock.now)
    monkeypatch.setattr("deidpool.adversary.inversion.time.perf_counter", perf_counter)
    keras.utils.set_random_seed(0)
    checkpoint, stops = tmp_path / "inverter.npz", 0
    while True:
        try:
            with time_budget(12):  # one 5 s epoch fits, the next one would end past the deadline
                chunked = inverter_estimates(raw, in_vocabulary, train, test, checkpoint=checkpoint, **options)
            break
        except TimeBudgetExhausted:
            stops += 1
    assert stops == 3
    np.testing.assert_allclose(chunked, whole, rtol=1e-5, atol=1e-6)
