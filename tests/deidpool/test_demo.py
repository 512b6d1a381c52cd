"""`deidpool demo` end to end in its tiny configuration: every stage runs for real (training,
audit, a server process on loopback, uploads, a pooled run, publication, de-identification),
started as a user starts it, its output captured."""

import json
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from deidpool.adversary.pairs import PairSource
from deidpool.adversary.runs import sentences
from deidpool.adversary.verdicts import HELD_OUT_DRAWS
from deidpool.cli import app
from deidpool.contribution.container import PSEUDONYMIZATION_SCHEMES
from deidpool.corpus import Document, Span
from deidpool.corpus.metrics import PRIMARY, evaluate_corpus, score_row
from deidpool.demo import ROLES, SITES, DemoSettings, demo_documents, scores, tag_set
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.pseudonymization.schemes import EXPORT_SCHEME
from deidpool.representer.embeddings import load_embeddings

STAGES = ["data: notes of every role", "provider: three-phase training of the representer",
          "provider: privacy audit of the frozen representer", "provider: signed representer bundle",
          "server: init, start, representer and audit on record",
          *(f"{name}: keys, registration, export, upload" for name in ("provider", *SITES)),
          "coordinator: pooled training run on the server", "coordinator: publish the pooled pipeline",
          "site_a: download, verify and de-identify the test notes"]
