import numpy as np
import pytest

from deidpool.corpus.casing import CASING, casing_id, casing_ids, one_hot
from deidpool.corpus.tokenize import tokenize


@pytest.mark.parametrize("text, expected", [
    ("2067", "numeric"), ("0", "numeric"),
    ("12a", "mainly_numeric"), ("1-2", "mainly_numeric"),
    ("yo", "all_lower"), ("x", "all_lower"), ("año", "all_lower"),
    ("CPT", "all_upper"), ("J", "all_upper"), ("ÁNGEL", "all_upper"),
    ("A1", "all_upper"),  # digits are exactly half: not mainly numeric
    ("Smith", "initial_upper"), ("McDonald", "initial_upper"), ("Ávila", "initial_upper"),
    ("1-/", "contains_digit"),
    (".", "other"), ("/", "other"), ("", "other"), ("-", "other"),
])
def test_casing_classes(text, expected):
    assert CASING[casing_id(text)] == expected


def test_seven_classes_without_padding():
    assert len(CASING) == 7 and "padding" not in CASING


def test_casing_ids_and_one_hot():
    ids = casing_ids(tokenize("Pt 25yo, BP"))  # Pt 25 yo , BP
    assert ids.dtype == np.int8
    assert [CASING[i] for i in ids] == ["initial_upper", "numeric", "all_lower", "other", "all_upper"]
    rows = one_hot(ids)
    assert rows.shape == (5, 7) and rows.dtype == np.float32
    assert (rows.argmax(axis=1) == ids).all() and (rows.sum(axis=1) == 1).all()
    assert casing_ids([]).shape == (0,)
    assert one_hot(np.zeros((2, 3), dtype=np.int8)).shape == (2, 3, 7)
