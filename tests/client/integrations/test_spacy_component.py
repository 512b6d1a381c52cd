"""The spaCy component: registered through the spacy_factories entry point, a signature-checked
pipeline's spans on a blank pipeline's doc (span group always, doc.ents unless they would
overlap earlier entities), aligned to spaCy's tokens by expansion."""

from importlib.metadata import entry_points
from types import SimpleNamespace

import pytest

spacy = pytest.importorskip("spacy", reason="the spaCy integration needs deidpool[spacy] "
                                            "(pip install -e '.[test]' installs it)")

from deidpool.client.deidentify import PhiFinder  # noqa: E402
from deidpool.client.integrations.spacy_component import DeidpoolComponent  # noqa: E402
from deidpool.corpus.document import Span  # noqa: E402
from deidpool.representer.bundle import BundleError  # noqa: E402

NOTE = "Mr. John Smith was seen on 03/14/2021. Call 617-555-0199 or mail jsmith@example.org, age 93."


def _triples(spans):
    return [(span.start_char, span.end_char, span.label_) for span in spans]


@pytest.fixture(scope="module")
def nlp(pipeline_path, key_files):
    nlp = spacy.blank("en")
    nlp.add_pipe("deidpool", config={"pipeline": str(pipeline_path), "provider_key": str(key_files.provider.public)})
    return nlp


def test_the_factory_is_registered_by_entry_point():
    [entry] = [e for e in entry_points(group="spacy_factories") if e.name == "deidpool"]
    assert entry.value == "deidpool.client.integrations.spacy_component:make_deidpool_component"


def test_doc_gets_the_pipeline_spans_expanded_to_tokens(nlp, pipeline, embeddings):
    doc = nlp(NOTE)
    [spans] = PhiFinder(pipeline, embeddings).spans([NOTE])
    expected = [(doc.char_span(s.start, s.end, alignment_mode="expand"), s.type) for s in spans]
    assert _triples(doc.spans["deidpool"]) == [(span.start_char, span.end_char, label) for span, label in expected]
    assert set(_triples(doc.ents)) <= set(_triples(doc.spans["deidpool"]))
    marked = {i for s in spans for i in range(s.start, s.end)}
    assert marked <= {i for s in doc.spans["deidpool"] for i in range(s.start_char, s.end_char)}
    date = NOTE.index("03/14/2021")
    assert any(s.start_char <= date and s.end_char >= date + 10 for s in doc.spans["deidpool"])


def test_pipe_in_batches_gives_what_single_calls_give(nlp):
    texts = [NOTE, "", "Seen 2067 by Dr. Roe.", NOTE[:40]]
    piped, single = list(nlp.pipe(texts, batch_size=3)), [nlp(text) for text in texts]
    assert [_triples(doc.spans["deidpool"]) for doc in piped] == [_triples(doc.spans["deidpool"]) for doc in single]
    assert len(piped[1].spans["deidpool"]) == 0


def _component(spans, **options):
    finder = SimpleNamespace(spans=lambda texts: iter([tuple(spans) for _ in texts]))
    return DeidpoolComponent(finder, **options)


TEXT = "Pt MRN:123456 is 25yo, seen by Dr. Roe."
SPANS = [Span(7, 13, "MEDICALRECORD", "123456"), Span(17, 19, "AGE", "25"), Span(19, 21, "OTHER", "yo"),
         Span(35, 38, "HCPName", "Roe")]


def test_spans_expand_to_tokens_and_overlapping_ones_stay_in_the_group():
    doc = _component(SPANS)(spacy.blank("en")(TEXT))
    assert [(s.text, s.label_) for s in doc.spans["deidpool"]] == [
        ("MRN:123456", "MEDICALRECORD"), ("25yo", "AGE"), ("25yo", "OTHER"), ("Roe", "DOCTOR")]
    assert [(e.text, e.label_) for e in doc.ents] == [("MRN:123456", "MEDICALRECORD"), ("25yo", "AGE"),
                                                       ("Roe", "DOCTOR")]
    by_category = _component(SPANS, label="category", spans_key="phi")(spacy.blank("en")(TEXT))
    assert [s.label_ for s in by_category.spans["phi"]] == ["ID", "AGE", "OTHER", "NAME"]


def test_entities_already_set_are_kept():
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "PERSON", "pattern": "Dr. Roe"}])
    doc = _component(SPANS)(nlp(TEXT))
    assert [(e.text, e.label_) for e in doc.ents] == [("Dr. Roe", "PERSON")]
    assert len(doc.spans["deidpool"]) == 4
    doc = _component(SPANS[:1])(nlp(TEXT))
    assert [(e.text, e.label_) for e in doc.ents] == [("MRN:123456", "MEDICALRECORD"), ("Dr. Roe", "PERSON")]


def test_bad_configuration_is_refused(pipeline_path, key_files, tmp_path):
    from deidpool.representer import keys

    config = {"pipeline": str(pipeline_path), "provider_key": str(key_files.provider.public)}
    with pytest.raises(ValueError, match="label must be one of type, category"):
        spacy.blank("en").add_pipe("deidpool", config={**config, "label": "colour"})
    with pytest.raises(BundleError, match="signature does not verify"):
        spacy.blank("en").add_pipe("deidpool", config={**config, "provider_key": str(
            keys.create_provider_keys(tmp_path).public)})
    with pytest.raises(Exception, match="provider_key"):
        spacy.blank("en").add_pipe("deidpool", config={"pipeline": str(pipeline_path)})
