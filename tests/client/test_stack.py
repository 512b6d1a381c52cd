"""The site's stack (client/stack.py, combination.py, operating_point.py; `client personalize` and
`client deidentify --stack`): the combination rule, the operating point, the stack end to end on
tiny synthetic notes, and nothing of it in an export."""

import dataclasses
import json
import os
import shutil
import stat
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.client.combination import combine, span_viterbi, union_vocabulary
from deidpool.client.operating_point import THRESHOLDS, choose_operating_point
from deidpool.corpus.document import Document, Span
from deidpool.corpus.metrics import evaluate_corpus

runner = CliRunner()
PIPELINE_TAGS = ["O", "B-DOCTOR", "I-DOCTOR"]
LOCAL_TAGS = ["O", "B-CITY", "I-CITY", "B-DOCTOR", "I-DOCTOR"]


def _run(*args):
    return runner.invoke(app, [str(arg) for arg in args])


def test_the_mixed_marginals_are_decoded_as_whole_spans_at_the_threshold_s_odds():
    pipeline = np.array([[0.9, 0.05, 0.05],  # the pipeline sees no PHI ...
                         [0.3, 0.6, 0.1],  # ... here a doctor
                         [0.2, 0.1, 0.7]])
    local = np.array([[0.2, 0.7, 0.0, 0.1, 0.0],  # ... the local tagger a city
                      [0.6, 0.0, 0.0, 0.3, 0.1],
                      [0.9, 0.0, 0.0, 0.0, 0.1]])
    vocabulary = union_vocabulary(PIPELINE_TAGS, LOCAL_TAGS)
    assert vocabulary == ["O", "B-DOCTOR", "I-DOCTOR", "B-CITY", "I-CITY"]
    even = combine(pipeline, PIPELINE_TAGS, local, LOCAL_TAGS, 0.5)
    np.testing.assert_allclose(even.scores, [0.45, 0.55, 0.45])  # the mixture's P(PHI)
    np.testing.assert_allclose(even.mixture[0], [0.55, 0.075, 0.025, 0.35, 0.0])
    assert [vocabulary[i] for i in even.tag_ids(0.5)] == ["O", "O", "O"]
    assert [vocabulary[i] for i in even.tag_ids(0.4)] == ["O", "B-DOCTOR", "I-DOCTOR"]  # "O" less likely
    assert [vocabulary[i] for i in even.tag_ids(0.3)] == ["B-CITY", "B-DOCTOR", "I-DOCTOR"]
    pipeline_alone = combine(pipeline, PIPELINE_TAGS, local, LOCAL_TAGS, 1.0)
    assert [vocabulary[i] for i in pipeline_alone.tag_ids(0.5)] == ["O", "B-DOCTOR", "I-DOCTOR"]
    np.testing.assert_allclose(combine(pipeline, PIPELINE_TAGS, local, LOCAL_TAGS, 1.0).scores, [0.1, 0.7, 0.8])
    np.testing.assert_allclose(combine(pipeline, PIPELINE_TAGS, local, LOCAL_TAGS, 0.0).scores, [0.8, 0.4, 0.1])
    with pytest.raises(ValueError, match="starts with 'O'"):
        union_vocabulary(PIPELINE_TAGS[::-1], LOCAL_TAGS)


@pytest.mark.parametrize("tags, best, decoded", [
    (["O", "B-X", "I-X", "B-Y", "I-Y"], ["I-X", "I-X", "O"], ["B-X", "I-X", "O"]),  # BIO: a span starts with B
    (["O", "B-X", "I-X", "B-Y", "I-Y"], ["B-X", "I-Y", "O"], ["B-X", "I-X", "O"]),  # one label per span
    (["O", "B-X", "I-X", "E-X", "S-X"], ["B-X", "O", "O"], ["S-X", "O", "O"]),  # BIOES: every span closed
    (["O", "B-X", "I-X", "E-X", "S-X"], ["O", "B-X", "I-X"], ["O", "B-X", "E-X"]),
])
def test_span_viterbi_keeps_the_tag_scheme(tags, best, decoded):
    scores = np.full((3, len(tags)), np.log(0.1))
    for position, tag in enumerate(best):
        scores[position, tags.index(tag)] = np.log(0.5)
    for position, tag in enumerate(decoded):  # the valid path's tags are the next best
        if tag != best[position]:
            scores[position, tags.index(tag)] = np.log(0.3)
    assert [tags[i] for i in span_viterbi(scores, tags)] == decoded
    assert len(span_viterbi(np.zeros((0, len(tags))), tags)) == 0


