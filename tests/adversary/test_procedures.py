"""Tests for the three-phase and DANN procedures: what each step trains and freezes, the P3b
loss, the gradient reversal, and a `deidpool train adversarial` run that resumes after a kill."""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from gensim.models import KeyedVectors
from typer.testing import CliRunner

from deidpool.adversary import procedures
from deidpool.adversary.models import adversary_outputs, adversary_step
from deidpool.adversary.procedures import (
    AdversarialData,
    AdversaryTraining,
    AlternatingTraining,
    DANNTraining,
    DeidTraining,
    build_models,
    train_three_phase,
)
from deidpool.cli import app
from deidpool.corpus.formats import write_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.corpus.synth import generate_documents
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.representer.characters import char_ids
from deidpool.representer.dataset import training_batches
from deidpool.representer.embeddings import Embeddings
from deidpool.representer.noise import set_deterministic
from deidpool.representer.representation import load_representer
from deidpool.representer.tagger import tagger_loss

DIM, REPR = 8, 6
TINY = {"representer_units": 4, "tagger_units": 4, "adversary_units": 8}
TINY_OPTIONS = ["--repr-size", str(REPR), "--representer-units", "4", "--tagger-units", "4", "--adversary-units", "8",
                "--neighbours", "5", "--valid-fraction", "0.3"]


@pytest.fixture(scope="module")
def documents():
    return list(generate_documents(6, seed=0))


def random_vectors(documents) -> dict[str, np.ndarray]:
    """A random vector for every lower-cased token of the documents."""
    words = sorted({t.text.lower() for d in documents for s in prepare_document(d) for t in s.tokens})
    return dict(zip(words, np.random.default_rng(0).normal(size=(len(words), DIM)).astype(np.float32)))


@pytest.fixture(scope="module")
def toy(documents):
    """Short sentences of the documents, tiny models and a procedure's worth of settings."""
    vectors = random_vectors(documents)
    kv = KeyedVectors(DIM)
    kv.add_vectors(list(vectors), np.array(list(vectors.values())))
    sentences = [s for d in documents for s in prepare_document(d, max_tokens=8)]
    tags = tag_vocabulary({span.source_type for d in documents for span in d.spans})
    data = AdversarialData.from_sentences(sentences[:64], Embeddings(kv, "toy"), tags, 5)
    keras.utils.set_random_seed(0)
    return data, build_models(DIM, len(tags), REPR, **TINY)


def test_build_models_starts_the_representers_noise_where_asked():
    """`input_noise` / `output_noise` set where each trainable std starts; None keeps the
    representer's defaults."""
    from deidpool.representer.representation import INPUT_NOISE_STDDEV, OUTPUT_NOISE_STDDEV

    chosen = build_models(DIM, 3, REPR, **TINY, input_noise=0.03, output_noise=0.2)[0]
    default = build_models(DIM, 3, REPR, **TINY)[0]
    for model, expected in ((chosen, (0.03, 0.2)), (default, (INPUT_NOISE_STDDEV, OUTPUT_NOISE_STDDEV))):
        for name, value in zip(("input_noise", "output_noise"), expected):
            np.testing.assert_allclose(keras.ops.convert_to_numpy(model.get_layer(name).stddev), value, rtol=1e-5)


