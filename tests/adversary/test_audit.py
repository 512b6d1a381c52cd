"""Tests for privacy audits: the confidence interval and verdict rules, the lookup and inversion
attacks, `deidpool audit` end to end on a toy corpus where attacks on raw embeddings win, and
an audit whose fake partners give themselves away, which the partner-only floor must catch."""

import json
import random
from collections import Counter

import keras
import numpy as np
import pytest
import tensorflow as tf
from gensim.models import KeyedVectors
from typer.testing import CliRunner

from deidpool.adversary.audit import (
    FLOOR,
    SHARED_TEXT,
    _kept,
    attack_result,
    attacker_reference,
    hidden_phi,
    overall_verdict,
    raw_embeddings,
    run_audit,
    two_way_lookup,
)
from deidpool.adversary.inversion import vocabulary_ranks
from deidpool.adversary.lookup import lookup_attack, one_fake_per_sentence
from deidpool.adversary.models import POOLED
from deidpool.adversary.pairs import PairSource
from deidpool.adversary.procedures import MIN_EPOCH_STEPS, automatic_passes, build_adversary
from deidpool.adversary.verdicts import BROKEN, CHANCE, INCONCLUSIVE, chance_verdict, wilson_interval
from deidpool.cli import app
from deidpool.corpus.document import Document, Span
from deidpool.corpus.formats import write_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.embeddings import Embeddings
from deidpool.representer.noise import set_deterministic
from deidpool.representer.representation import build_representer

# PHI words on axes of their own (cosine 0 with every other word), fillers in the last two
# dimensions: replacing a PHI token by its nearest neighbour changes it completely.
PHI = {"PATIENT": ["smith", "jones", "brown"], "CITY": ["boston", "denver", "austin"]}
FILLERS = ["seen", "patient", "in", "was", "today", "visit", "home"]
DIM = 8


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
    assert chance_verdict(0.5, 2000)["verdict"] == CHANCE
    assert chance_verdict(0.5, 100)["verdict"] == INCONCLUSIVE  # 100 answers cannot rule out an attacker at 0.55
    assert chance_verdict(0.58, 50)["verdict"] == INCONCLUSIVE  # the interval holds 0.5 and reaches far past 0.55
    assert chance_verdict(0.62, 200)["verdict"] == BROKEN
    assert chance_verdict(0.35, 200)["verdict"] == BROKEN  # reliably wrong is as good as right
    final = {"val_loss": 0.6, "val_accuracy": 0.5, "val_accuracy_t1": 0.48, "val_accuracy_t2": 0.7}
    result = attack_result(final, 2000)
    assert result["verdict"] == BROKEN and result["accuracy"] == 0.7
    assert set(result["heads"]) == {"combined", "t1", "t2"}
    assert result["heads"]["combined"]["verdict"] == CHANCE
    probe = attack_result({"val_loss": 0.7, "val_accuracy": 0.52}, 2000)  # a PartnerOnlyProbe: one output
    assert set(probe["heads"]) == {"combined"} and probe["verdict"] == CHANCE and probe["accuracy"] == 0.52


def test_an_attack_is_judged_on_each_outputs_effective_trials():
    final = {"val_accuracy": 0.53, "val_accuracy_t1": 0.53, "val_design_effect": 2.0, "val_design_effect_t1": 1.0}
    heads = attack_result(final, 3000, tests=8)["heads"]
    assert heads["combined"]["effective_trials"] == 1500 and heads["combined"]["verdict"] == INCONCLUSIVE
    assert heads["t1"]["effective_trials"] == 3000 and heads["t1"]["verdict"] == BROKEN
    old = attack_result({"val_accuracy": 0.53}, 3000, tests=8)["heads"]["combined"]  # a record from before
    assert old["design_effect"] == 1.0 and old["verdict"] == BROKEN


def test_a_pass_needs_successful_positive_controls():
    both = {"raw/fresh": True, "p1/fresh": True}
    assert overall_verdict([CHANCE, CHANCE], CHANCE, CHANCE, both)[0] == CHANCE
    verdict, reason = overall_verdict([CHANCE, CHANCE], CHANCE, CHANCE, {"raw/fresh": True, "p1/fresh": False})
    assert verdict == INCONCLUSIVE and "p1/fresh" in reason and "raw/fresh" not in reason
    assert overall_verdict([CHANCE], CHANCE, CHANCE, {})[0] == INCONCLUSIVE
    assert overall_verdict([CHANCE, BROKEN], CHANCE, CHANCE, {"raw/fresh": False})[0] == BROKEN
    assert overall_verdict([CHANCE, CHANCE], BROKEN, CHANCE, both)[0] == BROKEN


