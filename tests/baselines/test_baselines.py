"""Each baseline trained once from the CLI on a dozen synthetic notes (tiny settings), then
checked: it beats the all-"O" tagger on its training notes, `deidpool predict` and `evaluate`
read its run directory, and the saved model reproduces what the trained one measured."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from deidpool.baselines import char_lstm, crf, svm
from deidpool.baselines.runs import labeled_notes, load_baseline, phi_token_f1, read_config, run_kind
from deidpool.cli import app
from deidpool.corpus.document import Document
from deidpool.corpus.formats import read_corpus, write_corpus
from deidpool.corpus.metrics import evaluate_corpus
from deidpool.corpus.synth import generate_documents

OPTIONS = {
    "crf": ["--c2", "0.1", "--max-iterations", "40", "--min-freq", "1"],
    "svm": ["--c", "1"],
    "char-lstm": ["--lstm-units", "16", "--learning-rate", "0.02", "--max-epochs", "8", "--patience", "8"],
}
# Token-level F1 on the training notes; all-"O" scores 0.
MINIMUM_TRAINING_F1 = {"crf": 0.9, "svm": 0.9, "char-lstm": 0.5}
MODULES = {"crf": crf, "svm": svm, "char-lstm": char_lstm}


@pytest.fixture(scope="module")
def notes(tmp_path_factory):
    root = tmp_path_factory.mktemp("notes")
    documents = list(generate_documents(14, seed=11))
    write_corpus(documents[:12], root / "train", "i2b2")
    write_corpus(documents[12:], root / "valid", "i2b2")
    words = sorted({word.lower() for d in documents for word in d.text.split()})
    vectors = root / "vectors.txt"  # word2vec text format: small random vectors
    lines = [f"{len(words)} 4"] + [f"{w} " + " ".join(f"{((i * 7 + k) % 11) / 10 - 0.5:.1f}" for k in range(4))
                                   for i, w in enumerate(words)]
    vectors.write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def runs(notes):
    """kind -> run directory, each trained by `deidpool train <kind>`."""
    result = {}
    for kind, options in OPTIONS.items():
        extra = ["--embeddings", f"word2vec:{notes / 'vectors.txt'}"] if kind == "char-lstm" else []
        outcome = CliRunner().invoke(app, ["train", kind, "--data", str(notes / "train"), "--format", "i2b2",
                                           "--valid-data", str(notes / "valid"), *options, *extra,
                                           "--out", str(notes / kind)])
        assert outcome.exit_code == 0, outcome.output
        result[kind] = notes / kind
    return result


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_cli_predictions_beat_all_o_on_the_training_notes(notes, runs, kind):
    assert run_kind(runs[kind]) == kind
    runner = CliRunner()
    predictions = notes / f"{kind}.jsonl"
    outcome = runner.invoke(app, ["predict", "--model", str(runs[kind]), "--notes", str(notes / "train"),
                                  "--format", "i2b2", "--out", str(predictions), "--out-format", "json"])
    assert outcome.exit_code == 0, outcome.output
    outcome = runner.invoke(app, ["evaluate", str(notes / "train"), str(predictions), "--format", "i2b2",
                                  "--pred-format", "json", "--json"])
    assert outcome.exit_code == 0, outcome.output
    scores = json.loads(outcome.stdout)
    assert scores["token_all"]["f1"] >= MINIMUM_TRAINING_F1[kind]
    assert scores["entity_strict"]["tp"] > 0
    for document in read_corpus(predictions, "json"):
        document.validate()


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_the_saved_model_reproduces_the_validation_score_measured_in_training(notes, runs, kind):
    config = json.loads((runs[kind] / "config.json").read_text())
    metrics = json.loads((runs[kind] / "metrics.json").read_text())
    valid = read_corpus(notes / "valid", "i2b2")
    prepared = labeled_notes(valid, config["scheme"], config["label"])
    loaded = load_baseline(runs[kind])
    predicted = loaded.tag_notes([text for text, _ in prepared], [sentences for _, sentences in prepared])
    gold = [s.tags for _, sentences in prepared for s in sentences]
    assert phi_token_f1(gold, predicted) == pytest.approx(metrics["val_f1"], abs=1e-9)


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_a_copied_run_directory_predicts_the_same_spans(notes, runs, kind, tmp_path):
    shutil.copytree(runs[kind], tmp_path / "copy")
    documents = read_corpus(notes / "valid", "i2b2") + [Document("empty", "")]
    original = load_baseline(runs[kind]).predict_documents(documents)
    assert load_baseline(tmp_path / "copy").predict_documents(documents) == original
    assert original[-1] == Document("empty", "")
    assert evaluate_corpus(documents, original)["token_all"]["tp"] > 0


def test_run_directories_are_checked(notes, runs, tmp_path):
    with pytest.raises(ValueError, match="not a svm run directory"):
        read_config(tmp_path, "svm", svm.MODEL_FILE)
    with pytest.raises(ValueError, match="kind is 'crf', not 'svm'"):
        read_config(runs["crf"], "svm", crf.MODEL_FILE)
    shutil.copytree(runs["svm"], tmp_path / "svm")
    config = json.loads((tmp_path / "svm" / "config.json").read_text())
    (tmp_path / "svm" / "config.json").write_text(json.dumps({**config, "scikit_learn": "0.1"}))
    with pytest.raises(ValueError, match="saved by scikit-learn 0.1"):
        svm.load(tmp_path / "svm")
    (tmp_path / "svm" / "config.json").write_text(json.dumps({**config, "format_version": 99}))
    with pytest.raises(ValueError, match="run format 99"):
        svm.load(tmp_path / "svm")


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_validation_notes_without_phi_are_refused_before_training(notes, kind, tmp_path):
    train = read_corpus(notes / "train", "i2b2")
    with pytest.raises(ValueError, match="validation data holds no PHI"):
        MODULES[kind].train(train, [Document("v", "Seen on Monday.")], tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
