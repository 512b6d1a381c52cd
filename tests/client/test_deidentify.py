"""Tests of de-identification with a published pipeline: reading unlabeled notes, finding PHI
spans, and writing them (or the notes with PHI replaced) atomically."""

import random

import pytest

from deidpool.client.deidentify import PhiFinder, find_phi, read_notes, write_deidentified
from deidpool.client.patterns import DEFAULT_PATTERNS
from deidpool.corpus.document import Document
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.formats import read_corpus


@pytest.fixture(scope="module")
def found(documents, pipeline, embeddings):
    notes = [Document(document.id, document.text) for document in documents[:6]]
    return list(find_phi(notes, pipeline, embeddings, chunk_documents=4))


def test_found_spans_are_valid_and_named_by_the_pipeline_tags(found, documents, pipeline):
    labels = {tag.partition("-")[2] for tag in pipeline.tags if tag != "O"}
    assert [(d.id, d.text) for d in found] == [(d.id, d.text) for d in documents[:6]]
    assert sum(len(document.spans) for document in found) > 0
    for document in found:
        document.validate()
        assert {span.source_type for span in document.spans} <= labels


def test_the_same_notes_always_get_the_same_spans(found, pipeline, embeddings):
    again = find_phi([Document(d.id, d.text) for d in found], pipeline, embeddings)
    assert [d.spans for d in again] == [d.spans for d in found]


def test_the_pipeline_is_loaded_once_per_bundle(found, pipeline, embeddings, monkeypatch):
    from deidpool.representer.bundle import Bundle

    monkeypatch.setattr(Bundle, "load_tagger", lambda self: pytest.fail("pipeline loaded again"))
    assert [d.spans for d in find_phi(found[:2], pipeline, embeddings)] == [d.spans for d in found[:2]]


def test_blank_notes_have_no_spans(pipeline, embeddings, documents):
    notes = [Document("a", ""), Document("b", " \n"), Document("c", documents[0].text)]
    found = list(find_phi(notes, pipeline, embeddings, chunk_documents=2))
    assert [d.spans for d in found[:2]] == [(), ()] and found[2].spans


def test_the_finder_verifies_the_pipeline_and_finds_what_find_phi_finds(pipeline_path, key_files, pipeline, embeddings,
                                                                        documents):
    finder = PhiFinder.open(pipeline_path, key_files.provider.public)
    texts = [d.text for d in documents[:3]]
    expected = find_phi([Document(str(i), t) for i, t in enumerate(texts)], pipeline, embeddings,
                        patterns=DEFAULT_PATTERNS)
    assert list(finder.spans(texts, chunk_documents=2)) == [d.spans for d in expected]
    assert finder.labels == ({tag[2:] for tag in pipeline.tags if tag != "O"}
                             | {p.label for p in DEFAULT_PATTERNS if not p.refuses})
    assert PhiFinder.open(pipeline_path, key_files.provider.public, patterns=False).patterns == ()


def test_reading_text_notes_and_corpus_formats(tmp_path, documents, notes_dir):
    (tmp_path / "b.txt").write_text("second note")
    (tmp_path / "a.txt").write_text("first note")
    assert [(d.id, d.text) for d in read_notes(tmp_path)] == [("a", "first note"), ("b", "second note")]
    assert [d.id for d in read_notes(tmp_path / "a.txt")] == ["a"]
    from_corpus = list(read_notes(notes_dir, "i2b2"))
    assert [d.text for d in from_corpus] == [d.text for d in documents] and not any(d.spans for d in from_corpus)
    with pytest.raises(CorpusError, match="no such file"):
        list(read_notes(tmp_path / "missing"))
    with pytest.raises(CorpusError, match="unknown format"):
        list(read_notes(tmp_path, "docx"))


@pytest.mark.parametrize("fmt, target", [("brat", "out"), ("i2b2", "out"), ("json", "out.jsonl")])
def test_spans_are_written_in_corpus_formats(tmp_path, documents, fmt, target):
    assert write_deidentified(iter(documents[:3]), tmp_path / target, fmt) == 3
    assert [d.spans for d in read_corpus(tmp_path / target, fmt)] == [d.spans for d in documents[:3]]


@pytest.mark.parametrize("surrogates", [False, True])
def test_text_output_replaces_every_phi_mention(tmp_path, documents, surrogates):
    write_deidentified(documents[:3], tmp_path / "out", "text", surrogates=surrogates, rng=random.Random(0))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"{d.id}.txt" for d in documents[:3]]
    texts = {d.id: (tmp_path / "out" / f"{d.id}.txt").read_text() for d in documents[:3]}
    names = [(d.id, s.text) for d in documents[:3] for s in d.spans if s.category == "NAME" and len(s.text) > 4]
    assert names and not any(name in texts[document_id] for document_id, name in names)
    assert all(("[**NAME**]" in texts[document_id]) != surrogates for document_id, _ in names)


def test_failed_text_output_leaves_the_old_output(tmp_path, documents):
    write_deidentified(documents[:1], tmp_path / "out", "text")
    with pytest.raises(CorpusError, match="two documents have the id"):
        write_deidentified([documents[0], documents[0]], tmp_path / "out", "text")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == [f"{documents[0].id}.txt"]


def test_unknown_output_format(tmp_path, documents):
    with pytest.raises(CorpusError, match="unknown output format 'pdf'"):
        write_deidentified(documents, tmp_path / "out", "pdf")
