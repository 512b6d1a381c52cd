import json

from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.corpus import Document, Span
from deidpool.corpus.formats import write_corpus
from deidpool.corpus.stats import corpus_stats, format_stats

DOCS = [
    Document("a", "Seen by Dr. Smith today.\n\nBP stable.", (Span(12, 17, "DOCTOR", "Smith"),)),
    Document("b", "Zqxv lives in Boston.", (Span(0, 4, "PATIENT", "Zqxv"), Span(14, 20, "CITY", "Boston"))),
]


def test_counts_documents_sentences_tokens_and_phi():
    stats = corpus_stats(DOCS, is_known=lambda word: word.lower() != "zqxv")
    assert (stats["documents"], stats["sentences"], stats["spans"]) == (2, 3, 3)
    assert stats["tokens"] == 7 + 3 + 5
    assert stats["phi_tokens"] == 3
    assert stats["spans_per_category"] == {"NAME": 2, "LOCATION": 1}
    assert stats["oov_rate"] == 1 / 15 and stats["oov_rate_phi"] == 1 / 3
    assert "| NAME | 2 |" in format_stats(stats)


def test_without_embeddings_there_is_no_oov_rate():
    assert "oov_rate" not in corpus_stats(DOCS)


def test_stats_command_prints_json(tmp_path):
    write_corpus(DOCS, tmp_path / "notes", "brat")
    result = CliRunner().invoke(app, ["corpus", "stats", str(tmp_path / "notes"), "--format", "brat", "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["spans"] == 3 and 0 < stats["oov_rate"] < 0.2


def test_stats_command_rejects_a_bad_embeddings_spec(tmp_path):
    write_corpus(DOCS, tmp_path / "notes", "brat")
    result = CliRunner().invoke(app, ["corpus", "stats", str(tmp_path / "notes"), "--format", "brat",
                                      "--embeddings", "fasttext:/nope.bin"])
    assert result.exit_code == 2 and "nope.bin" in result.output


def test_categories_command_prints_the_table():
    result = CliRunner().invoke(app, ["corpus", "categories"])
    assert result.exit_code == 0 and "| HCPName | physionet | NAME | DOCTOR | no |" in result.output
