
import pytest
from hypothesis import given
from hypothesis import strategies as st

from deidpool.corpus import Span
from deidpool.corpus.sentences import split_sentences
from deidpool.corpus.tokenize import tokenize


def split(text, keep=(), max_tokens=200):
    """The sentences as the text they cover."""
    sentences = split_sentences(text, tokenize(text), keep, max_tokens)
    return [text[s[0].start:s[-1].end] for s in sentences]


def test_ordinary_sentence_ends():
    assert split("Pt stable. BP 120/80! Any pain? No") == ["Pt stable.", "BP 120/80!", "Any pain?", "No"]
    assert split("Afebrile. 2 units given.") == ["Afebrile.", "2 units given."]


def test_lower_case_after_a_period_starts_a_sentence():
    assert split("abd soft. no stool today.") == ["abd soft.", "no stool today."]


def test_no_break_without_space_or_before_punctuation():
    assert split("temp 37.5 and 2.5 mg") == ["temp 37.5 and 2.5 mg"]
    assert split("given 5 mg. , then") == ["given 5 mg. , then"]


def test_semicolon_does_not_end_a_sentence():
    assert split("BUN 50; CR 2.1; K 3.9") == ["BUN 50; CR 2.1; K 3.9"]


def test_detached_question_mark_means_questionable():
    assert split("HR 90, ? on beta blocker") == ["HR 90, ? on beta blocker"]


@pytest.mark.parametrize("abbreviation", [
    "Dr.", "Mr.", "Mrs.", "Ms.", "St.", "p.o.", "b.i.d.", "t.i.d.", "q.i.d.", "q.d.", "q.h.s.",
    "p.r.n.", "i.v.", "e.g.", "i.e.", "vs.", "approx.", "no.", "pt.", "etc.", "DR.", "P.O."])
def test_no_break_after_abbreviations(abbreviation):
    text = f"Seen {abbreviation} Smith today."
    assert split(text) == [text]


def test_no_break_after_initials_but_after_attached_single_letters():
    assert split("Seen by J. Smith today.") == ["Seen by J. Smith today."]
    assert split("Done via U/S. Coffee grounds.") == ["Done via U/S.", "Coffee grounds."]
    assert split("SATS MID 90'S. BP OK.") == ["SATS MID 90'S.", "BP OK."]


def test_period_before_a_line_break_ends_a_sentence_even_after_an_initial():
    assert split("Sexo: H.\nFecha de ingreso: hoy") == ["Sexo: H.", "Fecha de ingreso: hoy"]


def test_blank_lines_end_a_sentence():
    assert split("no stool\n\nGU foley") == ["no stool", "GU foley"]
    assert split("no stool \n \t \n\n GU foley") == ["no stool", "GU foley"]
    assert split("IPS INCREASED TO\n10 OVERNOC") == ["IPS INCREASED TO\n10 OVERNOC"]


@pytest.mark.parametrize("marker", ["-", "*", "•", "·", "o", "1.", "12)", "(3)", "a)", "(b)"])
def test_list_items_start_a_sentence(marker):
    assert split(f"Plan:\n{marker} lasix\n{marker} wean vent") == ["Plan:", f"{marker} lasix", f"{marker} wean vent"]


def test_period_of_a_list_marker_ends_no_sentence():
    assert split("1. lasix") == ["1. lasix"]
    assert split("x\n2. Wean") == ["x", "2. Wean"]


def test_line_starts_that_are_no_list_items():
    assert split("dose\n1.5 mg daily") == ["dose\n1.5 mg daily"]
    assert split("seen\n2067. Next") == ["seen\n2067.", "Next"]
    assert split("left\nA. fib") == ["left\nA. fib"]


@pytest.mark.parametrize("header", ["GI:", "cv-", "A/P:", "gi/gu -", "HEME="])
def test_section_headers_at_line_start_start_a_sentence(header):
    assert split(f"no stool\n{header} foley") == ["no stool", f"{header} foley"]


def test_separator_runs_end_a_sentence_and_are_dropped():
    assert split("lasix---lipitor\n=====\nasa ____ x -- y") == ["lasix", "lipitor", "asa", "x -- y"]


def test_separator_run_inside_a_kept_span_is_kept():
    text = "call 555---1234 now"
    span = Span(5, 15, "Phone", "555---1234")
    assert split(text, [span]) == [text]


def test_keep_together_spans_are_never_cut():
    text = "Seen by Smith. Jones today.\n\nMore"
    assert split(text) == ["Seen by Smith.", "Jones today.", "More"]
    span = Span(8, 19, "HCPName", "Smith. Jones")
    assert split(text, [span]) == ["Seen by Smith. Jones today.", "More"]


def test_long_sentences_are_capped_preferring_semicolons():
    text = "; ".join(f"ITEM {i} OK" for i in range(60))  # 4 tokens per item
    pieces = split(text, max_tokens=50)
    assert all(len(tokenize(p)) <= 50 for p in pieces)
    assert all(p.endswith(";") for p in pieces[:-1])
    assert " ".join(pieces) == text


def test_capping_does_not_cut_a_span():
    text = " ".join(["w"] * 30)
    span = Span(16, 24, "Other", text[16:24])  # tokens 8..11
    sentences = split_sentences(text, tokenize(text), [span], max_tokens=10)
    assert [len(s) for s in sentences] == [8, 10, 10, 2]


def test_empty_and_token_slices():
    assert split_sentences("", []) == []
    text = "Ignore. Keep this. And this."
    tokens = tokenize(text, start=8)
    assert [[t.text for t in s] for s in split_sentences(text, tokens)] == [["Keep", "this", "."], ["And", "this", "."]]


@given(st.lists(st.sampled_from(["Dr.", "J.", "pt", "2067", ".", "?", ";", "-", "---", "\n", "\n\n", "1.", "GI:", "o",
                                 " "]),
                max_size=40),
       st.integers(min_value=1, max_value=8))
def test_sentences_partition_the_non_separator_tokens_in_order(words, max_tokens):
    text = " ".join(words)
    tokens = tokenize(text)
    sentences = split_sentences(text, tokens, max_tokens=max_tokens)
    flat = [t for s in sentences for t in s]
    assert all(0 < len(s) <= max_tokens for s in sentences)
    assert flat == [t for t in tokens if t in flat]
    assert all(t in flat or t.text == "-" for t in tokens)


def test_physionet_corpus_splits_into_reasonable_sentences(physionet_dir):
    """Speed is measured by experiments/bench_corpus_speed.py, not asserted here."""
    text = (physionet_dir / "id.text").read_text()
    sentences = split_sentences(text, tokenize(text))
    assert len(sentences) > 30_000
    assert max(len(s) for s in sentences) <= 200
