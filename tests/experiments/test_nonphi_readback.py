"""experiments/nonphi_readback.py on tiny data: which tokens are scored, the nearest-candidate
attack against a noise-free representer (every token read back) and a constant export (no better
than chance), and the results page of a whole run."""

import random

import keras
import numpy as np
import pytest
from gensim.models import KeyedVectors

from deidpool.adversary.runs import sentences
from deidpool.client.inference import compile_representer
from deidpool.corpus.document import Document, Span
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.embeddings import Embeddings
from deidpool.representer.noise import set_deterministic
from deidpool.representer.representation import build_representer
from nonphi_readback import (
    ExportedNotes,
    candidate_readback,
    embeddings_spec,
    exported_vectors,
    inversion_readback,
    nearest_candidate,
    table,
    token_kinds,
)

DIM, K = 8, 5
NAMES = ["smith", "jones", "brown", "lopez"]
WORDS = [f"pa{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]
STOP = frozenset({"de", "el"})


def tiny_embeddings() -> Embeddings:
    """Random vectors for the names, the words and the stop words of `documents`."""
    vocabulary = [*NAMES, *WORDS, *STOP]
    vectors = np.random.default_rng(0).normal(size=(len(vocabulary), DIM)).astype(np.float32)
    kv = KeyedVectors(DIM)
    kv.add_vectors(vocabulary, vectors)
    return Embeddings(kv, "tiny")


@pytest.fixture(scope="module")
def embeddings():
    return tiny_embeddings()


def documents(count: int, seed: int) -> list[Document]:
    """One sentence per document: words, stop words and a comma around one name (gold PHI)."""
    rng, result = random.Random(seed), []
    for number in range(count):
        before = rng.sample(WORDS, 3) + ["de"]
        name = rng.choice(NAMES).capitalize()
        text = " ".join(before) + f" {name} , el " + " ".join(rng.sample(WORDS, 2))
        start = text.index(name)
        result.append(Document(f"d{seed}-{number}", text, (Span(start, start + len(name), "PATIENT", name),)))
    return result


def notes(embeddings, count: int, seed: int) -> ExportedNotes:
    return ExportedNotes(sentences(documents(count, seed)), Pseudonymizer(embeddings, 2, "groups"))


@pytest.fixture(scope="module")
def representer():
    keras.utils.set_random_seed(0)
    return build_representer(DIM, repr_size=6, lstm_units=8)


def test_scored_tokens_leave_out_gold_phi_and_punctuation(embeddings):
    test = notes(embeddings, 5, 0)
    kinds = token_kinds(test, STOP)
    scored = [word for word, keep in zip(test.words, kinds["nonphi"]) if keep]
    assert not {",", *(name.capitalize() for name in NAMES)} & set(scored)
    assert {"de", "el"} <= set(scored) and len(scored) == 5 * 7
    assert [word for word, keep in zip(test.words, kinds["content"]) if keep] == \
        [word for word in scored if word not in STOP]


def test_an_export_copy_replaces_the_gold_phi_only(embeddings):
    test = notes(embeddings, 20, 1)
    words = [word for sentence in test.draw(0).words for word in sentence]
    changed = {tag for word, original, tag in zip(words, test.words, test.tags) if word != original}
    assert changed == {"B-PATIENT"}  # a draw among 2 candidates: some names change, nothing else


def targets_of(test: ExportedNotes, kinds) -> list[tuple[int, int]]:
    return [(s, int(i)) for s, positions in enumerate(test.scoring(kinds["nonphi"]).positions) for i in positions]


def test_the_candidate_attack_reads_every_token_back_without_noise(embeddings, representer):
    set_deterministic(representer)
    test = notes(embeddings, 12, 2)
    targets = targets_of(test, token_kinds(test, STOP))
    copied = test.draw(0)
    function = compile_representer(representer, DIM)
    credits, sizes = nearest_candidate(function, embeddings, copied.words, targets,
                                       exported_vectors(function, test, copied, targets), K)
    assert len(credits) == 12 * 7 and set(sizes) == {K}
    assert credits.mean() == 1.0


def test_against_a_representer_that_reads_characters_the_attack_and_the_inverter_read_them_too(embeddings):
    """The exports and every candidate sentence carry character ids (a noise-free representer is read
    back exactly), and the inverter trains on them; without them the representer refuses to run."""
    keras.utils.set_random_seed(1)
    spelled = build_representer(DIM, repr_size=6, lstm_units=8, use_chars=True)
    set_deterministic(spelled)
    test = ExportedNotes(sentences(documents(12, 2)), Pseudonymizer(embeddings, 2, "groups"), chars=True)
    targets = targets_of(test, token_kinds(test, STOP))
    copied = test.draw(0)
    assert copied.shared_original_chars.shape == (len(test.words), test.char_width) and test.char_width > 0
    function = compile_representer(spelled, DIM)
    credits, _ = nearest_candidate(function, embeddings, copied.words, targets,
                                   exported_vectors(function, test, copied, targets), K, char_width=test.char_width)
    assert len(credits) == 12 * 7 and credits.mean() == 1.0
    attacker = ExportedNotes(sentences(documents(12, 4)), Pseudonymizer(embeddings, 2, "groups"), chars=True)
    read = inversion_readback(spelled, attacker, test, STOP, epochs=1, units=4, show_progress=False)
    assert read["rows"][0]["scored"] == 12 * 7
    with pytest.raises(ValueError, match="reads characters"):
        nearest_candidate(function, embeddings, copied.words, targets[:1], [np.zeros(6, np.float32)], K)


def test_the_candidate_attack_is_no_better_than_chance_when_the_export_is_constant(embeddings, representer):
    """The true word is the centre of its candidates: an export that says nothing makes it, if
    anything, less likely than the others to lie nearest (here about 0.10 against 1/K = 0.2)."""
    set_deterministic(representer)
    test = notes(embeddings, 60, 3)
    targets = targets_of(test, token_kinds(test, STOP))
    constant = [np.full(6, 6 ** -0.5, np.float32)] * len(targets)
    credits, _ = nearest_candidate(compile_representer(representer, DIM), embeddings, test.draw(0).words, targets,
                                   constant, K)
    assert len(credits) == 420 and 0 < credits.mean() < 1 / K + 0.05


def test_draws_that_share_the_same_vectors_average_to_the_same_reads(embeddings, representer):
    """Noise off and nothing pseudonymized (N = 1): every draw shares the same vectors, so their
    mean is read back exactly as one draw is."""
    set_deterministic(representer)
    test = ExportedNotes(sentences(documents(8, 6)), Pseudonymizer(embeddings, 1, "groups"))
    candidates = candidate_readback(representer, test, STOP, k=K, tokens=20, draws=3)
    assert candidates["draws"] == 3 and candidates["averaged"] == candidates["rows"]
    assert {(row["difference"], tuple(row["ci"])) for row in candidates["differences"] if row["ci"]} == {(0, (0, 0))}
    assert candidates["rows"][0]["count"] == 20 and candidates["rows"][0]["rate"] == 1.0


def test_a_whole_run_gives_the_results_page(embeddings, representer):
    set_deterministic(representer, False)
    train, test = notes(embeddings, 40, 4), notes(embeddings, 20, 5)
    inversion = inversion_readback(representer, train, test, STOP, epochs=1, units=4, learning_rate=0.01,
                                   show_progress=False)
    candidates = candidate_readback(representer, test, STOP, k=K, tokens=30, draws=2)
    rows = {row["tokens"]: row for row in inversion["rows"]}
    assert rows["non-PHI"]["scored"] == 20 * 7 and rows["content words"]["scored"] == 20 * 5
    assert rows["non-PHI"]["inverter"]["tokens"] == 20 * 7  # every word has a vocabulary row here
    by_kind = {row["tokens"]: row for row in candidates["rows"]}
    assert by_kind["non-PHI"]["count"] == 30 and by_kind["non-PHI"]["chance"] == pytest.approx(1 / K)
    assert by_kind["content words"]["count"] + by_kind["stop words"]["count"] == 30
    result = {"date": "today", "commit": "abc", "command": "python experiments/nonphi_readback.py", "seconds": 1.0,
              "representer": "r.keras", "embeddings": "tiny", "language": "es", "notes": {"train": "a", "test": "b"},
              "pseudonymization": "groups", "neighbours": 2, "epochs": 1,
              "token_counts": {"nonphi": 140, "content": 100, "nonphi_known": 140, "content_known": 100,
                               "stop_words": 2},
              "inversion": inversion, "candidates": candidates}
    page = table(result)
    assert f"| non-PHI | 140 | 140 | **{rows['non-PHI']['inverter']['top1']:.3f}** |" in page
    assert f"| non-PHI | 30 | **{by_kind['non-PHI']['rate']:.3f}** |" in page
    assert "## (b) Nearest candidate, oracle context (5 candidates)" in page
    averaged = candidates["averaged"][0]
    assert averaged["count"] == 30 and "the mean of the vectors of 2 draws" in page
    assert page.count("| non-PHI | 30 |") == 2 and f"| non-PHI | 30 | **{averaged['rate']:.3f}** |" in page
    difference = averaged["rate"] - by_kind["non-PHI"]["rate"]
    assert f"| non-PHI | {difference:+.3f} [" in page
    assert "## (a) Inversion" in page and "## (a)" not in table({**result, "inversion": None})


def test_a_moved_runs_embeddings_are_found_beside_it(tmp_path):
    run = tmp_path / "seed-0" / "representer"
    run.mkdir(parents=True)
    assert embeddings_spec(run, "fasttext:/elsewhere/seed-0/vectors.bin") == "fasttext:/elsewhere/seed-0/vectors.bin"
    (run.parent / "vectors.bin").write_bytes(b"")
    assert embeddings_spec(run, "fasttext:/elsewhere/seed-0/vectors.bin") == f"fasttext:{run.parent / 'vectors.bin'}"
    assert embeddings_spec(run, "glove") == "glove"