def test_p3b_loss_is_deid_loss_plus_lambda_times_the_per_pair_distance_from_log_2(toy):
    data, (representer, tagger, adversary) = toy
    procedure = AlternatingTraining(representer, tagger, adversary, lam=0.7)
    tagger_batch = next(iter(training_batches(data.sentences, 0)))
    pair_batch = next(iter(data.pairs.epoch(0, 0)))
    set_deterministic(representer, True)
    try:
        losses = procedure.combined_loss(tagger_batch, pair_batch)
        features = representer({"embeddings": tagger_batch["features"], "mask": tagger_batch["mask"]})
        deid = float(tagger_loss(tagger, {**tagger_batch, "features": features}))
        outputs = adversary_outputs(adversary, representer, pair_batch)
    finally:
        set_deterministic(representer, False)
    labels = pair_batch["label"].numpy()
    per_pair = {head: -np.log(np.where(labels == 1, outputs[head], 1 - outputs[head])) for head in ("t1", "t2")}
    penalty = np.mean([np.mean(np.abs(bce - math.log(2))) for bce in per_pair.values()])
    assert float(losses["loss_deid"]) == pytest.approx(deid, rel=1e-5)
    assert float(losses["penalty"]) == pytest.approx(penalty, rel=1e-4)
    assert float(losses["loss"]) == pytest.approx(deid + 0.7 * penalty, rel=1e-5)


def test_dann_reverses_the_adversarial_gradient_for_the_representer_only(toy):
    data, (representer, tagger, adversary) = toy
    procedure = DANNTraining(representer, tagger, adversary, lam=0.5)
    tagger_batch = next(iter(training_batches(data.sentences, 0)))
    pair_batch = next(iter(data.pairs.epoch(0, 0)))
    variables = representer.trainable_variables + adversary.trainable_variables
    set_deterministic(representer, True)
    try:
        with tf.GradientTape(persistent=True) as tape:
            reversed_loss = procedure.losses(tagger_batch, pair_batch)["loss_adv"]
            plain_loss = adversary_step(adversary, representer, pair_batch)["loss"]
    finally:
        set_deterministic(representer, False)
    assert float(reversed_loss) == pytest.approx(float(plain_loss), rel=1e-6)
    count = len(representer.trainable_variables)
    reversed_gradients, plain_gradients = (
        [np.zeros(v.shape) if g is None else g.numpy() for g, v in zip(tape.gradient(loss, variables), variables)]
        for loss in (reversed_loss, plain_loss))  # None: the noise is off, its std unused
    assert any(np.any(g != 0) for g in plain_gradients[:count])
    for reversed_gradient, plain_gradient in zip(reversed_gradients[:count], plain_gradients[:count]):
        np.testing.assert_allclose(reversed_gradient, -0.5 * plain_gradient, rtol=1e-5, atol=1e-8)
    for reversed_gradient, plain_gradient in zip(reversed_gradients[count:], plain_gradients[count:]):
        np.testing.assert_allclose(reversed_gradient, plain_gradient, rtol=1e-5, atol=1e-8)


def test_an_attack_epoch_of_several_passes_trains_on_that_many_fresh_draws(toy):
    data, (representer, _, adversary) = toy
    batches_per_draw = len(list(data.pairs.epoch(0, 0)))
    for passes in (1, 3):
        procedure = AdversaryTraining(representer, keras.models.clone_model(adversary), passes=passes)
        procedure.train_epoch(data.pairs, 0, np.random.default_rng(0))
        assert int(procedure.optimizer.iterations) == passes * batches_per_draw
    with pytest.raises(ValueError, match="passes"):
        AdversaryTraining(representer, adversary, passes=0)


def test_validation_reads_as_many_held_out_draws_as_asked_and_records_them_when_not_one(toy, monkeypatch):
    data, (representer, _, adversary) = toy
    one, three = (AdversaryTraining(representer, adversary, held_out_draws=draws) for draws in (1, 3))
    assert "held_out_draws" not in one.config()  # runs made before the setting resume as they were
    assert three.config()["held_out_draws"] == 3
    asked, held_out = [], type(data.pairs).held_out

    def counting(self, seed, batch_size=32, draws=1):
        asked.append(draws)
        return held_out(self, seed, batch_size, draws)

    monkeypatch.setattr(type(data.pairs), "held_out", counting)
    for procedure in (one, three):
        assert 0 <= procedure.validate(data.pairs)["accuracy"] <= 1
    assert asked == [1, 3]
    with pytest.raises(ValueError, match="held_out_draws"):
        AdversaryTraining(representer, adversary, held_out_draws=0)


