"""The Presidio comparison's scoring (nothing is trained): every entity the engines can return
has an i2b2 2014 type, the deidpool recognizer's results keep their own label, and the table
shows each system's row."""

import pytest

pytest.importorskip("presidio_analyzer")

from presidio_analyzer import RecognizerRegistry, RecognizerResult  # noqa: E402

import presidio_comparison  # noqa: E402
from deidpool.client.integrations.presidio_recognizer import PRESIDIO_ENTITIES, BlankSpacyNlpEngine  # noqa: E402
from deidpool.corpus.categories import I2B2_TYPES  # noqa: E402
from deidpool.corpus.document import Document, Span  # noqa: E402
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY  # noqa: E402

TEXT = "Seen 8/23 by Dr Smith on O2."


def test_every_entity_the_engines_can_return_has_an_i2b2_type():
    engine = BlankSpacyNlpEngine()
    engine.load()
    registry = RecognizerRegistry()
    registry.load_predefined_recognizers(languages=["en"], nlp_engine=engine)
    entities = {entity for recognizer in registry.recognizers for entity in recognizer.supported_entities}
    assert entities | set(PRESIDIO_ENTITIES.values()) <= presidio_comparison.I2B2_TYPE_OF_ENTITY.keys()
    assert {type_ for type_, _ in presidio_comparison.I2B2_TYPE_OF_ENTITY.values()} <= set(I2B2_TYPES)


def test_deidpool_results_keep_their_label_and_the_others_get_their_entitys_type():
    note = Document("n1", TEXT)
    results = [RecognizerResult("PERSON", 16, 21, 0.85, recognition_metadata={"deidpool_label": "HCPName"}),
               RecognizerResult("DATE_TIME", 5, 9, 0.6), RecognizerResult("US_DRIVER_LICENSE", 25, 27, 0.3)]
    spans = presidio_comparison.as_document(note, results).spans
    assert [(s.source_type, s.text) for s in spans] == [("HCPName", "Smith"), ("DATE", "8/23"), ("LICENSE", "O2")]
    assert [s.type for s in presidio_comparison.as_document(note, results, entity_only=True).spans] == [
        "PATIENT", "DATE", "LICENSE"]
    with pytest.raises(KeyError, match="NEW_ENTITY"):
        presidio_comparison.as_document(note, [RecognizerResult("NEW_ENTITY", 0, 4, 0.5)])


def test_entity_precision_counts_official_tokens_against_any_gold_phi():
    gold = [Document("n1", TEXT, (Span(5, 9, "Date", "8/23"), Span(16, 21, "HCPName", "Smith")))]
    results = [[RecognizerResult("DATE_TIME", 5, 9, 0.6), RecognizerResult("US_DRIVER_LICENSE", 25, 27, 0.3)]]
    found = presidio_comparison.entity_precision(gold, results)
    assert found["DATE_TIME"] == {"results": 1, "token_precision": 1.0, "false_positives": []}  # PHI never shown
    assert found["US_DRIVER_LICENSE"] == {"results": 1, "token_precision": 0.0, "false_positives": ["O2"]}


def test_the_table_has_a_row_per_system_and_names_its_measures():
    scores = {f"{measure}_{part}": 0.5 for measure in presidio_comparison.SCORED_MEASURES
              for part in ("precision", "recall", "f1")}
    scores.update({f"{measure}_f1_interval": [0.4, 0.6] for measure in presidio_comparison.SCORED_MEASURES})
    row = {"recognizers": ["DateRecognizer"], "warm_up_seconds": 0.1, "seconds": 1.0, "notes_per_second": 12.5,
           "scores": scores, "scores_by_entity_name": scores, "results_by_entity": {"DATE_TIME": 2},
           "entities": {"DATE_TIME": {"results": 2, "token_precision": 0.5, "false_positives": ["12/40", "a|b"]}}}
    result = {"test_notes": 2, "date": "d", "commit": "c", "command": "x", "run": "r", "presidio_analyzer": "2",
              "spacy": "3", "embeddings_seconds": 0.2, "load_average": [1.0, 2.0],
              "deidpool_batched_notes_per_second": 99.0,
              "systems": {name: row for name in (presidio_comparison.DEFAULT, presidio_comparison.DEIDPOOL,
                                                 presidio_comparison.BOTH)}}
    text = presidio_comparison.table(result)
    assert COLUMN_TITLES[PRIMARY] in text and "[0.4000, 0.6000]" in text and "| 12.5 |" in text
    assert f"| {presidio_comparison.BOTH} | 0.5000 |" in text
    assert "| DATE_TIME | DATE | yes | 2 | 2 | 2 |" in text and "`a\\|b`" in text
