import numpy as np
from gensim.models import KeyedVectors

from deidpool.adversary.runs import pseudonymized_copy, sentences
from deidpool.corpus import Document, Span
from deidpool.corpus.casing import casing_ids
from deidpool.representer.embeddings import Embeddings

DOCS = [Document("d", "Seen Przybylo in BOSTON on 12/03. Nothing else.",
                 (Span(5, 13, "PATIENT", "Przybylo"), Span(17, 23, "CITY", "BOSTON"), Span(27, 32, "DATE", "12/03")))]


def toy_embeddings() -> Embeddings:
    words = ["seen", "in", "on", "nothing", "else", "boston", "smith"]
    kv = KeyedVectors(4)
    kv.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), 4)).astype(np.float32))
    return Embeddings(kv, "toy")


def test_the_copy_replaces_every_phi_token_and_keeps_the_rest():
    originals = sentences(DOCS)
    copy = pseudonymized_copy(originals, toy_embeddings(), "en", seed=0)
    assert len(copy) == len(originals)
    for original, copied in zip(originals, copy):
        assert copied.tags == original.tags
        assert np.array_equal(copied.casing, casing_ids(copied.tokens))
        for before, after, tag in zip(original.tokens, copied.tokens, original.tags):
            if tag == "O":
                assert after.text == before.text
            elif any(c.isalnum() for c in before.text):
                assert after.text != before.text, (before.text, tag)
    assert [t.text for t in copy[1].tokens] == ["Nothing", "else", "."]  # no PHI: the sentence as it was


def test_the_copy_is_one_seeded_draw():
    originals = sentences(DOCS)
    first, again, other = (pseudonymized_copy(originals, toy_embeddings(), "en", seed) for seed in (0, 0, 1))
    words = [[t.text for s in copy for t in s.tokens] for copy in (first, again, other)]
    assert words[0] == words[1]
    assert words[0] != words[2]
