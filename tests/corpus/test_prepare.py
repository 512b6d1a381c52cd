import numpy as np
import pytest

from deidpool.corpus import Document, Span
from deidpool.corpus.casing import CASING
from deidpool.corpus.formats import read_corpus
from deidpool.corpus.prepare import LabeledSentence, Sentence, prepare_document, prepare_text
from deidpool.corpus.tagging import decode

TEXT = "Pt JSmith, 25yo.\n\nSeen by Dr. Jones on 09/14/2067."
SPANS = (Span(4, 9, "PTName", "Smith"), Span(11, 13, "Age", "25"), Span(30, 35, "HCPName", "Jones"),
         Span(39, 49, "Date", "09/14/2067"))


def gold(document):
    """The gold spans as token extents: trimmed of surrounding whitespace."""
    trimmed = set()
    for span in document.spans:
        start = span.start + len(span.text) - len(span.text.lstrip())
        trimmed.add((start, start + len(span.text.strip()), span.source_type))
    return trimmed


def decoded(sentences, scheme="BIO"):
    return {span for s in sentences for span in decode(s.tokens, s.tags, scheme)}


def test_prepare_document_cuts_tokens_at_span_bounds_and_tags_them():
    sentences = prepare_document(Document("n", TEXT, SPANS))
    assert all(isinstance(s, LabeledSentence) for s in sentences)
    assert [[t.text for t in s.tokens] for s in sentences] == [
        ["Pt", "J", "Smith", ",", "25", "yo", "."],
        ["Seen", "by", "Dr", ".", "Jones", "on", "09", "/", "14", "/", "2067", "."]]
    assert sentences[0].tags == ["O", "O", "B-PTName", "O", "B-Age", "O", "O"]
    assert [CASING[i] for i in sentences[0].casing] == [
        "initial_upper", "all_upper", "initial_upper", "other", "numeric", "all_lower", "other"]
    assert decoded(sentences) == gold(Document("n", TEXT, SPANS))


def test_prepare_document_bioes_and_category_labels():
    sentences = prepare_document(Document("n", TEXT, SPANS), "BIOES", label=lambda span: span.category)
    assert sentences[1].tags[-6:] == ["B-DATE", "I-DATE", "I-DATE", "I-DATE", "E-DATE", "O"]
    assert sentences[1].tags[4] == "S-NAME"


def test_a_span_across_a_sentence_end_keeps_its_sentence_together():
    text = "Seen by Smith. Jones today."
    sentences = prepare_document(Document("n", text, (Span(8, 20, "HCPName", "Smith. Jones"),)))
    assert len(sentences) == 1
    assert decoded(sentences) == {(8, 20, "HCPName")}


def test_prepare_text_has_no_tags_and_no_extra_breaks():
    sentences = prepare_text(TEXT)
    assert all(type(s) is Sentence for s in sentences)
    assert [t.text for t in sentences[0].tokens] == ["Pt", "JSmith", ",", "25", "yo", "."]
    assert sentences[0].casing.dtype == np.int8 and len(sentences[0].casing) == 6
    assert prepare_text("") == []


def _assert_no_label_loss(documents, scheme):
    assert documents
    for document in documents:
        assert decoded(prepare_document(document, scheme), scheme) == gold(document), document.id


@pytest.mark.filterwarnings("ignore:.*overlaps the previous")  # the reader merges one overlapping pair
@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
def test_no_label_loss_on_physionet(physionet_dir, scheme):
    _assert_no_label_loss(read_corpus(physionet_dir, "physionet"), scheme)


@pytest.mark.parametrize("split", ["train", "dev"])
def test_no_label_loss_on_meddocan(meddocan_dir, split):
    _assert_no_label_loss(read_corpus(meddocan_dir / split / "brat", "brat"), "BIOES")