def test_validation_counts_every_outputs_answers_per_held_out_sentence(toy, monkeypatch):
    """The design effect of each output reads its right answers and its answers per sentence (over
    the draws: pair k * n + i of the held-out pairs is sentence i's), counted here independently."""
    data, (representer, _, adversary) = toy
    clustered = []

    def numbered(right, asked):
        """Keeps the counts; the design effect it gives is their number, 1, 2, ..."""
        clustered.append((right, asked))
        return len(clustered)

    monkeypatch.setattr(procedures, "cluster_design_effect", numbered)
    set_deterministic(representer, True)
    try:
        metrics = AdversaryTraining(representer, adversary, held_out_draws=3).validate(data.pairs)
        right, asked = {}, np.zeros(len(data.pairs))
        for batch in data.pairs.held_out(seed=0, batch_size=5, draws=3):
            sentence, label = batch["index"].numpy() % len(data.pairs), batch["label"].numpy() > 0.5
            for name, output in adversary_outputs(adversary, representer, batch).items():
                answers = (output.numpy() > 0.5) == label
                right[name] = right.get(name, 0.0) + np.bincount(sentence, answers, len(data.pairs))
            asked += np.bincount(sentence, minlength=len(data.pairs))
    finally:
        set_deterministic(representer, False)
    assert np.all(asked == 3) and len(clustered) == 3
    for name, key in (("combined", "design_effect"), ("t1", "design_effect_t1"), ("t2", "design_effect_t2")):
        counts, trials = clustered[metrics[key] - 1]
        np.testing.assert_array_equal(counts, right[name])
        np.testing.assert_array_equal(trials, asked)
        assert metrics[key.replace("design_effect", "accuracy")] == pytest.approx(right[name].sum() / asked.sum())


def test_selection_f1_puts_phi_f1_in_place_of_the_deid_loss_when_picking_the_best_epoch(toy):
    data, (representer, tagger, adversary) = toy
    watched = lambda procedure: (procedure.monitor, procedure.monitor_mode)  # noqa: E731
    assert watched(DeidTraining(representer, tagger)) == ("val_loss", "min")  # docs/method.md's
    assert watched(DeidTraining(representer, tagger, selection="f1")) == ("val_f1", "max")
    for kind in (AlternatingTraining, DANNTraining):
        assert watched(kind(representer, tagger, adversary)) == ("val_loss", "min")
        assert watched(kind(representer, tagger, adversary, selection="f1")) == ("val_f1_loss", "min")
    metrics = AlternatingTraining(representer, tagger, adversary, lam=0.7, selection="f1").validate(data)
    assert metrics["loss"] == pytest.approx(metrics["loss_deid"] + 0.7 * metrics["adv_penalty"])
    assert metrics["f1_loss"] == pytest.approx(1 - metrics["f1"] + 0.7 * metrics["adv_penalty"])
    with pytest.raises(ValueError, match="unknown selection 'accuracy'"):
        AlternatingTraining(representer, tagger, adversary, selection="accuracy")


def test_a_three_phase_run_records_its_selection_and_each_phase_what_it_watched(toy, tmp_path):
    data, (_, tagger, _) = toy
    keras.utils.set_random_seed(1)
    models = build_models(DIM, tagger.num_tags, REPR, **TINY)
    metrics = train_three_phase(*models, data, data, tmp_path, max_epochs=(1, 1, 1), patience=(1, 1, 1),
                                selection="f1", progress=False)
    assert json.loads((tmp_path / "config.json").read_text())["selection"] == "f1"
    watched = {phase: json.loads((tmp_path / phase / "config.json").read_text())["monitor"] for phase in
               ("p1", "p2", "p3")}
    assert watched == {"p1": "val_f1", "p2": "val_loss", "p3": "val_f1_loss"}
    assert metrics["val_f1_loss"] == pytest.approx(1 - metrics["val_f1"] + metrics["val_adv_penalty"])


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory, documents):
    root = tmp_path_factory.mktemp("corpus")
    write_corpus(documents, root / "notes.jsonl", "json")
    with (root / "vectors.txt").open("w") as file:
        for word, vector in random_vectors(documents).items():
            file.write(" ".join([word, *map(str, vector)]) + "\n")
    return ["--data", str(root / "notes.jsonl"), "--format", "json",
            "--embeddings", f"glove-text:{root / 'vectors.txt'}"]


