"""Tests of the synthetic clinical-note generator and the `deidpool corpus synth` command."""

from collections import Counter

import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.formats import read_corpus
from deidpool.corpus.synth import generate_documents

I2B2_TYPES = {t.type for t in PHI_TYPES.values()}


@pytest.fixture(scope="module")
def notes():
    return list(generate_documents(500, seed=0))


def test_same_seed_gives_identical_documents():
    assert list(generate_documents(30, seed=7)) == list(generate_documents(30, seed=7))


def test_different_seeds_differ_and_prefixes_agree():
    assert [d.text for d in generate_documents(10, seed=1)] != [d.text for d in generate_documents(10, seed=2)]
    assert list(generate_documents(5, seed=3)) == list(generate_documents(12, seed=3))[:5]


def test_ids_are_numbered(notes):
    assert [d.id for d in notes[:3]] == ["synth-00001", "synth-00002", "synth-00003"]


def test_every_span_is_valid_and_trimmed(notes):
    for document in notes[:300]:
        document.validate()
        assert document.spans, document.id
        assert all(s.text == s.text.strip() for s in document.spans), document.id
        assert all(s.source_type in I2B2_TYPES for s in document.spans)


def test_every_i2b2_type_occurs(notes):
    counts = Counter(s.source_type for d in notes for s in d.spans)
    assert set(counts) == I2B2_TYPES


def test_casing_varies(notes):
    upper = sum(d.text == d.text.upper() for d in notes)
    lower = sum(d.text == d.text.lower() for d in notes)
    assert 20 < upper < 250 and lower > 5


def test_no_two_documents_are_identical(notes):
    assert len({d.text for d in notes}) == len(notes)


def test_kinds_are_honoured():
    assert all("dear" in d.text.lower() for d in generate_documents(20, kinds=("letter",)))
    with pytest.raises(ValueError):
        next(generate_documents(1, kinds=("poem",)))


def test_cli_writes_a_readable_corpus(tmp_path):
    out = tmp_path / "synth"
    result = CliRunner().invoke(app, ["corpus", "synth", str(out), "--notes", "15", "--seed", "4"])
    assert result.exit_code == 0, result.output
    written = list(generate_documents(15, seed=4))
    assert f"wrote 15 documents, {sum(len(d.spans) for d in written)} spans" in result.output
    assert sorted(read_corpus(out, "i2b2"), key=lambda d: d.id) == written


def test_cli_rejects_an_unknown_format(tmp_path):
    result = CliRunner().invoke(app, ["corpus", "synth", str(tmp_path / "x"), "--format", "docx"])
    assert result.exit_code == 2
