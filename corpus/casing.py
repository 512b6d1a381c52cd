"""The 7-way casing feature of Reimers & Gurevych (2017) that the tagger receives beside the
representation (docs/method.md, Inputs). There is no padding class: padding is masked later.
Tokens of `deidpool.corpus.tokenize` are all letters, all digits or one symbol, so mainly_numeric and
contains_digit occur only for text from elsewhere; they stay for the reference's 7 classes."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import numpy as np

from deidpool.corpus.tokenize import Token

CASING = ("numeric", "mainly_numeric", "all_lower", "all_upper", "initial_upper", "contains_digit", "other")


@lru_cache(maxsize=1 << 16)
def casing_id(text: str) -> int:
    """Index into CASING, tested in the reference order (so "A1", half digits, is all_upper)."""
    digits = sum(char.isdigit() for char in text)
    if text.isdigit():
        name = "numeric"
    elif 2 * digits > len(text):
        name = "mainly_numeric"
    elif text.islower():
        name = "all_lower"
    elif text.isupper():
        name = "all_upper"
    elif text[:1].isupper():
        name = "initial_upper"
    elif digits:
        name = "contains_digit"
    else:
        name = "other"
    return CASING.index(name)


def casing_ids(tokens: Iterable[Token]) -> np.ndarray:
    return np.fromiter((casing_id(token.text) for token in tokens), dtype=np.int8)


def one_hot(ids: np.ndarray) -> np.ndarray:
    """(..., len(CASING)) float32 one-hot rows for an integer array of casing ids."""
    return np.eye(len(CASING), dtype=np.float32)[ids]
