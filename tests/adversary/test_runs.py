import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.adversary.runs import AuditSettings, pseudonymized_copy, sentences
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


@pytest.mark.parametrize("field, value, message", [
    ("scheme", "clusters", "scheme must be one of neighbours, groups, surrogates, got 'clusters'"),
    ("epochs", 0, "epochs must be at least 1, got 0"),
    ("passes", 0, "passes must be at least 1, got 0"),
    ("held_out_draws", 0, "held_out_draws must be at least 1, got 0"),
    ("learning_rate", -0.1, "learning_rate must be at least 0, got -0.1"),
])
def test_wrong_audit_settings_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        AuditSettings(**{field: value})


def test_audit_settings_leave_passes_and_inversion_epochs_to_the_audit():
    assert (AuditSettings().passes, AuditSettings().inversion_epochs) == (None, None)