def test_a_floor_above_chance_makes_the_adversaries_say_nothing():
    both = {"raw/fresh": True, "p1/fresh": True}
    for adversaries in ([CHANCE, CHANCE], [BROKEN, CHANCE]):
        verdict, reason = overall_verdict(adversaries, CHANCE, BROKEN, both)
        assert verdict == INCONCLUSIVE and "partner-only floor" in reason
    # The lookup attack learns nothing from the pairs: it still breaks the target.
    assert overall_verdict([CHANCE, CHANCE], BROKEN, BROKEN, both)[0] == BROKEN


def test_lookup_attack_wins_on_raw_embeddings_and_not_on_pure_noise(embeddings):
    pairs = pair_source(toy_documents(30, seed=1), embeddings)
    fakes = one_fake_per_sentence(pairs, seed=3)
    for index, (start, length) in enumerate(zip(pairs.offsets, pairs.lengths)):
        rows = slice(start, start + length)
        assert np.flatnonzero(np.any(fakes.original[rows] != fakes.partner[rows], axis=1)).tolist() == \
            [fakes.replaced[index]]
    result = lookup_attack(raw_embeddings, pairs)
    assert result["rate"] == result["fake_rate"] == result["both_rate"] == 1.0
    assert result["sentence_successes"] == [2.0] * len(pairs)  # both directions of every sentence

    tf.random.set_seed(0)

    def noise(inputs, training=False):
        return tf.random.normal(tf.shape(inputs["embeddings"]))

    many = pair_source(toy_documents(300, seed=2), embeddings)
    result = lookup_attack(noise, many, draws=3)
    assert result["trials"] == 3 * result["sentences"] == 3 * len(many)
    # pure noise carries no information: about 0.5 (4 standard deviations allowed)
    for rate in ("rate", "fake_rate"):
        assert abs(result[rate] - 0.5) < 4 * 0.5 / np.sqrt(result["trials"])
    assert len(result["sentence_successes"]) == len(many) and result["draws"] == 3
    assert all(0 <= count <= 6 for count in result["sentence_successes"])
    assert sum(result["sentence_successes"]) == pytest.approx(2 * result["trials"] * result["both_rate"])
    repeated = lookup_attack(raw_embeddings, pairs, seed=2, draws=2)
    assert repeated["trials"] == 2 * len(pairs) and repeated["rate"] == 1.0
    assert repeated["sentence_successes"] == [4.0] * len(pairs)


def test_the_lookup_in_both_directions_cancels_a_preference_the_export_does_not_cause(embeddings):
    """An export that reveals nothing (the same vector for every sentence) still favours one
    candidate, whichever lies nearer it; handed the fake's export the lookup favours it alike,
    so the two directions sum to one and only `both_rate` says what the export reveals."""
    pairs = pair_source(toy_documents(60, seed=4), embeddings)
    point = tf.constant(np.eye(DIM)[0], tf.float32)  # "smith": the candidate of its pairs it prefers

    def blind(inputs, training=False):
        return tf.broadcast_to(point, tf.shape(inputs["embeddings"]))

    result = lookup_attack(blind, pairs, reference=raw_embeddings)
    assert result["rate"] != 0.5
    assert result["rate"] + result["fake_rate"] == pytest.approx(1.0)
    assert result["both_rate"] == pytest.approx(0.5)


def test_the_audit_judges_the_lookup_in_both_directions():
    """A preference alone (seed 0 of the MEDDOCAN federation: 0.400 on the original's export, 0.613
    on the fake's) breaks no export; a rate above 0.5 both ways does, and so does one below it."""
    preference = two_way_lookup({"sentences": 500, "trials": 1000, "rate": 0.400, "fake_rate": 0.613,
                                 "both_rate": 0.5065})
    assert chance_verdict(0.400, 1000)["verdict"] == BROKEN  # what the one-way rate said
    assert preference["verdict"] == CHANCE and preference["trials"] == 2000
    assert preference["rate"] == 0.5065 and preference["original_rate"] == 0.400
    for both in (0.56, 0.44):
        leak = two_way_lookup({"sentences": 500, "trials": 1000, "rate": both, "fake_rate": both, "both_rate": both})
        assert leak["verdict"] == BROKEN


