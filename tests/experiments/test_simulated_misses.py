"""The simulated-misses benchmark on hand-made notes: seeded span dropping, the safety net's
catches and false flags counted as the export flags them, and the report over seeds."""

import pytest

import simulated_misses
from deidpool.client.patterns import patterns_for
from deidpool.client.safety_net import SafetyNet
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.document import Document, Span

TEXT = "Seen on 8/23/2012 by Dr Smith, moved from Boston. Called Dr Jones."
LABELS = [phi.source_type for phi in PHI_TYPES.values() if phi.corpus == "physionet"]


def _span(text: str, label: str) -> Span:
    start = TEXT.index(text)
    return Span(start, start + len(text), label, text)


NOTE = Document("n1", TEXT, (_span("8/23/2012", "Date"), _span("Smith", "HCPName"), _span("Boston", "Location")))


def _many(notes: int, spans: int) -> list[Document]:
    text = " ".join(f"w{i}" for i in range(spans))
    starts = [text.index(f"w{i}") for i in range(spans)]
    return [Document(f"d{n}", text, tuple(Span(s, s + 2, "Date", text[s:s + 2]) for s in starts)) for n in range(notes)]


def test_dropping_is_seeded_whole_spans_at_the_rate():
    documents = _many(2000, 5)  # 10,000 spans
    first = simulated_misses.drop_spans(documents, 0.05, seed=0)
    assert first == simulated_misses.drop_spans(documents, 0.05, seed=0)
    assert first != simulated_misses.drop_spans(documents, 0.05, seed=1)
    dropped = sum(len(spans) for _, spans in first)
    assert 400 <= dropped <= 600
    for (kept, spans), original in zip(first, documents):
        assert sorted(kept.spans + spans, key=lambda s: s.start) == list(original.spans)
        assert kept.text == original.text
    assert all(not spans for _, spans in simulated_misses.drop_spans(documents[:50], 0.0, seed=0))
    assert all(not kept.spans for kept, _ in simulated_misses.drop_spans(documents[:50], 1.0, seed=0))


def _simulate(rate: float) -> dict:
    found = [spans for _, spans in SafetyNet(patterns_for("en")).found([NOTE])]
    runs = simulated_misses.simulate(simulated_misses.drop_spans([NOTE], rate, seed=0), ["all"], found, LABELS,
                                     ["patterns"])
    return runs["all"]


def test_a_dropped_date_and_cue_name_are_caught_a_place_is_missed_and_false_flags_count_against_full_gold():
    counts = _simulate(1.0)  # every span dropped
    assert counts["missed"] == {"DATE": 3, "NAME": 1, "LOCATION": 1}  # 8, 23, 2012; Smith; Boston
    assert counts["caught"] == {"DATE": 3, "NAME": 1, "LOCATION": 0}
    assert counts["false_flags"] == 1  # Jones: after "Dr", but no gold span
    assert counts["flagged"] == 5
    kept = _simulate(0.0)  # nothing dropped: nothing missed, the same false flag
    assert (kept["missed"], kept["caught"], kept["false_flags"], kept["flagged"]) == ({}, {}, 1, 1)


def test_summary_and_table_report_reduction_and_false_flags_over_seeds():
    runs = [{"notes": 500, "missed": {"DATE": 8, "NAME": 2}, "caught": {"DATE": 8, "NAME": 0}, "false_flags": 5,
             "flagged": 13},
            {"notes": 500, "missed": {"DATE": 4}, "caught": {"DATE": 2}, "false_flags": 1, "flagged": 3},
            {"notes": 500, "missed": {}, "caught": {}, "false_flags": 0, "flagged": 0}]
    result = simulated_misses.summary(runs)
    assert result["missed"] == [10, 4, 0] and result["caught"] == [8, 2, 0]
    assert result["reduction"] == pytest.approx([0.8, 0.5])  # a seed that missed nothing has no reduction
    assert result["false_flags_per_1000_notes"] == pytest.approx([10.0, 2.0, 0.0])
    assert result["per_category"]["NAME"] == {"missed": [2, 0, 0], "reduction": [0.0]}
    assert result["per_category"]["DATE"]["reduction"] == pytest.approx([1.0, 0.5])
    merged = simulated_misses.merge(runs[:2])
    assert merged["missed"] == {"DATE": 12, "NAME": 2} and merged["notes"] == 1000
    assert (merged["false_flags"], merged["flagged"]) == (6, 16)
    row = {"corpus": "physionet", "part": "all", "notes": 500, "finders": "patterns", "rate": 0.05,
           "summary": result}
    text = simulated_misses.table({"date": "today", "commit": "abc", "command": "cmd", "seeds": [0, 1, 2],
                                   "finders": {"physionet patterns": "patterns"}, "rows": [row]})
    assert ("| physionet | all | 500 | patterns | 5% | 4.7 ± 5.0 | 3.3 ± 4.2 | 0.650 ± 0.212 | 2.0 ± 2.6 | "
            "4.0 ± 5.3 |") in text
    assert "| DATE | NAME |" in text and "0.00 (0.7 ± 1.2)" in text


def test_the_memory_of_the_labels_left_catches_a_string_dropped_where_other_notes_keep_it():
    other = Document("o", "Dr Smith saw him.", (Span(3, 8, "HCPName", "Smith"),))
    kept, dropped = simulated_misses.drop_spans([NOTE], 1.0, seed=0)[0]
    assert [span.text for span in dropped] == ["8/23/2012", "Smith", "Boston"]
    found = simulated_misses.with_memory([kept, other], [(), ()])
    # "Smith" labeled in 1 of its 2 occurrences: remembered by the net; "Boston" has no label left
    assert [(span.text, span.source_type) for span in found[0]] == [("Smith", "HCPName")]
    unlabeled = Document("u", "Smith again.", ())
    assert simulated_misses.with_memory([kept, other, unlabeled], [()] * 3)[0] == ()  # 1 of 3: below half
