from hypothesis import given
from hypothesis import strategies as st

from deidpool.corpus.tokenize import tokenize


def texts(tokens):
    return [t.text for t in tokens]


def test_splits_digits_from_letters_and_every_punctuation_mark():
    assert texts(tokenize("25yo")) == ["25", "yo"]
    assert texts(tokenize("09/14/2067CPT")) == ["09", "/", "14", "/", "2067", "CPT"]
    assert texts(tokenize("Dr. O'Neil, p.o.")) == ["Dr", ".", "O", "'", "Neil", ",", "p", ".", "o", "."]


def test_keeps_non_ascii_letters_together():
    assert texts(tokenize("Cuéllar nº 3")) == ["Cuéllar", "nº", "3"]


def test_breaks_cut_tokens_at_given_offsets_only():
    text = "JSmithABC x"
    assert texts(tokenize(text, breaks=[1, 6])) == ["J", "Smith", "ABC", "x"]
    assert texts(tokenize(text, breaks=[0, 9, 11])) == ["JSmithABC", "x"]


def test_start_and_end_restrict_the_range_keeping_absolute_offsets():
    tokens = tokenize("aa bb cc", start=3, end=5)
    assert tokens == [("bb", 3, 5)]


@given(st.text(), st.sets(st.integers(0, 60)))
def test_tokens_are_exact_ordered_slices_covering_all_non_space(text, breaks):
    tokens = tokenize(text, breaks=breaks)
    assert all(text[t.start:t.end] == t.text for t in tokens)
    assert all(a.end <= b.start for a, b in zip(tokens, tokens[1:]))
    assert "".join(t.text for t in tokens) == "".join(text.split())
    for cut in breaks:
        assert not any(t.start < cut < t.end for t in tokens)