def train(command, corpus_files, out, *options):
    return CliRunner().invoke(app, ["train", command, *corpus_files, *TINY_OPTIONS, "--out", str(out), *options])


class Spy:
    """Records, for every P2 epoch and P3 part, which models' weights changed; kills the first
    run inside its first P3 epoch."""

    def __init__(self):
        self.changed, self.kill = [], True
        self.train_part, self.train_epoch = AlternatingTraining.train_part, AdversaryTraining.train_epoch

    def _record(self, step, models, run):
        before = {name: model.get_weights() for name, model in models.items()}
        result = run()
        self.changed.append((step, {name: any(not np.array_equal(old, new) for old, new in
                                              zip(before[name], model.get_weights(), strict=True))
                                    for name, model in models.items()}))
        return result

    def p3_part(self, procedure, part, train_data, rng):
        if self.kill:
            self.kill = False
            raise RuntimeError("killed")
        return self._record(f"p3{part}", procedure.models(),
                            lambda: self.train_part(procedure, part, train_data, rng))

    def p2_epoch(self, procedure, train_data, epoch, rng):
        models = {"representer": procedure.representer, "adversary": procedure.adversary}
        return self._record("p2", models, lambda: self.train_epoch(procedure, train_data, epoch, rng))


@pytest.fixture(scope="module")
def adversarial_run(tmp_path_factory, corpus_files):
    """A tiny `deidpool train adversarial` run killed in P3, then resumed: (run folder, its
    history when killed, the Spy)."""
    run, spy = tmp_path_factory.mktemp("adversarial") / "run", Spy()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AlternatingTraining, "train_part", lambda procedure, *args: spy.p3_part(procedure, *args))
        patch.setattr(AdversaryTraining, "train_epoch", lambda procedure, *args: spy.p2_epoch(procedure, *args))
        killed = train("adversarial", corpus_files, run, "--pretrain-epochs", "1", "--max-epochs", "1",
                       "--output-noise", "0.5")
        assert isinstance(killed.exception, RuntimeError), killed.output
        history_when_killed = {phase: json.loads((run / phase / "history.json").read_text()) for phase in ("p1", "p2")}
        assert not (run / "p3" / "history.json").exists()
        result = train("adversarial", corpus_files, run, "--pretrain-epochs", "1", "--max-epochs", "1",
                       "--output-noise", "0.5")
    assert result.exit_code == 0, result.output
    return run, history_when_killed, spy


def test_frozen_models_keep_their_weights_bit_for_bit(adversarial_run):
    _, _, spy = adversarial_run
    assert spy.changed == [("p2", {"representer": False, "adversary": True}),
                           ("p3a", {"representer": False, "tagger": True, "adversary": True}),
                           ("p3b", {"representer": True, "tagger": False, "adversary": False})]


