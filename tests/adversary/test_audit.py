"""Tests for privacy audits: the confidence interval and verdict rules, the lookup and inversion
attacks, and `deidpool audit` end to end on a toy corpus where attacks on raw embeddings win."""

import json
import random

import keras
import numpy as np
import pytest
import tensorflow as tf
from gensim.models import KeyedVectors
from typer.testing import CliRunner

from adversary.audit import (BROKEN, CHANCE, INCONCLUSIVE, MIN_EPOCH_STEPS, attack_result, automatic_passes,
                             chance_verdict, overall_verdict, raw_embeddings, wilson_interval)
from adversary.inversion import vocabulary_ranks
from adversary.lookup import lookup_attack, one_fake_per_sentence
from adversary.pairs import PairSource
from adversary.pseudonymize import Pseudonymizer
from corpus.document import Document, Span
from corpus.formats import write_corpus
from corpus.prepare import prepare_document
from deidpool.cli import app
from representer.embeddings import Embeddings
from representer.noise import set_deterministic
from adversary.procedures import build_adversary
from representer.representation import build_representer

# PHI words on axes of their own (cosine 0 with every other word), fillers in the last two
# dimensions: replacing a PHI token by its nearest neighbour changes it completely.
PHI = {"PATIENT": ["smith", "jones", "brown"], "CITY": ["boston", "denver", "austin"]}
FILLERS = ["seen", "patient", "in", "was", "today", "visit", "home"]
DIM = 8


@pytest.fixture(autouse=True, scope="module")
def fast_graph_compilation():
    """Grappler's graph rewrites take longer than these tiny models ever run."""
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    yield
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": False})


def toy_vectors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    phi = [word for words in PHI.values() for word in words]
    vectors = {word: np.eye(DIM)[i] for i, word in enumerate(phi)}
    vectors.update({word: np.concatenate([np.zeros(DIM - 2), rng.normal(size=2)]) for word in FILLERS})
    return vectors


def toy_documents(count: int, seed: int) -> list[Document]:
    """One short sentence per document: fillers around one name or city."""
    rng, documents = random.Random(seed), []
    for number in range(count):
        label = rng.choice(sorted(PHI))
        phi = rng.choice(PHI[label]).capitalize()
        before, after = rng.sample(FILLERS, rng.randint(1, 3)), rng.sample(FILLERS, rng.randint(0, 2))
        text = " ".join([*before, phi, *after])
        start = len(" ".join(before)) + 1
        documents.append(Document(f"toy-{seed}-{number}", text, (Span(start, start + len(phi), label, phi),)))
    return documents


@pytest.fixture(scope="module")
def embeddings():
    vectors = toy_vectors()
    kv = KeyedVectors(DIM)
    kv.add_vectors(list(vectors), np.array(list(vectors.values()), dtype=np.float32))
    return Embeddings(kv, "toy")


def pair_source(documents, embeddings, neighbours=2):
    return PairSource([s for d in documents for s in prepare_document(d)], Pseudonymizer(embeddings, neighbours))


