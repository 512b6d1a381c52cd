"""experiments/surrogate_coverage.py on hand-made notes (nothing is trained): the shares of the
test notes' PHI words that the training spans and the surrogate pools contain."""

import pytest

import surrogate_coverage
from deidpool.corpus.document import Document, Span


def note(note_id: str, text: str, *phi: tuple[str, str]) -> Document:
    return Document(note_id, text, tuple(Span(text.index(p), text.index(p) + len(p), label, p) for p, label in phi))


def test_the_shares_count_test_words_seen_in_training_spans_and_in_the_pool():
    train = [note("t", "Vive en Madrid, España.", ("Madrid", "TERRITORIO"), ("España", "PAIS"))]
    test = [note("a", "Natural de Madrid y de Zzyzx, en España.", ("Madrid", "TERRITORIO"),
                 ("Zzyzx", "TERRITORIO"), ("España", "PAIS")),
            note("b", "Calle de la Princesa 3", ("Calle de la Princesa 3", "CALLE"))]
    rows = {row["type"]: row for row in surrogate_coverage.coverage_rows(
        surrogate_coverage.span_words(train, "es"), surrogate_coverage.span_words(test, "es"), "es")}
    city = rows["TERRITORIO"]
    assert (city["kind"], city["test_words"], city["in_training_spans"]) == ("CITY", 2, 0.5)
    assert city["in_surrogate_pool"] == pytest.approx(0.5)  # Madrid is a Faker es_ES city, Zzyzx none
    assert [t["word"] for t in city["top"]] == ["madrid", "zzyzx"] and city["top"][1]["draw_probability"] == 0.0
    assert 0 < city["top"][0]["draw_probability"] < 1
    # "de la" are kept function words of a street span; "calle" (a place word, drawn) and "princesa" count
    assert (rows["CALLE"]["test_words"], rows["CALLE"]["in_training_spans"]) == (2, 0.0)
    assert rows["PAIS"]["in_training_spans"] == 1.0


def test_the_page_states_the_records_date_commit_and_command_not_todays():
    row = {"type": "PAIS", "kind": "COUNTRY", "test_words": 2, "in_training_spans": 1.0, "in_surrogate_pool": 0.5,
           "top": [{"word": "españa", "test_share": 1.0, "draw_probability": None}]}
    run = {"command": "python experiments/surrogate_coverage.py --corpus meddocan", "commit": "abc1234",
           "date": "2020-01-02"}
    page = surrogate_coverage.table({"corpus": "meddocan", "rows": [row], "record": run})
    assert f"2020-01-02, commit abc1234. Command: `{run['command']}`." in page
    assert "| PAIS | COUNTRY | 2 | 1.000 | 0.500 | españa 1.000 / - |" in page