def test_the_lookup_is_judged_on_its_answers_clustered_by_sentence():
    """Both directions of a sentence right or both wrong, in 525 of 1,000 sentences right: 0.525 on
    2,000 answers, but on about 1,000 independent ones."""
    result = {"sentences": 1000, "draws": 1, "trials": 1000, "rate": 0.525, "fake_rate": 0.525, "both_rate": 0.525}
    assert two_way_lookup(result)["verdict"] == BROKEN  # read as 2,000 independent answers
    clustered = two_way_lookup({**result, "sentence_successes": [2.0] * 525 + [0.0] * 475})
    assert clustered["design_effect"] == pytest.approx(2.0, rel=0.01) and clustered["trials"] == 2000
    assert clustered["verdict"] == INCONCLUSIVE and "sentence_successes" not in clustered  # [0.494, 0.556]


def test_the_lookup_hands_over_the_fake_sentences_export_on_the_export_path(embeddings):
    sentences = [s for d in toy_documents(20, seed=5) for s in prepare_document(d)]
    pairs = PairSource(sentences, Pseudonymizer(embeddings, 3), export_path=True)
    fakes = one_fake_per_sentence(pairs, seed=1)
    replaced = pairs.offsets + fakes.replaced
    # the fake's export is a pseudonymized copy of the fake sentence, not its text
    assert not np.array_equal(fakes.shared_partner[replaced], fakes.partner[replaced])
    fillers = np.ones(len(fakes.partner), bool)
    fillers[[o + p for o, phi in zip(pairs.offsets, pairs.phi) for p in phi]] = False
    np.testing.assert_array_equal(fakes.shared_partner[fillers], fakes.partner[fillers])


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
    representer, whose attacks run exactly like the target's), in two processes."""
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
                                      "--learning-rate", "0.02", "--adversary-units", "8", "--held-out-draws", "3",
                                      "--inversion-epochs", "4", "--workers", "2",
                                      "--out", str(root / "report")])
    assert result.exit_code == 0, result.output
    return root / "report", result.output


