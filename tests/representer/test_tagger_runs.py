import json
import random

import numpy as np
import pytest
from gensim.models import KeyedVectors
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.corpus import Document, Span
from deidpool.corpus.formats import write_corpus
from deidpool.corpus.synth import generate_documents
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.embeddings import Embeddings
from deidpool.representer.tagger_runs import (
    TaggerSettings,
    labeled_sentences,
    load_tagger_run,
    predict_documents,
    split_documents,
    train_tagger_run,
)


@pytest.fixture(scope="module")
def tiny_vectors():
    words = ["seen", "by", "dr", "smith", "jones", "brown", "on", "monday", "in", "boston", "denver", "."]
    kv = KeyedVectors(6)
    kv.add_vectors(words, np.random.default_rng(0).normal(size=(len(words), 6)).astype(np.float32))
    return Embeddings(kv, "tiny")


def note(i, name, city):
    text = f"Seen by Dr. {name} on Monday in {city}."
    return Document(f"n{i}", text, (Span(12, 12 + len(name), "DOCTOR", name),
                                    Span(text.index(city), text.index(city) + len(city), "CITY", city)))


DOCS = [note(i, name, city) for i, (name, city) in enumerate([("Smith", "Boston"), ("Jones", "Denver"),
                                                              ("Brown", "Boston"), ("Smith", "Denver")] * 4)]


def test_split_documents_holds_out_whole_groups_reproducibly():
    rest, held = split_documents(DOCS, 0.25, seed=3, group=lambda d: str(int(d.id[1:]) % 4))
    assert len(held) == 4 and len({int(d.id[1:]) % 4 for d in held}) == 1
    assert split_documents(DOCS, 0.25, seed=3, group=lambda d: str(int(d.id[1:]) % 4))[1] == held
    assert {d.id for d in rest} | {d.id for d in held} == {d.id for d in DOCS}


def test_pseudonymized_sentences_change_only_phi_tokens(tiny_vectors):
    sentences = labeled_sentences(DOCS[:4], "BIO", "source")
    changed = Pseudonymizer(tiny_vectors, 5).labeled_sentences(sentences, random.Random(1))
    for before, after in zip(sentences, changed):
        assert after.tags == before.tags
        for tag, old, new in zip(before.tags, before.tokens, after.tokens):
            assert tag != "O" or old.text == new.text
    assert any(a.tokens != b.tokens for a, b in zip(sentences, changed))


def test_train_and_predict_write_and_read_a_run_directory(tmp_path, tiny_vectors):
    metrics = train_tagger_run(DOCS[:12], DOCS[12:], tmp_path / "run",
                               TaggerSettings(embeddings="tiny", lstm_units=4, max_epochs=2, patience=1),
                               progress=False, loaded_embeddings=tiny_vectors)
    assert {"val_loss", "val_f1", "best_epoch"} <= metrics.keys()
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["tag_vocabulary"][0] == "O" and config["embeddings_id"] == tiny_vectors.source_id
    tagger, config, vectors = load_tagger_run(tmp_path / "run", loaded_embeddings=tiny_vectors)
    predicted = predict_documents(tagger, config, vectors, DOCS[12:])
    assert [(d.id, d.text) for d in predicted] == [(d.id, d.text) for d in DOCS[12:]]
    for document in predicted:
        document.validate()


@pytest.mark.parametrize("keep_originals, sentences", [(False, 12), (True, 24)])
def test_pseudonymized_training_replaces_or_augments_the_originals(tmp_path, tiny_vectors, keep_originals, sentences):
    settings = TaggerSettings(embeddings="tiny", keep_originals=keep_originals, lstm_units=2, max_epochs=1, patience=1)
    train_tagger_run(DOCS[:12], DOCS[12:], tmp_path / "run", settings, progress=False, loaded_embeddings=tiny_vectors,
                     pseudonymizer=Pseudonymizer(tiny_vectors, 5, "groups"))
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["train_sentences"] == sentences and config["keep_originals"] is keep_originals
    assert (config["pseudonymization_neighbours"], config["pseudonymization_scheme"]) == (5, "groups")


