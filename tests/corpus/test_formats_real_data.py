"""The readers and writers on every document of the reference corpora in ../shared/data:
gold spans align with the text, and every document round-trips through each format."""

from collections import Counter

import pytest

from deidpool.corpus.errors import CorpusWarning
from deidpool.corpus.formats import read_corpus, write_corpus

MEDDOCAN_PARTS = ("train", "dev")
EXACT_FORMATS = [("i2b2", "out"), ("meddocan", "out"), ("brat", "out"), ("physionet", "out"),
                 ("json", "out.jsonl"), ("json", "out")]


@pytest.fixture(scope="module")
def physionet(physionet_dir):
    with pytest.warns(CorpusWarning, match="line 174: phrase overlaps the previous Location phrase"):
        return read_corpus(physionet_dir, "physionet")


@pytest.fixture(scope="module")
def meddocan(meddocan_dir):
    """{part: (documents read from brat/, documents read from xml/)}"""
    return {part: (read_corpus(meddocan_dir / part / "brat", "brat"),
                   read_corpus(meddocan_dir / part / "xml", "meddocan")) for part in MEDDOCAN_PARTS}


@pytest.fixture(scope="module")
def corpora(physionet, meddocan):
    return {"physionet": physionet, **{f"meddocan-{part}": brat for part, (brat, _) in meddocan.items()}}


def test_every_physionet_phrase_aligns_with_its_note(physionet_dir, physionet):
    notes = {document.id: document.text for document in physionet}
    phrases = (physionet_dir / "id-phi.phrase").read_text(encoding="utf-8").splitlines()
    assert len(phrases) == 1541
    for line in phrases:
        patient, note, start, end, _, text = line.split(" ", 5)
        assert notes[f"{patient}-{note}"][int(start):int(end)] == text, line


def test_corpus_sizes(physionet, meddocan):
    assert (len(physionet), sum(len(d.spans) for d in physionet)) == (2123, 1540)  # one merged pair
    sizes = {part: [(len(docs), sum(len(d.spans) for d in docs)) for docs in pair] for part, pair in meddocan.items()}
    assert sizes == {"train": [(500, 11333)] * 2, "dev": [(250, 5801)] * 2}


def test_physionet_splits_partition_the_corpus(physionet_dir, physionet):
    with pytest.warns(CorpusWarning):
        parts = [read_corpus(physionet_dir, "physionet", split=name)
                 for name in ("provider", "site_a", "site_b", "site_c", "test")]
    assert sorted(d.id for part in parts for d in part) == sorted(d.id for d in physionet)


def test_meddocan_federation_splits_partition_train_by_journal(meddocan_dir, meddocan):
    """provider 200 documents, three sites of 100, together all of train; no journal (the id's first
    part) is held by two parties; the BRAT and XML readers pick the same documents."""
    parties = ("provider", "site_a", "site_b", "site_c")
    xml = {name: read_corpus(meddocan_dir / "train" / "xml", "meddocan", split=name) for name in parties}
    brat = {name: read_corpus(meddocan_dir / "train" / "brat", "brat", split=name) for name in parties}
    assert {name: len(documents) for name, documents in xml.items()} == {
        "provider": 200, "site_a": 100, "site_b": 100, "site_c": 100}
    assert {name: [d.id for d in documents] for name, documents in brat.items()} == {
        name: [d.id for d in documents] for name, documents in xml.items()}
    assert sorted(d.id for documents in xml.values() for d in documents) == sorted(d.id for d in meddocan["train"][1])
    journals = {name: {d.id.split("-")[0] for d in documents} for name, documents in xml.items()}
    assert all(journals[a].isdisjoint(journals[b]) for a in parties for b in parties if a < b)


def test_every_gold_span_matches_the_text(corpora):
    for documents in corpora.values():
        for document in documents:
            assert all(document.text[s.start:s.end] == s.text for s in document.spans), document.id


@pytest.mark.parametrize("part", MEDDOCAN_PARTS)
def test_meddocan_brat_and_xml_agree(meddocan, part):
    brat, xml = meddocan[part]
    assert [d.id for d in brat] == [d.id for d in xml]
    for from_brat, from_xml in zip(brat, xml):
        assert from_brat.text == from_xml.text, from_brat.id
        assert Counter(from_brat.spans) == Counter(from_xml.spans), from_brat.id


@pytest.mark.parametrize("fmt, name", EXACT_FORMATS)
def test_every_document_round_trips(tmp_path, corpora, fmt, name):
    """Single files give documents back in written order, folders in file-name order."""
    in_order = fmt == "physionet" or name.endswith(".jsonl")
    for corpus, documents in corpora.items():
        write_corpus(documents, tmp_path / corpus / name, fmt)
        expected = documents if in_order else sorted(documents, key=lambda d: d.id)
        assert read_corpus(tmp_path / corpus / name, fmt) == expected, corpus


def test_conll_export_keeps_every_span(tmp_path, corpora):
    """Read back, the text has one space between tokens, so compare spans without whitespace."""
    def spans(documents):
        return [sorted((s.source_type, "".join(s.text.split())) for s in d.spans) for d in documents]

    for corpus, documents in corpora.items():
        write_corpus(documents, tmp_path / f"{corpus}.conll", "conll")
        back = read_corpus(tmp_path / f"{corpus}.conll", "conll")
        assert [d.id for d in back] == [d.id for d in documents]
        assert spans(back) == spans(documents), corpus
