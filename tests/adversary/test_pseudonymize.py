import random

import numpy as np
import pytest
from gensim.models import KeyedVectors

from adversary.pseudonymize import Pseudonymizer
from corpus import Document, Span
from corpus.prepare import prepare_document
from representer.embeddings import Embeddings

WORDS = {"smith": [1, 0, 0], "jones": [0.9, 0.1, 0], "brown": [0.8, 0.2, 0], "boston": [0, 1, 0],
         "denver": [0, 0.9, 0.1], "the": [0, 0, 1], "seen": [0.3, 0.3, 0.3], "12": [0.5, 0, 0.5], "7": [0.4, 0, 0.6], "34": [0.45, 0, 0.55]}


@pytest.fixture(scope="module")
def embeddings():
    kv = KeyedVectors(3)
    kv.add_vectors(list(WORDS), np.array(list(WORDS.values()), dtype=np.float32))
    return Embeddings(kv, "toy")


DOC = Document("d", "Seen Smith in BOSTON on 12 at the zqx.",
               (Span(5, 10, "PATIENT", "Smith"), Span(14, 20, "CITY", "BOSTON"), Span(24, 26, "DATE", "12"),
                Span(34, 37, "OTHER", "zqx")))


def test_one_neighbour_changes_nothing(embeddings):
    assert Pseudonymizer(embeddings, 1).document(DOC, random.Random(0)) == DOC


def test_phi_tokens_become_neighbours_with_their_casing_and_spans_follow(embeddings):
    seen, numbers = set(), set()
    for seed in range(30):
        doc = Pseudonymizer(embeddings, 3).document(DOC, random.Random(seed))
        name, city, number, other = (s.text for s in doc.spans)
        assert name in {"Smith", "Jones", "Brown"} and city in {"BOSTON", "DENVER", "SEEN"}
        assert other == "zqx"  # out of vocabulary: unchanged
        assert doc.text.startswith("Seen ") and doc.text.endswith(" at the zqx.")
        seen.add(name)
        numbers.add(number)
    assert seen == {"Smith", "Jones", "Brown"}
    assert numbers == {"12", "34"}  # digit words of the same length only


def test_only_given_positions_are_replaced(embeddings):
    sentence = prepare_document(DOC)[0]
    words = Pseudonymizer(embeddings, 9).sentence(sentence, random.Random(1), only=[1])
    assert words[0] == "Seen" and words[3:] == [t.text for t in sentence.tokens[3:]]


def test_stop_words_and_punctuation_are_never_replaced(embeddings):
    pseudonymizer = Pseudonymizer(embeddings, 9)
    assert not pseudonymizer.replaceable("the") and not pseudonymizer.replaceable(".")
    assert pseudonymizer.replaceable("Smith")


def test_neighbours_must_be_positive(embeddings):
    with pytest.raises(ValueError, match="neighbours"):
        Pseudonymizer(embeddings, 0)


def test_pseudonymize_command_writes_a_valid_corpus_in_another_format(tmp_path):
    from typer.testing import CliRunner

    from corpus.formats import read_corpus, write_corpus
    from deidpool.cli import app

    write_corpus([DOC], tmp_path / "in", "i2b2")
    result = CliRunner().invoke(app, ["pseudonymize", str(tmp_path / "in"), str(tmp_path / "out"), "--format", "i2b2",
                                      "--to", "brat", "-n", "50", "--seed", "3"])
    assert result.exit_code == 0, result.output
    [doc] = read_corpus(tmp_path / "out", "brat", strict=True)
    assert [s.source_type for s in doc.spans] == [s.source_type for s in DOC.spans]
    assert doc.text != DOC.text and doc.text.endswith(" at the zqx.")