def test_audit_report_files_and_structure(audited):
    report_dir, output = audited
    for name in ("config.json", "metrics.json", "history.json", "report.md", "accuracy.png"):
        assert (report_dir / name).is_file(), name
    report = json.loads((report_dir / "metrics.json").read_text())
    assert report["verdict"] in output
    assert set(report["attacks"]) == {"target/fresh", "target/continued", "raw/fresh", FLOOR}
    floor = report["attacks"][FLOOR]
    assert set(floor["heads"]) == {"combined"} and "control_succeeded" not in floor
    assert set(report["inversion"]) == {"target", "raw"}
    assert set(report["lookup"]) == {"target", "raw", SHARED_TEXT}  # the CLI audits the export path
    assert set(report["inversion_baselines"]) == {"frequency", "context-only"} and report["one_over_n"] == 0.5
    hidden = report["inversion"]["target"]["tokens"]
    assert hidden == report["held_out_sentences"]  # one hidden name or city per toy sentence
    assert report["held_out_draws"] == 3 and report["held_out_pairs"] == 3 * hidden
    # judged in both directions: twice the held-out pairs
    assert all(result["trials"] == 2 * report["held_out_pairs"] for result in report["lookup"].values())
    for result in [*report["inversion"].values(), *report["inversion_baselines"].values()]:
        assert result["tokens"] == hidden and 0 <= result["top1"] <= result["top10"] <= 1
    history = json.loads((report_dir / "history.json").read_text())
    assert set(history) == set(report["attacks"])
    assert all(len(history[name]) == report["attacks"][name]["epochs"] for name in history)
    assert all(len(history[name]) == 3 for name in ("target/fresh", "target/continued", FLOOR))
    # the positive control's attack stops after its first epoch at the threshold
    raw = [max(value for key, value in record.items() if key != "epoch") for record in history["raw/fresh"]]
    assert raw[-1] >= report["control_threshold"] > max(raw[:-1], default=0.0)
    assert set(history[FLOOR][0]) == {"epoch", "accuracy"}
    assert set(history["raw/fresh"][0]) == {"epoch", "accuracy", "accuracy_t1", "accuracy_t2"}
    target = [r["verdict"] for name, r in report["attacks"].items() if name.startswith("target")]
    controls = {name: r["control_succeeded"] for name, r in report["attacks"].items() if "control_succeeded" in r}
    assert set(controls) == {"raw/fresh"}
    assert (report["verdict"], report["verdict_reason"]) == overall_verdict(
        target, report["lookup"]["target"]["verdict"], report["attacks"][FLOOR]["verdict"], controls)
    for result in report["attacks"].values():
        for head in result["heads"].values():
            assert head["ci"][0] <= head["rate"] <= head["ci"][1] and head["trials"] == report["held_out_pairs"]
            assert head["effective_trials"] == pytest.approx(head["trials"] / head["design_effect"])
    assert all(result["design_effect"] >= 1 and "sentence_successes" not in result
               for result in report["lookup"].values())
    # one family of eight judged outputs: the target's two attacks' three heads each, the floor, the lookup
    assert report["judged_outputs"] == 3 + 3 + 1 + 1
    judged = [*(head for name, result in report["attacks"].items() for head in result["heads"].values()),
              *report["lookup"].values()]
    assert all(result["confidence"] == pytest.approx(1 - 0.05 / 8) for result in judged)
    config = json.loads((report_dir / "config.json").read_text())
    assert report["inversion_epochs"] == config["inversion_epochs"] == 4
    assert config["epochs"] == 3 and config["passes"] == 2 and config["representer"].endswith("representer.keras")
    assert config["held_out_draws"] == 3 and config["held_out_pairs"] == 3 * hidden
    assert config["pseudonymization"] == "surrogates"
    assert config["attacker_design"] == report["attacker_design"] == POOLED
    markdown = (report_dir / "report.md").read_text()
    assert report["passes"] == 2 and ("3 epochs of attack training (2 draws of pairs each; fresh attackers and the "
                                      "floor of the pooled design") in markdown
    assert "| raw/fresh | t2 |" in markdown and f"| {FLOOR} | combined |" in markdown
    floor_head = report["attacks"][FLOOR]["heads"]["combined"]
    assert f"| {3 * hidden} ({floor_head['effective_trials']:.0f}) | {floor_head['verdict']} |" in markdown
    assert f"raw/fresh: succeeded (best {report['attacks']['raw/fresh']['accuracy']:.3f} after epoch {len(raw)})" \
        in markdown
    assert f"{3 * hidden} held-out pairs (3 draws over the held-out sentences)" in markdown
    assert "its 99.38% Wilson interval on its effective answers (its answers over their design effect" in markdown
    assert "one of the 8 outputs the verdict reads" in markdown
    assert "Every inverter trained 4 epochs." in markdown
    # the CLI's default scheme is surrogates: every fake has its original's shape, which the surrogates draw from
    symmetry = report["fake_symmetry"]
    assert symmetry["fakes"] > 0 and symmetry["same_candidates"] == symmetry["fakes"]
    assert "are identically distributed: every pair attack's expected rate on the target is exactly 0.5" in markdown
    assert report["verdict_reason"] in markdown and "baseline: context-only" in markdown
    assert "For reference only, not a chance level: 1/N = 0.5000" in markdown
    bound = report["bound"]  # the export path: the bound of the tokens the inversion is scored on
    assert bound["neighbours"] == 2 and bound["overall"]["hidden"] == bound["overall"]["occurrences"] == hidden
    assert set(bound["overall"]["mean_success"]) == {"uniform", "frequency", "empirical"}
    assert f"Re-identification bound over the same {hidden} hidden PHI tokens" in markdown
    assert f"| empirical | {bound['overall']['mean_success']['empirical']:.3f} |" in markdown
    within = report["inversion"]["target"]["top1"] <= bound["overall"]["mean_success"]["empirical"]
    assert f"the target's is {'within' if within else 'NOT within'} it." in markdown


def test_attacks_succeed_on_raw_embeddings_in_an_easy_setting(audited):
    report = json.loads((audited[0] / "metrics.json").read_text())
    raw = report["attacks"]["raw/fresh"]
    assert raw["control_succeeded"] and raw["accuracy"] >= 0.8
    assert report["lookup"]["raw"]["rate"] == 1.0
    assert report["inversion"]["raw"]["top1"] > 0.9
    assert report["inversion_baselines"]["context-only"]["top1"] < 0.9  # the context says little about a name


