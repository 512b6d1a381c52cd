"""experiments/phi_candidate_search.py on tiny data: the attack names the original PHI token when the
export carries it (no pseudonymization) and does not beat chance under surrogates, whose draws do
not depend on the original; the results page reads the target on the replaced tokens."""

import keras
import pytest

from deidpool.adversary.runs import sentences
from deidpool.corpus import Document, Span
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.noise import set_deterministic
from deidpool.representer.representation import build_representer
from nonphi_readback import ExportedNotes
from phi_candidate_search import decoys, phi_candidate_search, phi_targets, table
from tests.experiments.test_nonphi_readback import DIM, NAMES, documents, tiny_embeddings

K = 4  # the tiny vocabulary's four names: every candidate set is all of them


@pytest.fixture(scope="module")
def embeddings():
    return tiny_embeddings()


@pytest.fixture(scope="module")
def representer():
    keras.utils.set_random_seed(0)
    model = build_representer(DIM, repr_size=6, lstm_units=8)
    set_deterministic(model)
    return model


def exported(embeddings, scheme: str, neighbours: int = 2) -> ExportedNotes:
    return ExportedNotes(sentences(documents(60, 7)), Pseudonymizer(embeddings, neighbours, scheme, "es"))


def test_only_gold_phi_tokens_with_a_vector_are_attacked(embeddings):
    test = exported(embeddings, "surrogates")
    targets = phi_targets(test, 1000, 0)
    assert len(targets) == 60  # one name per sentence
    assert all(test.tags[test.offsets[s] + i] == "B-PATIENT" for s, i in targets)


def test_a_decoy_is_another_word_of_the_targets_label(embeddings):
    test = exported(embeddings, "surrogates")
    targets = phi_targets(test, 1000, 0)
    chosen = decoys(test, targets, 0)
    originals = [test.words[test.offsets[s] + i] for s, i in targets]
    assert all(decoy != original and decoy.lower() in NAMES for decoy, original in zip(chosen, originals))


def decoys_with_capitals(embeddings, in_capitals: set[int]) -> dict[str, str | None]:
    """Each target word's decoy when the names of the documents `in_capitals` are written in capitals."""
    def written(index: int, document: Document) -> Document:
        span = document.spans[0]
        name = span.text.upper() if index in in_capitals else span.text
        return Document(document.id, document.text[:span.start] + name + document.text[span.end:],
                        (Span(span.start, span.end, "PATIENT", name),))

    test = ExportedNotes(sentences([written(i, d) for i, d in enumerate(documents(60, 7))]),
                         Pseudonymizer(embeddings, 2, "surrogates", "es"))
    targets = phi_targets(test, 1000, 0)
    return dict(zip([test.words[test.offsets[s] + i] for s, i in targets], decoys(test, targets, 0)))


def test_a_decoy_shows_the_shape_the_targets_surrogate_shows(embeddings):
    """A name in capitals draws its decoy among other names in capitals, and one alone in its shape gets none."""
    chosen = decoys_with_capitals(embeddings, {0, 2})  # "Smith" and "Lopez"
    assert chosen["SMITH"] == "LOPEZ" and chosen["LOPEZ"] == "SMITH"
    assert all(decoy[0].isupper() and not decoy.isupper() for word, decoy in chosen.items() if not word.isupper())
    assert decoys_with_capitals(embeddings, {0})["SMITH"] is None


def test_the_attack_names_an_original_the_export_carries(embeddings, representer):
    attack = phi_candidate_search(representer, exported(embeddings, "groups", neighbours=1), k=K, tokens=60)
    rows = {row["tokens"]: row for row in attack["rows"]}
    assert rows["PHI tokens"]["rate"] == 1.0 and rows["kept as written"]["count"] == 60
    assert rows["replaced, centred on a decoy"]["count"] == 0  # nothing was replaced
    assert rows["PHI tokens"]["chance"] == pytest.approx(1 / K)


def test_under_surrogates_the_attack_does_not_beat_chance(embeddings, representer):
    attack = phi_candidate_search(representer, exported(embeddings, "surrogates"), k=K, tokens=60)
    rows = {row["tokens"]: row for row in attack["rows"]}
    assert rows["replaced"]["count"] == 60 and rows["kept as written"]["count"] == 0
    assert rows["replaced"]["ci"][0] <= 1 / K  # the surrogates are not the tiny vocabulary's names
    assert rows["replaced, centred on a decoy"]["count"] == rows["replaced, those with a decoy"]["count"] == 60
    result = {"date": "today", "commit": "abc", "command": "python experiments/phi_candidate_search.py",
              "seconds": 1.0, "representer": "r.keras", "embeddings": "tiny", "language": "es", "test": "dev",
              "pseudonymization": "surrogates", "neighbours": 100, "seed": 0, "attack": attack}
    page = table(result)
    assert f"| replaced | 60 | **{rows['replaced']['rate']:.3f}** |" in page
    assert "Target (issue #37)" in page and "on the 60 replaced tokens with a decoy the original is named" in page
    labels = attack["labels"]
    assert labels and sum(row["count"] for row in labels) <= 60 and all(row["count"] >= 10 for row in labels)
    assert all(f"| {row['tokens']} | {row['count']} |" in page for row in labels)
    assert "Per label (replaced tokens, labels with at least 10 sampled" in page
    decoyed = attack["label_decoys"]
    assert decoyed and all(row["decoy"]["count"] == row["original"]["count"] >= 10 for row in decoyed)
    assert sum(row["decoy"]["count"] for row in decoyed) <= 60
    assert "Per label against its decoys" in page
    assert all(f"| {row['label']} | {row['original']['count']} |" in page for row in decoyed)


def test_the_export_says_more_than_the_shape_only_where_the_original_beats_its_decoys_interval():
    from phi_candidate_search import beyond_the_shape

    assert beyond_the_shape({"ci": [0.30, 0.50], "chance": 0.01}, {"rate": 0.25})
    assert not beyond_the_shape({"ci": [0.30, 0.50], "chance": 0.01}, {"rate": 0.35})
    assert not beyond_the_shape({"ci": [0.003, 0.02], "chance": 0.01}, {"rate": 0.0})  # above the decoy, not chance
