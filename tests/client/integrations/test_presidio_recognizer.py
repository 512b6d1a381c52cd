"""The Presidio recognizer: a signature-checked pipeline inside Presidio's own AnalyzerEngine
(on a blank spaCy NLP engine, no model download) and AnonymizerEngine, results mapped to
Presidio entity names at the pipeline's offsets; the mapping table complete and documented."""

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("presidio_analyzer", reason="the Presidio integration needs deidpool[presidio] "
                                                "(pip install -e '.[test]' installs it)")
pytest.importorskip("presidio_anonymizer", reason="the Presidio integration needs deidpool[presidio]")

from presidio_analyzer import AnalyzerEngine, RecognizerRegistry  # noqa: E402
from presidio_anonymizer import AnonymizerEngine  # noqa: E402

from deidpool.client.deidentify import PhiFinder  # noqa: E402
from deidpool.client.integrations.presidio_recognizer import PRESIDIO_ENTITIES, BlankSpacyNlpEngine, DeidpoolRecognizer  # noqa: E402
from deidpool.corpus.categories import I2B2_TYPES  # noqa: E402
from deidpool.corpus.document import Span  # noqa: E402
from deidpool.representer import keys  # noqa: E402
from deidpool.representer.bundle import BundleError  # noqa: E402

NOTE = "Mr. John Smith was seen on 03/14/2021. Call 617-555-0199 or mail jsmith@example.org, age 93."
DOCS = Path(__file__).resolve().parents[3] / "docs" / "integrations.md"


def _analyzer(recognizer) -> AnalyzerEngine:
    """Presidio's engine as a user builds it: our recognizer in a registry, the blank NLP engine."""
    return AnalyzerEngine(registry=RecognizerRegistry(recognizers=[recognizer]), nlp_engine=BlankSpacyNlpEngine())


@pytest.fixture(scope="module")
def recognizer(pipeline_path, key_files):
    return DeidpoolRecognizer.open(pipeline_path, key_files.provider.public)


def test_analyzer_results_are_the_pipeline_spans_under_presidio_names(recognizer, pipeline, embeddings):
    results = _analyzer(recognizer).analyze(text=NOTE, language="en")
    [spans] = PhiFinder(pipeline, embeddings).spans([NOTE])
    assert spans, "the pattern layer alone finds the date, phone number and e-mail address"
    expected = sorted((s.start, s.end, PRESIDIO_ENTITIES[s.type], s.source_type) for s in spans)
    assert sorted((r.start, r.end, r.entity_type, r.recognition_metadata["deidpool_label"])
                  for r in results) == expected
    date = NOTE.index("03/14/2021")  # the pattern layer's; merged spans may grow and take another label
    assert any(r.start <= date and r.end >= date + 10 for r in results)
    assert {r.score for r in results} == {0.85}
    assert {r.recognition_metadata["recognizer_name"] for r in results} == {"DeidpoolRecognizer"}


def test_anonymizer_replaces_every_result_by_its_entity(recognizer):
    results = _analyzer(recognizer).analyze(text=NOTE, language="en")
    anonymized = AnonymizerEngine().anonymize(text=NOTE, analyzer_results=results).text
    merged = []  # Presidio joins results of one entity that only spaces separate
    for result in sorted(results, key=lambda r: r.start):
        if merged and merged[-1][2] == result.entity_type and re.fullmatch(" +", NOTE[merged[-1][1]:result.start]):
            merged[-1] = (merged[-1][0], result.end, result.entity_type)
        else:
            merged.append((result.start, result.end, result.entity_type))
    expected = NOTE
    for start, end, entity in reversed(merged):
        expected = expected[:start] + f"<{entity}>" + expected[end:]
    assert anonymized == expected and "03/14/2021" not in anonymized and "jsmith@example.org" not in anonymized


def _stub_finder(spans, labels):
    """A finder with fixed spans, for exact entity names and offsets independent of the weights."""
    return SimpleNamespace(labels=frozenset(labels), pipeline=SimpleNamespace(representer_id="rep-stub"),
                           spans=lambda texts: iter([tuple(spans) for _ in texts]))


def test_labels_of_any_corpus_map_through_their_i2b2_type():
    text = "Pt Jane Roe (MRN 123456) seen 2/3/2090 at Mercy."
    spans = [Span(3, 11, "PTName", "Jane Roe"), Span(17, 23, "MEDICALRECORD", "123456"),
             Span(30, 38, "DATE", "2/3/2090"), Span(42, 47, "HOSPITAL", "Mercy")]
    recognizer = DeidpoolRecognizer(_stub_finder(spans, ["PTName", "MEDICALRECORD", "DATE", "HOSPITAL"]))
    assert recognizer.supported_entities == ["DATE_TIME", "ID", "LOCATION", "PERSON"]
    analyzer = _analyzer(recognizer)
    results = sorted(analyzer.analyze(text=text, language="en"), key=lambda r: r.start)
    assert [(r.entity_type, text[r.start:r.end]) for r in results] == [
        ("PERSON", "Jane Roe"), ("ID", "123456"), ("DATE_TIME", "2/3/2090"), ("LOCATION", "Mercy")]
    assert AnonymizerEngine().anonymize(text=text, analyzer_results=results).text == \
        "Pt <PERSON> (MRN <ID>) seen <DATE_TIME> at <LOCATION>."
    only_people = analyzer.analyze(text=text, language="en", entities=["PERSON"])
    assert [(r.start, r.end) for r in only_people] == [(3, 11)]
    assert analyzer.analyze(text="  ", language="en") == []


def test_bad_configuration_is_refused(pipeline_path, key_files, tmp_path):
    with pytest.raises(ValueError, match="no Presidio entity for the i2b2 2014 types PATIENT"):
        DeidpoolRecognizer(_stub_finder([], ["PTName"]), entity_names={})
    with pytest.raises(ValueError, match="score must be in"):
        DeidpoolRecognizer(_stub_finder([], []), score=1.5)
    with pytest.raises(BundleError, match="signature does not verify"):
        DeidpoolRecognizer.open(pipeline_path, keys.create_provider_keys(tmp_path).public)


def test_every_i2b2_type_has_a_presidio_entity_and_the_docs_table_matches():
    assert set(PRESIDIO_ENTITIES) == set(I2B2_TYPES)
    rows = re.findall(r"^\| `([A-Z_]+)` \| ([A-Z0-9, -]+) \|", DOCS.read_text(), re.MULTILINE)
    documented = {type_: entity for entity, types in rows for type_ in types.split(", ")}
    assert documented == PRESIDIO_ENTITIES