def test_an_audit_in_two_processes_trains_every_part_once(audited):
    report_dir, _ = audited
    report = json.loads((report_dir / "metrics.json").read_text())
    for name, result in report["attacks"].items():
        history = json.loads((report_dir / "attacks" / name.replace("/", "-") / "history.json").read_text())
        assert len(history) == result["epochs"] <= 3, name  # resumed by the reporting run, not trained again
    for name in ("target", "raw", "context-only"):
        assert (report_dir / "inversion" / f"{name}.npz").is_file(), name
    # inversions and lookups: computed by the parts' processes, read back by the run that reports
    for name, result in {**report["inversion"], "context-only": report["inversion_baselines"]["context-only"]}.items():
        assert json.loads((report_dir / "inversion" / f"{name}.json").read_text())["result"] == result, name
    for name, result in report["lookup"].items():
        kept = json.loads((report_dir / "lookup" / f"{name.replace(' ', '-')}.json").read_text())["result"]
        assert kept["both_rate"] == result["rate"], name


def test_a_kept_result_is_read_back_while_what_it_depends_on_is_the_same(tmp_path):
    computed = []

    def compute():
        computed.append(len(computed))
        return {"top1": 0.1 * len(computed)}

    assert _kept(tmp_path / "x.json", {"epochs": 3}, compute) == {"top1": 0.1}
    assert _kept(tmp_path / "x.json", {"epochs": 3}, compute) == {"top1": 0.1} and len(computed) == 1
    assert _kept(tmp_path / "x.json", {"epochs": 6}, compute) == {"top1": 0.2}  # trained further: computed again


def test_an_audit_part_must_exist(embeddings, tmp_path):
    sources = [pair_source(toy_documents(4, seed), embeddings) for seed in (0, 1)]
    with pytest.raises(ValueError, match="no such part of this audit: target/stale"):
        run_audit(raw_embeddings, *sources, tmp_path, epochs=1, passes=1, units=4, parts=["target/stale"])


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


def test_stored_representations_without_noise_make_the_lookup_stronger(embeddings):
    """The attacker knows the candidate sentences and holds the public representer: its stored
    representations need not carry noise, which leaves the shared one's noise alone to hide
    the replaced token."""
    representer = build_representer(DIM, repr_size=6, lstm_units=4)
    representer.get_layer("output_noise").assign_stddev(0.4)
    pairs = pair_source(toy_documents(200, seed=4), embeddings)
    noisy = lookup_attack(representer, pairs)["rate"]
    reference = attacker_reference(representer)
    clean = lookup_attack(representer, pairs, reference=reference)["rate"]
    assert clean > noisy + 0.05, (clean, noisy)
    assert attacker_reference(raw_embeddings) is raw_embeddings


class OddWordPseudonymizer(Pseudonymizer):
    """Every pseudonym is the filler "today": a fake partner has no name or city left, a real one
    always has one, so fake partners give themselves away."""

    def pseudonym(self, word, rng, category=None):
        return "today" if self.replaceable(word) else word


def constant_representer():
    """A representer that outputs one fixed unit vector whatever it reads: a perfect one."""
    representer = build_representer(DIM, repr_size=6, lstm_units=4)
    projection = representer.get_layer("projection")
    kernel, bias = projection.get_weights()
    projection.set_weights([np.zeros_like(kernel), np.ones_like(bias)])
    set_deterministic(representer, True)
    return representer


def test_implausible_fake_partners_make_the_audit_inconclusive(embeddings, tmp_path):
    """The constant representer leaks nothing (the lookup attack ties on every sentence) and the
    raw control is broken, but the floor recognises the fake partners alone: the audit is
    inconclusive, whatever the adversaries on the target score by chance."""
    pseudonymizer = OddWordPseudonymizer(embeddings, 2)
    sources = [PairSource([s for d in toy_documents(count, seed) for s in prepare_document(d)], pseudonymizer)
               for count, seed in ((160, 5), (100, 6))]
    keras.utils.set_random_seed(0)
    report = run_audit(constant_representer(), *sources, tmp_path, epochs=3, passes=2, units=8, learning_rate=0.02,
                       progress=False)
    floor = report["attacks"][FLOOR]
    assert floor["verdict"] == BROKEN and floor["accuracy"] >= 0.8
    assert report["attacks"]["raw/fresh"]["control_succeeded"]
    assert report["lookup"]["target"]["rate"] == 0.5  # one output for every sentence: every distance ties
    assert report["inversion_epochs"] == 3 * 2  # by default epochs x passes
    assert report["verdict"] == INCONCLUSIVE and "partner-only floor" in report["verdict_reason"]
    assert "partner-only floor" in (tmp_path / "report.md").read_text()
    assert "bound" not in report and "Re-identification bound" not in (tmp_path / "report.md").read_text()