def test_wilson_interval_matches_published_values():
    assert wilson_interval(50, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    with pytest.raises(ValueError):
        wilson_interval(0, 0)


def test_chance_verdicts():
    assert chance_verdict(0.5, 100)["verdict"] == CHANCE
    assert chance_verdict(0.58, 50)["verdict"] == BROKEN  # the interval holds 0.5, but above the 0.55 bound
    assert chance_verdict(0.62, 200)["verdict"] == BROKEN
    assert chance_verdict(0.35, 200)["verdict"] == BROKEN  # reliably wrong is as good as right
    final = {"val_accuracy": 0.5, "val_accuracy_t1": 0.48, "val_accuracy_t2": 0.7}
    result = attack_result(final, 200)
    assert result["verdict"] == BROKEN and result["accuracy"] == 0.7
    assert result["heads"]["combined"]["verdict"] == CHANCE


def test_a_pass_needs_successful_positive_controls():
    assert overall_verdict([CHANCE, CHANCE], {"raw/fresh": True, "p1/fresh": True}) == CHANCE
    assert overall_verdict([CHANCE, CHANCE], {"raw/fresh": True, "p1/fresh": False}) == INCONCLUSIVE
    assert overall_verdict([CHANCE], {}) == INCONCLUSIVE
    assert overall_verdict([CHANCE, BROKEN], {"raw/fresh": False}) == BROKEN


def test_lookup_attack_wins_on_raw_embeddings_and_not_on_pure_noise(embeddings):
    pairs = pair_source(toy_documents(30, seed=1), embeddings)
    fakes = one_fake_per_sentence(pairs, seed=3)
    for index, (start, length) in enumerate(zip(pairs.offsets, pairs.lengths)):
        rows = slice(start, start + length)
        assert np.flatnonzero(np.any(fakes.original[rows] != fakes.partner[rows], axis=1)).tolist() == \
            [fakes.replaced[index]]
    assert lookup_attack(raw_embeddings, pairs)["rate"] == 1.0

    rng = np.random.default_rng(0)

    def noise(inputs, training=False):
        return tf.constant(rng.normal(size=inputs["embeddings"].shape), tf.float32)

    many = pair_source(toy_documents(300, seed=2), embeddings)
    result = lookup_attack(noise, many)
    # pure noise carries no information: about 0.5 (4 standard deviations allowed)
    assert abs(result["rate"] - 0.5) < 4 * 0.5 / np.sqrt(result["sentences"])


def test_automatic_passes_give_an_attack_epoch_its_minimum_steps():
    assert automatic_passes(375) == 15  # PhysioNet provider split: 12 batches a draw
    assert automatic_passes(100_000) == 1
    for pairs in (1, 31, 32, 33, 375, 5_000, 5_761):
        batches, passes = -(-pairs // 32), automatic_passes(pairs)
        assert passes * batches >= MIN_EPOCH_STEPS > (passes - 1) * batches or passes == 1


def test_vocabulary_ranks():
    vocabulary = np.eye(3)
    estimates = np.array([[1.0, 0.1, 0.0], [1.0, 0.5, 0.2], [0.0, 0.0, 2.0]])
    np.testing.assert_array_equal(vocabulary_ranks(estimates, np.array([0, 1, 0]), vocabulary), [0, 1, 1])


@pytest.fixture(scope="module")
def audited(tmp_path_factory, embeddings):
    """`deidpool audit` of a run folder with an untrained representer and adversary (and no P1
    representer, whose attacks run exactly like the target's)."""
    root = tmp_path_factory.mktemp("audit")
    with (root / "vectors.txt").open("w") as file:
        for word, vector in toy_vectors().items():
            file.write(" ".join([word, *map(str, vector)]) + "\n")
    write_corpus(toy_documents(240, seed=0), root / "notes.jsonl", "json")
    run = root / "run"
    (run / "models").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"embeddings": f"glove-text:{root / 'vectors.txt'}"}))
    keras.utils.set_random_seed(0)
    build_representer(DIM, repr_size=6, lstm_units=4).save(run / "models" / "representer.keras")
    build_adversary(6, DIM, 8).save(run / "models" / "adversary.keras")
    result = CliRunner().invoke(app, ["audit", "--representer", str(run), "--data", str(root / "notes.jsonl"),
                                      "--format", "json", "--neighbours", "2", "--epochs", "3", "--passes", "2",
                                      "--learning-rate", "0.02", "--adversary-units", "8", "--out", str(root / "report")])
    assert result.exit_code == 0, result.output
    return root / "report", result.output


def test_audit_report_files_and_structure(audited):
    report_dir, output = audited
    for name in ("config.json", "metrics.json", "history.json", "report.md", "accuracy.png"):
        assert (report_dir / name).is_file(), name
    report = json.loads((report_dir / "metrics.json").read_text())
    assert report["verdict"] in output
    assert set(report["attacks"]) == {"target/fresh", "target/continued", "raw/fresh"}
    assert set(report["lookup"]) == set(report["inversion"]) - {"chance_top1"} == {"target", "raw"}
    history = json.loads((report_dir / "history.json").read_text())
    assert all(len(records) == 3 for records in history.values())
    target = [r["verdict"] for name, r in report["attacks"].items() if name.startswith("target")]
    controls = {name: r["control_succeeded"] for name, r in report["attacks"].items() if not name.startswith("target")}
    assert report["verdict"] == overall_verdict(target + [report["lookup"]["target"]["verdict"]], controls)
    for result in report["attacks"].values():
        for head in result["heads"].values():
            assert head["ci"][0] <= head["rate"] <= head["ci"][1] and head["trials"] == report["held_out_pairs"]
    config = json.loads((report_dir / "config.json").read_text())
    assert config["epochs"] == 3 and config["passes"] == 2 and config["representer"].endswith("representer.keras")
    markdown = (report_dir / "report.md").read_text()
    assert report["passes"] == 2 and "3 epochs of attack training (2 draws of pairs each)" in markdown
    assert "| raw/fresh | t2 |" in markdown


def test_attacks_succeed_on_raw_embeddings_in_an_easy_setting(audited):
    report = json.loads((audited[0] / "metrics.json").read_text())
    raw = report["attacks"]["raw/fresh"]
    assert raw["control_succeeded"] and raw["accuracy"] >= 0.8
    assert report["lookup"]["raw"]["rate"] == 1.0
    assert report["inversion"]["raw"]["top1"] > 0.9


def test_audit_refuses_embeddings_of_another_size(audited, tmp_path):
    report_dir, _ = audited
    root = report_dir.parent
    (tmp_path / "vectors.txt").write_text("seen 1 0\nsmith 0 1\n")
    result = CliRunner().invoke(app, ["audit", "--representer", str(root / "run"), "--data", str(root / "notes.jsonl"),
                                      "--format", "json", "--embeddings", f"glove-text:{tmp_path / 'vectors.txt'}",
                                      "--out", str(tmp_path / "report")])
    assert result.exit_code == 2 and "8-dimensional" in result.output


def test_deterministic_representer_makes_lookup_trivial(embeddings):
    representer = build_representer(DIM, repr_size=6, lstm_units=4)
    set_deterministic(representer, True)
    assert lookup_attack(representer, pair_source(toy_documents(20, seed=2), embeddings))["rate"] == 1.0
