"""experiments/phi_candidate_search.py on tiny data: the attack names the original PHI token when the
export carries it (no pseudonymization) and does not beat chance under surrogates, whose draws do
not depend on the original; the results page reads the target on the replaced tokens."""

import keras
import pytest

from deidpool.adversary.pseudonymize import Pseudonymizer
from deidpool.adversary.runs import sentences
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
    assert rows["replaced, centred on a decoy"]["count"] == 60
    result = {"date": "today", "commit": "abc", "command": "python experiments/phi_candidate_search.py",
              "seconds": 1.0, "representer": "r.keras", "embeddings": "tiny", "language": "es", "test": "dev",
              "pseudonymization": "surrogates", "neighbours": 100, "seed": 0, "attack": attack}
    page = table(result)
    assert f"| replaced | 60 | **{rows['replaced']['rate']:.3f}** |" in page
    assert "Target (issue #37)" in page and "centred on a decoy the same search reads" in page