def test_on_the_export_path_the_floor_reads_the_shared_partner_text(embeddings, tmp_path, capsys):
    """Exported, every PHI word of a real and of a fake partner alike becomes "today": the shared
    partners are the same text, so the floor sits at chance and no longer decides the verdict. The
    reporting after the attacks says how far it got (a line every 30 s and one at its end)."""
    pseudonymizer = OddWordPseudonymizer(embeddings, 2)
    sources = [PairSource([s for d in toy_documents(count, seed) for s in prepare_document(d)], pseudonymizer)
               for count, seed in ((160, 5), (100, 6))]
    keras.utils.set_random_seed(0)
    # 20 draws: enough held-out answers for an output at chance to read chance ([0.45, 0.55] ruled in)
    report = run_audit(constant_representer(), *sources, tmp_path, epochs=3, passes=2, units=8, learning_rate=0.02,
                       export_path=True, held_out_draws=20, progress=True)
    assert "audit: reporting: 9/9 steps" in capsys.readouterr().err
    assert report["attacks"][FLOOR]["verdict"] == CHANCE
    assert report["attacks"]["raw/fresh"]["control_succeeded"]  # the controls stay on the bare path
    assert "partner-only floor" not in report["verdict_reason"]


def clique_embeddings() -> Embeddings:
    """Every PHI word equally close to the other words of its category and far from the rest:
    with N = 3 a name's candidates are all three names, whichever name it is."""
    vectors = toy_vectors()
    for axis, words in enumerate(PHI.values()):
        for word in words:
            vectors[word] = vectors[word] + 2.0 * np.eye(DIM)[DIM - 3 - axis]
    kv = KeyedVectors(DIM)
    kv.add_vectors(list(vectors), np.array(list(vectors.values()), dtype=np.float32))
    return Embeddings(kv, "clique")


@pytest.mark.parametrize("export_path, verdict", [(False, BROKEN), (True, CHANCE)])
def test_the_export_path_audit_tells_a_leaky_export_from_a_pseudonymized_one(tmp_path, export_path, verdict):
    """The target is a leaky 'representer', the raw embeddings themselves. Exported raw, the
    attacks break it; pseudonymized among the whole category first, both sentences of a pair
    reach it as uniform draws from the same candidates, and nothing can tell them apart."""
    pseudonymizer = Pseudonymizer(clique_embeddings(), 3)
    sources = [PairSource([s for d in toy_documents(count, seed) for s in prepare_document(d)], pseudonymizer)
               for count, seed in ((200, 7), (240, 8))]
    keras.utils.set_random_seed(0)
    report = run_audit(raw_embeddings, *sources, tmp_path, epochs=4, passes=3, units=8, learning_rate=0.02,
                       export_path=export_path, held_out_draws=20, progress=False)
    assert report["path"] == ("export" if export_path else "representer")
    assert report["attacks"]["raw/fresh"]["control_succeeded"]
    # the floor learns nothing; on the bare path its answers repeat with each sentence (a design effect
    # of about 7 over 20 draws), too few effective ones to rule out 0.55 there
    assert report["attacks"][FLOOR]["verdict"] == (CHANCE if export_path else INCONCLUSIVE)
    assert report["verdict"] == verdict, report["verdict_reason"]
    assert (SHARED_TEXT in report["lookup"]) == export_path
    if export_path:  # success is judged against the original: guessing it is a 1-in-3 draw
        assert report["inversion"]["target"]["top1"] < 0.6 < report["inversion"]["raw"]["top1"]
        # the target shares the pseudonymized text itself, and a surrogate is a uniform draw from a whole clique
        assert report["lookup"][SHARED_TEXT] == report["lookup"]["target"]
        assert report["lookup"][SHARED_TEXT]["verdict"] == CHANCE
        # Every (capitalized) name or city may have been any of its category's three: the best
        # surrogate-only attacker names the category's most frequent one among the held-out tokens.
        counts = Counter(hidden_phi(sources[1]))
        categories = {category for _, category in counts}
        most = sum(max(n for (_, c), n in counts.items() if c == category) for category in categories)
        assert report["bound"]["overall"]["occurrences"] == report["inversion"]["target"]["tokens"]
        assert report["bound"]["overall"]["mean_success"]["empirical"] == pytest.approx(most / counts.total())