def test_adversarial_run_holds_what_bundles_and_audits_read(adversarial_run):
    run, _, _ = adversarial_run
    models = run / "models"
    assert sorted(p.name for p in models.iterdir()) == ["adversary.keras", "representer.keras",
                                                        "representer_p1.keras", "tagger.keras"]
    representer = load_representer(models / "representer.keras")
    assert representer.output.shape[-1] == REPR
    config = json.loads((run / "config.json").read_text())
    # --output-noise sets where the trainable output std starts; one epoch of P1 and P3 moves it little.
    assert config["initial_output_noise"] == 0.5
    np.testing.assert_allclose(representer.get_layer("output_noise").stddev, 0.5, atol=0.05)
    assert config["procedure"] == "three-phase" and config["embeddings"].startswith("glove-text:")
    assert config["tags"][0] == "O" and config["neighbours"] == 5 and config["repr_size"] == REPR
    assert config["casing"]["classes"] and config["max_epochs"] == {"p1": 1, "p2": 1, "p3": 1}
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics["phases"]) == set(metrics["seconds"]) == {"p1", "p2", "p3"}
    assert metrics["val_loss"] == pytest.approx(metrics["val_loss_deid"] + metrics["val_adv_penalty"])
    # the effective noise level is reported: s_d near 0.5 on each of the REPR unit-vector dimensions
    assert metrics["val_noise_to_signal"] == pytest.approx(0.5 * REPR ** 0.5, rel=0.1)
    assert config["output_noise_floor"] == 0.0 and config["p2_passes"] >= 1


def test_a_killed_run_resumes_in_the_phase_it_was_in(adversarial_run):
    run, history_when_killed, spy = adversarial_run
    history = json.loads((run / "history.json").read_text())
    assert [(r["phase"], r["epoch"]) for r in history] == [("p1", 1), ("p2", 1), ("p3", 1)]
    # P1 and P2 were not trained again: the same records (timings included), one P2 epoch in all.
    assert [r for r in history if r["phase"] != "p3"] == [
        {"phase": phase, **record} for phase, records in history_when_killed.items() for record in records]
    assert [step for step, _ in spy.changed].count("p2") == 1


def test_a_representer_that_reads_characters_trains_through_all_three_phases_and_is_audited(corpus_files, tmp_path):
    """`deidpool train adversarial --chars`: P1 trains the convolution over each token's characters
    (the sentences and every side of every pair carry their ids), the run records it, the trained
    representer's vectors depend on a token's spelling, and `deidpool audit` attacks it on the
    export path (its pairs, lookups and inversions reading the pseudonymized copies' characters)."""
    run = tmp_path / "run"
    result = train("adversarial", corpus_files, run, "--pretrain-epochs", "1", "--max-epochs", "1", "--chars")
    assert result.exit_code == 0, result.output
    assert json.loads((run / "config.json").read_text())["representer_chars"] is True
    trained, p1 = (load_representer(run / "models" / name, deterministic=True)
                   for name in ("representer.keras", "representer_p1.keras"))
    initial = build_models(DIM, 3, REPR, **TINY, representer_chars=True)[0].get_layer("characters").get_weights()
    assert not all(np.array_equal(a, b) for a, b in zip(initial, p1.get_layer("characters").get_weights()))
    embeddings, mask = np.ones((1, 2, DIM), np.float32), np.ones((1, 2), bool)
    first, second = (keras.ops.convert_to_numpy(trained({"embeddings": embeddings, "mask": mask,
                                                         "chars": char_ids(words)[None]}))
                     for words in (("Ana", "vive"), ("Eva", "vive")))
    assert not np.allclose(first[0, 0], second[0, 0])
    with pytest.raises(ValueError, match="reads characters and was given none"):
        procedures.represent(trained, embeddings, mask)
    audit = CliRunner().invoke(app, ["audit", "--representer", str(run), *corpus_files[:4], "--neighbours", "5",
                                     "--epochs", "1", "--passes", "1", "--adversary-units", "8", "--held-out-draws",
                                     "1", "--inversion-epochs", "1", "--held-out-fraction", "0.3",
                                     "--out", str(tmp_path / "audit")])
    assert audit.exit_code == 0, audit.output
    report = json.loads((tmp_path / "audit" / "metrics.json").read_text())
    assert "target/fresh" in report["attacks"] and "target" in report["lookup"]