# training, audit, the four exports, the pooled run, de-identification
LONG_STAGES = [STAGES[index] for index in (1, 2, 5, 6, 7, 8, 9, 11)]
# TensorFlow's C++ log lines, absl's and Python's warnings, Keras' layer warnings
NOISE = re.compile(r"^([IWEF]\d{4} |WARNING|warning: Layer)", re.MULTILINE)
# a progress line (representer.progress.ProgressLines) or the demo's line for a pooled epoch
PROGRESS = re.compile(r"^(\S[^:\n]*: \d+(/\d+)? [^,\n]*, \S+ elapsed|.* pooled run \d+: epoch \d+ of)", re.MULTILINE)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """(output folder, summary.json, the command's output: standard output and error, in order)."""
    out = tmp_path_factory.mktemp("demo") / "run"
    result = subprocess.run([sys.executable, "-m", "deidpool", "demo", "--tiny", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=3600)
    assert result.returncode == 0, result.stdout[-5000:]
    return out, json.loads((out / "summary.json").read_text()), result.stdout


def test_every_stage_runs_in_order(demo):
    _, summary, _ = demo
    assert [stage["name"] for stage in summary["stages"]] == STAGES
    assert all(stage["seconds"] > 0 for stage in summary["stages"])
    assert summary["wall_seconds"] >= sum(stage["seconds"] for stage in summary["stages"])
    memory = summary["peak_memory_mb"]
    assert set(memory) == {"demo", "server", "worker"} and all(megabytes > 50 for megabytes in memory.values())


def test_the_server_pooled_every_contribution(demo):
    out, summary, _ = demo
    assert set(summary["contributions"]) == {"provider", *SITES}
    assert all(facts["sentences"] > 0 and facts["bytes"] > 0 for facts in summary["contributions"].values())
    assert all(facts["neighbours"] == 100 and 0 < facts["bound_frequency"] <= 1
               and facts["pseudonymization"] == PSEUDONYMIZATION_SCHEMES[EXPORT_SCHEME]
               for facts in summary["contributions"].values())
    run = summary["pooled_run"]
    assert run["status"] == "succeeded" and run["contributions"] == 4
    assert [epoch["epoch"] for epoch in run["epochs"]] == list(range(1, len(run["epochs"]) + 1))
    assert len(run["epochs"]) <= DemoSettings.tiny().pooled_max_epochs
    assert (out / "institutions" / "site_a" / "pipeline.tar").stat().st_size > 0


def test_both_pipelines_are_scored_and_the_audit_reported(demo):
    _, summary, _ = demo
    assert set(summary["scores"]) == {"provider-only", "pooled"}
    for pipeline in summary["scores"].values():
        assert list(pipeline) == list(score_row(evaluate_corpus([], [])))
        low, high = pipeline["token_official_hipaa_f1_interval"]
        assert 0.0 <= low <= high <= 1.0 and 0.0 <= pipeline[PRIMARY] <= 1.0
    assert summary["audit"]["verdict"] in ("consistent with chance", "broken", "inconclusive")
    assert {"target/fresh", "raw/fresh"} <= set(summary["audit"]["attacks"])


def test_the_audit_judges_on_the_auditors_held_out_notes(demo):
    out, summary, _ = demo
    config = json.loads((out / "provider" / "audit" / "config.json").read_text())
    audit_notes = demo_documents(None, None, DemoSettings.tiny())["audit"]
    pseudonymizer = Pseudonymizer(load_embeddings(DemoSettings.tiny().embeddings), 100, EXPORT_SCHEME)
    [facts] = [stage["details"] for stage in summary["stages"] if stage["name"] == STAGES[2]]
    report = json.loads((out / "provider" / "audit" / "metrics.json").read_text())
    assert 0 < report["held_out_sentences"] == len(PairSource(sentences(audit_notes), pseudonymizer))
    assert config["held_out_pairs"] == facts["held-out pairs"] == HELD_OUT_DRAWS * report["held_out_sentences"]
    assert config["inversion_epochs"] == report["inversion_epochs"] == DemoSettings.tiny().audit.inversion_epochs
    assert set(facts["positive controls"]) == {"raw/fresh", "p1/fresh"}


def test_the_output_is_quiet_and_every_long_stage_shows_its_progress(demo):
    out, _, output = demo
    assert not NOISE.findall(output), output
    assert not NOISE.findall((out / "server.log").read_text())  # the server and its worker
    for number, name in enumerate(STAGES, 1):
        during = output.partition(f"stage {number}: {name} ...")[2].partition(f"stage {number}: {name} done")[0]
        assert PROGRESS.search(during) or name not in LONG_STAGES, (name, during)
    stage_lines = re.findall(r"^.* stage \d+: .* done in .*$", output, re.MULTILINE)
    assert len(stage_lines) == len(STAGES) and not any(re.search(r"\d\.\d{4}", line) for line in stage_lines)


def test_the_report_renders_its_tables_and_plots(demo, chromium):
    out, summary, _ = demo
    page = out / "report.html"
    for name in ("training.png", "scores.png", "audit.png"):
        assert (out / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = chromium(page.as_uri(), out / "report.png")
    assert "Tagger scores on the test notes" in dom and "pooled" in dom and "provider-only" in dom
    assert dom.count("<img") == 3 and summary["audit"]["verdict"] in dom
    assert "realistic surrogate of its type and shape" in dom  # what the default scheme did
    assert (out / "report.png").stat().st_size > 10_000


def test_the_synthetic_roles_differ_in_note_kinds():
    documents = demo_documents(None, None, DemoSettings.tiny())
    assert list(documents) == list(ROLES)
    ids = [document.id for notes in documents.values() for document in notes]
    assert len(ids) == len(set(ids))
    tags = tag_set(None, documents)
    assert {span.source_type for notes in documents.values() for d in notes for span in d.spans} <= \
        {tag[2:] for tag in tags if tag != "O"}


def test_the_command_refuses_a_folder_in_use(tmp_path):
    (tmp_path / "old.txt").write_text("keep me")
    result = CliRunner().invoke(app, ["demo", "--tiny", "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert "is not empty" in result.output
    assert (tmp_path / "old.txt").read_text() == "keep me"


def test_the_scores_headline_is_the_official_i2b2_token_hipaa_measure():
    # IDNUM is HIPAA for the project, not for the official scorer: the two measures differ here
    text = "Jane Roe, ID 4711, seen 2067-09-14."
    gold = [Document("a", text, (Span(0, 8, "PATIENT", "Jane Roe"), Span(13, 17, "IDNUM", "4711"),
                                 Span(24, 34, "DATE", "2067-09-14")))]
    predicted = [Document("a", text, (Span(0, 4, "PATIENT", "Jane"), Span(13, 17, "IDNUM", "4711")))]
    result, row = evaluate_corpus(gold, predicted), scores(gold, predicted)
    assert row[PRIMARY] == result["token_official_hipaa"]["f1"] == pytest.approx(1 / 3)  # Jane of 5 tokens, no fp
    assert row["token_hipaa_f1"] == result["token_hipaa"]["f1"] != row[PRIMARY]
    assert row["token_official_hipaa_f1_interval"] == result["token_official_hipaa"]["f1_interval"]
