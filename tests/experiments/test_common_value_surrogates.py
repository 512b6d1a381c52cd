"""experiments/common_value_surrogates.py on hand-made notes: which values are common, and the
mixed pool's weights."""

from collections import Counter

import pytest

import common_value_surrogates as common
from deidpool.corpus import Document, Span


def note(number: int, city: str) -> Document:
    text = f"Vive en {city} desde hace 3 años."
    start = text.index(city)
    return Document(f"d{number}", text, (Span(start, start + len(city), "TERRITORIO", city),))


def test_values_of_enough_documents_are_common_and_weighted_by_their_spans(monkeypatch):
    monkeypatch.setattr(common, "MIN_DOCUMENTS", 3)
    notes = [note(i, "Madrid") for i in range(4)] + [note(4, "Toledo"), note(5, "Ciudad Real")]
    found = common.common_values(notes, "es")
    assert found == {"CITY": ({("Madrid",): 4}, 6)}
    pool = common.mixed_pool((("Soria",), ("Lugo",)), *found["CITY"])
    shares = Counter(pool)
    assert shares[("Soria",)] == 1 and shares[("Madrid",)] == 4  # 4 of 6 spans: Madrid is drawn 4 times in 6
    with pytest.raises(ValueError, match="no room"):
        common.mixed_pool((("Soria",),), {("Madrid",): 2}, 2)
