"""The pattern-layer experiment's scoring and table, on hand-made notes (nothing is trained):
the paired bootstrap of the F1 gain, per-category scores, and the table's columns."""

import pytest

import pattern_layer
from deidpool.corpus.document import Document, Span
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, Counts, evaluate_corpus

TEXT = "Seen 8/23 by Dr Smith, call 204-943-1045."


def _doc(*spans):
    return Document("n1", TEXT, tuple(Span(s, e, label, TEXT[s:e]) for s, e, label in spans))


GOLD = [_doc((5, 9, "Date"), (16, 21, "HCPName"), (28, 40, "Phone"))]


def test_f1_gain_is_the_difference_of_the_micro_f1s_with_a_paired_interval():
    base, other = [Counts(1, 1, 1), Counts(0, 0, 2)], [Counts(1, 0, 0), Counts(2, 0, 0)]
    gain = pattern_layer.f1_gain(base, other, resamples=200)
    assert gain["gain"] == pytest.approx(1.0 - 2 / 6)
    low, high = gain["interval"]
    assert low <= high and 0 < high <= 1
    same = pattern_layer.f1_gain(base, base, resamples=50)
    assert same == {"gain": 0.0, "interval": [0.0, 0.0]}


def test_scores_restrict_each_category_on_both_sides_and_report_found_recall():
    predicted = [_doc((5, 9, "DATE"), (28, 40, "Date"))]  # the phone found, but labelled a date
    result = pattern_layer.scores(GOLD, predicted)
    assert result["overall"][PRIMARY] == evaluate_corpus(GOLD, predicted)["token_official_hipaa"]["f1"]
    contact = result["per_category"]["CONTACT"]
    assert (contact["tp"], contact["fn"], contact["found_recall"]) == (0, 3, 1.0)  # 204, 943, 1045
    date = result["per_category"]["DATE"]
    assert (date["tp"], date["fp"]) == (2, 3)  # 8, 23 found; 204, 943, 1045 are no dates
    assert "NAME" not in result["per_category"]  # DOCTOR is not an official HIPAA type


def test_the_table_names_its_measures_and_shows_the_gain():
    row = pattern_layer.scores(GOLD, [_doc((5, 9, "DATE"))])
    result = {"test_notes": 1, "train_notes": 2, "date": "d", "commit": "c", "run": "r", "command": "x",
              "default_patterns": ["date_month_day"], "systems": {"patterns alone": row, "tagger": row},
              "gains": {"tagger": {"gain": 0.1, "interval": [0.05, 0.15]}},
              "patterns_on_training": [{"pattern": "time_of_day", "label": "DATE", "default": False, "spans": 3,
                                        "precision": 0.0, "token_precision": 0.0, "gold_spans": 0, "recall": None}],
              "patterns_alone_on_training": row}
    text = pattern_layer.table(result)
    assert COLUMN_TITLES[PRIMARY] in text and "+0.1000" in text and "[0.0500, 0.1500]" in text
    assert "| time_of_day (off) | DATE | 3 | 0.0000 | 0.0000 | 0 | n/a |" in text