def _scored_notes():
    """Gold notes of one PHI word each among others, and per word a made-up PHI score."""
    rng = np.random.default_rng(0)
    gold, scores = [], {}
    for number in range(30):
        words = [f"w{number}x{i}" for i in range(6)]
        text = " ".join(words)
        start = text.index(words[2])
        gold.append(Document(f"n{number}", text, (Span(start, start + len(words[2]), "PATIENT", words[2]),)))
        for i, word in enumerate(words):
            scores[word] = float(np.clip(rng.normal(0.7 if i == 2 else 0.3, 0.25), 0, 1))
    return gold, scores


def test_the_operating_point_is_the_largest_threshold_reaching_the_recall_and_its_precision_recomputes():
    gold, scores = _scored_notes()

    def predict(weight, threshold):  # the weight shifts every score; 0.5 shifts none
        documents = []
        for document in gold:
            spans, offset = [], 0
            for word in document.text.split(" "):
                if scores[word] + (weight - 0.5) / 5 >= threshold:
                    spans.append(Span(offset, offset + len(word), "PATIENT", word))
                offset += len(word) + 1
            documents.append(Document(document.id, document.text, tuple(spans)))
        return documents

    point = choose_operating_point(gold, predict, min_recall=0.8)
    assert point["measure"] == "token_official_hipaa" and point["weight"] in (0.0, 0.25, 0.5, 0.75, 1.0)
    chosen, weight = point["chosen"], point["weight"]
    assert point["reached"] and chosen["recall"] >= 0.8
    higher = [t for t in THRESHOLDS if t > chosen["threshold"]]
    recomputed = evaluate_corpus(gold, predict(weight, higher[0]))["token_official_hipaa"]
    assert recomputed["recall"] < 0.8  # the next threshold up misses R
    again = evaluate_corpus(gold, predict(weight, chosen["threshold"]))["token_official_hipaa"]
    assert (again["precision"], again["recall"]) == (chosen["precision"], chosen["recall"])
    assert point["default"]["threshold"] == 0.5 and point["default"]["f1"] == max(w["f1"] for w in point["weights"])
    assert choose_operating_point(gold, predict)["chosen"] == point["default"]
    unreachable = choose_operating_point(gold, lambda weight, threshold: [Document(d.id, d.text) for d in gold], 0.5)
    assert not unreachable["reached"] and unreachable["chosen"]["threshold"] == THRESHOLDS[0]


@pytest.fixture(scope="module")
def stack_dir(tmp_path_factory, notes_dir, pipeline_path, key_files):
    """`train embeddings` then `client personalize` on the tiny notes: the site's FastText for its tagger."""
    folder = tmp_path_factory.mktemp("site")
    result = _run("train", "embeddings", "--data", notes_dir, "--format", "i2b2", "--dim", "8", "--epochs", "1",
                  "--min-count", "1", "--out", folder / "site.bin")
    assert result.exit_code == 0, result.output
    result = _run("client", "personalize", "--pipeline", pipeline_path, "--provider-key", key_files.provider.public,
                  "--notes", notes_dir, "--format", "i2b2", "--valid-fraction", "0.25", "--min-recall", "0.5",
                  "--tagger-embeddings", f"fasttext:{folder / 'site.bin'}", "--lstm-units", "4", "--max-epochs", "1",
                  "--language", "en", "--out", folder / "stack")
    assert result.exit_code == 0, result.output
    assert "default threshold 0.50" in result.output and "--min-recall 0.5" in result.output
    return folder / "stack"


