import pytest
from hypothesis import given
from hypothesis import strategies as st

from deidpool.corpus import Span
from deidpool.corpus.tagging import decode, encode, tag_vocabulary
from deidpool.corpus.tokenize import tokenize

TEXT = "John Smith saw Dr. Jones on 09/14/2067."
TOKENS = tokenize(TEXT)  # John Smith saw Dr . Jones on 09 / 14 / 2067 .
SPANS = (Span(0, 10, "PTName", "John Smith"), Span(19, 24, "HCPName", "Jones"),
         Span(28, 38, "Date", "09/14/2067"))


def test_encode_bio():
    assert encode(TOKENS, SPANS) == ["B-PTName", "I-PTName", "O", "O", "O", "B-HCPName", "O",
                                     "B-Date", "I-Date", "I-Date", "I-Date", "I-Date", "O"]


def test_encode_bioes_with_category_labels():
    tags = encode(TOKENS, SPANS, "BIOES", label=lambda span: span.category)
    assert tags == ["B-NAME", "E-NAME", "O", "O", "O", "S-NAME", "O",
                    "B-DATE", "I-DATE", "I-DATE", "I-DATE", "E-DATE", "O"]


def test_encode_marks_partly_overlapped_tokens_and_ignores_spans_elsewhere():
    tokens = tokenize("25yo male")
    assert encode(tokens, [Span(0, 1, "Age", "2"), Span(50, 60, "Age", "x" * 10)]) == ["B-Age", "O", "O"]


def test_decode_round_trip_and_repairs():
    assert decode(TOKENS, encode(TOKENS, SPANS)) == [(s.start, s.end, s.source_type) for s in SPANS]
    tokens = tokenize("a b c d e")
    assert decode(tokens, ["I-X", "I-X", "I-Y", "B-Y", "I-X"]) == [(0, 3, "X"), (4, 5, "Y"), (6, 7, "Y"), (8, 9, "X")]
    assert decode(tokens, ["E-X", "I-X", "E-X", "E-X", "S-X"], "BIOES") == [(0, 1, "X"), (2, 5, "X"), (6, 7, "X"),
                                                                            (8, 9, "X")]
    assert decode(tokens, ["B-LOCATION-OTHER", "O", "O", "O", "O"]) == [(0, 1, "LOCATION-OTHER")]


@pytest.mark.parametrize("tags, scheme", [(["S-X"], "BIO"), (["X"], "BIO"), (["IE-X"], "BIOES"), (["B-"], "BIO")])
def test_decode_rejects_tags_outside_the_scheme(tags, scheme):
    with pytest.raises(ValueError):
        decode(tokenize("a"), tags, scheme)


def test_unknown_scheme_and_length_mismatch():
    with pytest.raises(ValueError, match="unknown tag scheme"):
        encode(TOKENS, SPANS, "IOB2")
    with pytest.raises(ValueError):
        decode(TOKENS, ["O"])


def test_tag_vocabulary_is_stable_with_o_first():
    assert tag_vocabulary(["Date", "Age", "Date"]) == ["O", "B-Age", "I-Age", "B-Date", "I-Date"]
    assert tag_vocabulary({"X"}, "BIOES") == ["O", "B-X", "I-X", "E-X", "S-X"]


@st.composite
def aligned_spans(draw):
    """Tokens "t0 t1 ..." and non-overlapping spans over whole tokens, adjacent ones included."""
    n = draw(st.integers(min_value=0, max_value=30))
    tokens = tokenize(" ".join(f"t{i}" for i in range(n)))
    cuts = sorted(draw(st.sets(st.integers(min_value=0, max_value=n), max_size=n + 1)))
    spans = []
    for a, b in zip(cuts[::2], cuts[1::2]):
        label = draw(st.sampled_from(["PTName", "Date", "LOCATION-OTHER"]))
        spans.append((tokens[a].start, tokens[b - 1].end, label))
    return tokens, [Span(s, e, label, "") for s, e, label in spans]


@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
@given(aligned_spans())
def test_decode_inverts_encode(scheme, case):
    tokens, spans = case
    assert decode(tokens, encode(tokens, spans, scheme), scheme) == [(s.start, s.end, s.source_type) for s in spans]