def test_a_run_directory_of_another_version_is_refused(tmp_path, tiny_vectors):
    train_tagger_run(DOCS[:12], DOCS[12:], tmp_path / "run",
                     TaggerSettings(embeddings="tiny", lstm_units=2, max_epochs=1, patience=1), progress=False,
                     loaded_embeddings=tiny_vectors)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    (tmp_path / "run" / "config.json").write_text(json.dumps({**config, "format_version": 99}))
    with pytest.raises(ValueError, match="another deidpool version"):
        load_tagger_run(tmp_path / "run", loaded_embeddings=tiny_vectors)
    with pytest.raises(ValueError, match="not a tagger run directory"):
        load_tagger_run(tmp_path)


@pytest.mark.parametrize("train, valid, message", [
    ([], DOCS[12:], "no sentence"),
    (DOCS[:12], [Document("x", "Seen on Monday.")], "validation data holds no PHI"),
])
def test_bad_training_input_is_refused_before_training(tmp_path, tiny_vectors, train, valid, message):
    with pytest.raises(ValueError, match=message):
        train_tagger_run(train, valid, tmp_path / "run", TaggerSettings(embeddings="tiny"),
                         loaded_embeddings=tiny_vectors)
    with pytest.raises(ValueError, match="needs a pseudonymizer"):
        train_tagger_run(DOCS[:12], DOCS[12:], tmp_path / "run", TaggerSettings(embeddings="tiny", keep_originals=True),
                         loaded_embeddings=tiny_vectors)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("field, value, message", [
    ("scheme", "BIOLU", "scheme must be one of BIO, BIOES, got 'BIOLU'"),
    ("label", "kind", "label must be one of source, type, got 'kind'"),
    ("monitor", "val_accuracy", "monitor must be one of val_f1, val_tag_f1, val_loss"),
    ("lstm_units", 0, "lstm_units must be at least 1, got 0"),
    ("patience", 0, "patience must be at least 1, got 0"),
])
def test_wrong_settings_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        TaggerSettings(**{field: value})


@pytest.mark.parametrize("options", [[], ["--chars"]])
def test_cli_train_predict_evaluate(tmp_path, options):
    write_corpus(generate_documents(24, seed=5), tmp_path / "train", "i2b2")
    write_corpus(generate_documents(3, seed=6), tmp_path / "test", "brat")
    runner = CliRunner()
    result = runner.invoke(app, ["train", "tagger", "--data", str(tmp_path / "train"), "--format", "i2b2",
                                 "--lstm-units", "4", "--max-epochs", "1", "--out", str(tmp_path / "run"), *options])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "config.json").read_text()).get("chars", False) == bool(options)
    result = runner.invoke(app, ["predict", "--model", str(tmp_path / "run"), "--notes", str(tmp_path / "test"),
                                 "--format", "brat", "--out", str(tmp_path / "pred.jsonl"), "--out-format", "json"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["evaluate", str(tmp_path / "test"), str(tmp_path / "pred.jsonl"), "--format", "brat",
                                 "--pred-format", "json", "--json"])
    assert result.exit_code == 0, result.output
    assert {"token_hipaa", "token_all", "entity_strict"} <= json.loads(result.stdout).keys()


def test_cli_reports_a_bad_embeddings_spec_before_training(tmp_path):
    write_corpus(generate_documents(12, seed=5), tmp_path / "train", "i2b2")
    result = CliRunner().invoke(app, ["train", "tagger", "--data", str(tmp_path / "train"), "--format", "i2b2",
                                      "--embeddings", "bogus", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "bad embeddings spec" in result.output
    assert not (tmp_path / "run" / "checkpoints").exists()