def test_personalize_writes_an_owner_only_stack_whose_point_the_deidentified_notes_reproduce(
        stack_dir, notes_dir, pipeline, embeddings, documents):
    from deidpool.cli.train_commands import training_documents
    from deidpool.client.stack import open_stack, pipeline_digest

    for root, folders, files in os.walk(stack_dir):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
        assert all(stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) == 0o600 for name in files)
    record = json.loads((stack_dir / "stack.json").read_text())
    point = json.loads((stack_dir / "operating_point.json").read_text())
    assert record["pipeline_sha256"] == pipeline_digest(pipeline)
    assert record["embeddings"] == "fasttext:embeddings/site.bin"
    assert record["threshold"] == point["chosen"]["threshold"] and point["reached"]
    assert point["chosen"]["recall"] >= 0.5 and point["chosen"]["threshold"] >= 0.5
    _, valid = training_documents(notes_dir, "i2b2", None, None, None, 0.25, 0)
    found = list(open_stack(stack_dir, pipeline, embeddings).find(valid))
    scores = evaluate_corpus(valid, found)["token_official_hipaa"]
    assert (scores["precision"], scores["recall"]) == pytest.approx((point["chosen"]["precision"],
                                                                    point["chosen"]["recall"]), abs=1e-12)


def test_deidentify_with_the_stack_and_refused_with_another_pipeline(stack_dir, tmp_path, pipeline_path, key_files,
                                                                     documents, chars_pipeline):
    notes = tmp_path / "notes"
    notes.mkdir()
    for document in documents[:3]:
        (notes / f"{document.id}.txt").write_text(document.text)
    common = ("client", "deidentify", "--provider-key", key_files.provider.public, "--notes", notes,
              "--stack", stack_dir)
    result = _run(*common, "--pipeline", pipeline_path, "--format", "json", "--out", tmp_path / "found.jsonl")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (tmp_path / "found.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and all(line["spans"] for line in lines)
    other = _run(*common, "--pipeline", chars_pipeline.path, "--format", "json", "--out", tmp_path / "x.jsonl")
    assert other.exit_code == 2 and "built for another pipeline" in other.output
    both = _run(*common, "--pipeline", pipeline_path, "--memory", tmp_path / "m.json", "--format", "json",
                "--out", tmp_path / "y.jsonl")
    assert both.exit_code == 2 and "own PHI memory" in both.output


def test_an_export_reads_nothing_of_the_stack_and_its_header_is_as_without_it(stack_dir, tmp_path, pipeline_path,
                                                                               key_files, notes_dir):
    from deidpool.contribution.container import read_header

    opened = []
    watching = [False]

    def audit(event, args):
        if watching[0] and event == "open" and isinstance(args[0], (str, os.PathLike)):
            opened.append(os.fspath(args[0]))

    sys.addaudithook(audit)

    def export(out):
        watching[0] = True
        try:
            result = _run("client", "export", "--bundle", pipeline_path, "--provider-key", key_files.provider.public,
                          "--notes", notes_dir, "--format", "i2b2", "--server-key", key_files.server.public,
                          "--key", key_files.institution.private, "--language", "en", "--out", out)
        finally:
            watching[0] = False
        assert result.exit_code == 0, result.output
        return dataclasses.asdict(read_header(out))

    with_stack = export(tmp_path / "with.dpc")
    assert opened and not [path for path in opened if str(stack_dir) in path]
    stack_files = {path.name for path in stack_dir.rglob("*")}
    assert not any(os.path.basename(path) in stack_files - {"config.json", "metrics.json"} for path in opened)
    shutil.move(stack_dir, tmp_path / "moved")
    try:
        without = export(tmp_path / "without.dpc")
    finally:
        shutil.move(tmp_path / "moved", stack_dir)
    volatile = {"created", "nonce", "body_sha256"}
    assert {k: v for k, v in with_stack.items() if k not in volatile} == \
        {k: v for k, v in without.items() if k not in volatile}
