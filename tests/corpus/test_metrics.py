import json

import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.corpus import CorpusError, Document, Span
from deidpool.corpus.errors import CorpusWarning
from deidpool.corpus.formats import write_corpus
from deidpool.corpus.metrics import (
    COLUMN_TITLES,
    PRIMARY,
    Counts,
    document_counts,
    evaluate_corpus,
    f1_difference_interval,
    f1_interval,
    format_report,
    score_row,
)

# Project tokens: John Smith saw Dr . Jones on 09 / 14 / 2067 .
# Official i2b2 2014 tokens of the gold spans: John Smith | Jones | 09 14 2067
TEXT = "John Smith saw Dr. Jones on 09/14/2067."
GOLD = (Span(0, 10, "PATIENT", "John Smith"), Span(19, 24, "DOCTOR", "Jones"),
        Span(28, 38, "DATE", "09/14/2067"))
PRED = (Span(0, 4, "PATIENT", "John"), Span(11, 14, "AGE", "saw"),
        Span(15, 24, "DOCTOR", "Dr. Jones"), Span(28, 38, "DATE", "09/14/2067"))


MEASURES = ("token_official_hipaa", "token_official_all", "token_hipaa", "token_all", "entity_strict",
            "entity_relaxed")


def doc(spans, doc_id="note-1", text=TEXT):
    return Document(doc_id, text, tuple(spans))


def counts(scores):
    return scores["tp"], scores["fp"], scores["fn"]


@pytest.fixture(scope="module")
def result():
    return evaluate_corpus([doc(GOLD)], [doc(PRED)])


def test_token_all_counts_phi_tokens_of_every_category(result):
    # gold PHI tokens: John Smith Jones 09 / 14 / 2067; predicted: John saw Dr . Jones + date
    assert counts(result["token_all"]) == (7, 3, 1)
    assert result["token_all"]["precision"] == pytest.approx(0.7)
    assert result["token_all"]["recall"] == pytest.approx(7 / 8)
    assert result["token_all"]["f1"] == pytest.approx(2 * 0.7 * 0.875 / 1.575)


def test_token_hipaa_ignores_non_hipaa_spans_on_both_sides(result):
    # DOCTOR is not HIPAA: Jones, Dr and . drop out; AGE (saw) and PATIENT stay.
    assert counts(result["token_hipaa"]) == (6, 1, 1)


def test_token_hipaa_is_perfect_when_only_non_hipaa_spans_differ():
    gold = [Span(0, 10, "PATIENT", "John Smith")]
    pred = [Span(0, 10, "PATIENT", "John Smith"), Span(19, 24, "DOCTOR", "Jones")]
    result = evaluate_corpus([doc(gold)], [doc(pred)])
    assert counts(result["token_hipaa"]) == (2, 0, 0)
    assert counts(result["token_all"]) == (2, 1, 0)


def test_a_token_partly_inside_a_span_is_phi():
    result = evaluate_corpus([doc([Span(5, 8, "PATIENT", "Smi")])], [doc([Span(1, 4, "PATIENT", "ohn")])])
    assert counts(result["token_all"]) == (0, 1, 1)
    result = evaluate_corpus([doc([Span(5, 8, "PATIENT", "Smi")])], [doc([Span(7, 10, "PATIENT", "ith")])])
    assert counts(result["token_all"]) == (1, 0, 0)


def test_official_tokens_are_the_letter_and_digit_runs_of_each_span(result):
    # gold: John Smith Jones 09 14 2067; predicted: John saw Dr Jones 09 14 2067 (no slashes, no dot)
    assert counts(result["token_official_all"]) == (5, 2, 1)
    # DOCTOR is not HIPAA: Jones and Dr drop out
    assert counts(result["token_official_hipaa"]) == (4, 1, 1)


def test_an_official_token_is_cut_at_the_span_boundary():
    result = evaluate_corpus([doc([Span(5, 10, "PATIENT", "Smith")])], [doc([Span(5, 8, "PATIENT", "Smi")])])
    assert counts(result["token_official_all"]) == (0, 1, 1)
    assert counts(result["token_all"]) == (1, 0, 0)


def test_official_tokens_are_ascii_only():
    text = "José Núñez"  # official tokens: Jos N ez; project tokens: José Núñez
    result = evaluate_corpus([doc([Span(0, 10, "PATIENT", text)], text=text)],
                             [doc([Span(0, 4, "PATIENT", "José")], text=text)])
    assert counts(result["token_official_all"]) == (1, 0, 2)
    assert counts(result["token_all"]) == (1, 0, 1)


def test_a_span_without_letters_or_digits_is_one_empty_official_token_at_its_end():
    dot = Span(17, 18, "OTHER", ".")
    assert counts(evaluate_corpus([doc([dot])], [doc([dot])])["token_official_all"]) == (1, 0, 0)
    result = evaluate_corpus([doc([dot])], [doc([Span(16, 18, "OTHER", "r.")])])
    assert counts(result["token_official_all"]) == (0, 1, 1)


def test_official_hipaa_types_differ_from_the_project_flags():
    text = "Acme Corp, ID 4711, www.acme.org"
    gold = [Span(0, 9, "ORGANIZATION", "Acme Corp"), Span(14, 18, "IDNUM", "4711"),
            Span(20, 32, "URL", "www.acme.org")]
    result = evaluate_corpus([doc(gold, text=text)], [doc([], text=text)])
    assert counts(result["token_official_hipaa"]) == (0, 0, 2)  # Acme Corp only
    assert counts(result["token_hipaa"]) == (0, 0, 6)  # 4711 www . acme . org


def test_overlapping_predictions_are_scored_once_each_with_a_warning_naming_them():
    pred = [*GOLD, Span(0, 4, "PATIENT", "John"), GOLD[2]]
    with pytest.warns(CorpusWarning, match=r"'note-1': overlapping prediction spans.*"
                                           r"PATIENT \[0, 4\); PATIENT \[0, 10\) \| DATE \[28, 38\); DATE \[28, 38\)"):
        result = evaluate_corpus([doc(GOLD)], [doc(pred)])
    assert counts(result["entity_strict"]) == (3, 1, 0)
    assert counts(result["token_official_all"]) == (6, 0, 0)
    assert counts(result["token_all"]) == (8, 0, 0)


def test_strict_needs_same_offsets_and_type(result):
    assert counts(result["entity_strict"]) == (1, 3, 2)
    assert result["entity_strict"]["precision"] == pytest.approx(0.25)
    assert result["entity_strict"]["recall"] == pytest.approx(1 / 3)


def test_relaxed_matches_any_overlap_with_the_same_type(result):
    assert counts(result["entity_relaxed"]) == (3, 1, 0)


def test_breakdowns_per_category_and_per_type(result):
    per_category = {name: counts(s) for name, s in result["entity_strict"]["per_category"].items()}
    assert per_category == {"AGE": (0, 1, 0), "DATE": (1, 0, 0), "NAME": (0, 2, 2)}
    per_type = {name: counts(s) for name, s in result["entity_strict"]["per_type"].items()}
    assert per_type == {"AGE": (0, 1, 0), "DATE": (1, 0, 0), "DOCTOR": (0, 1, 1), "PATIENT": (0, 1, 1)}
    relaxed = {name: counts(s) for name, s in result["entity_relaxed"]["per_category"].items()}
    assert relaxed == {"AGE": (0, 1, 0), "DATE": (1, 0, 0), "NAME": (2, 0, 0)}


def test_relaxed_counts_each_span_at_most_once():
    two = [Span(0, 4, "PATIENT", "John"), Span(5, 10, "PATIENT", "Smith")]
    one = [Span(0, 10, "PATIENT", "John Smith")]
    assert counts(evaluate_corpus([doc(two)], [doc(one)])["entity_relaxed"]) == (1, 0, 1)
    assert counts(evaluate_corpus([doc(one)], [doc(two)])["entity_relaxed"]) == (1, 1, 0)


def test_overlap_of_another_type_is_no_relaxed_match():
    result = evaluate_corpus([doc([Span(0, 10, "PATIENT", "John Smith")])], [doc([Span(0, 4, "DOCTOR", "John")])])
    assert counts(result["entity_relaxed"]) == (0, 1, 1)


def test_key_category_matches_types_of_the_same_category():
    gold, pred = [doc([Span(19, 24, "DOCTOR", "Jones")])], [doc([Span(19, 24, "PATIENT", "Jones")])]
    assert counts(evaluate_corpus(gold, pred)["entity_strict"]) == (0, 1, 1)
    assert counts(evaluate_corpus(gold, pred, key="category")["entity_strict"]) == (1, 0, 0)
    with pytest.raises(ValueError, match="key"):
        evaluate_corpus(gold, pred, key="hipaa")


def test_perfect_prediction_scores_one_everywhere():
    result = evaluate_corpus([doc(GOLD)], [doc(GOLD)])
    for name in MEASURES:
        scores = result[name]
        assert (scores["precision"], scores["recall"], scores["f1"], scores["fp"], scores["fn"]) == (1, 1, 1, 0, 0)
        assert scores["macro"] == {"precision": 1, "recall": 1, "f1": 1}


def test_empty_prediction_has_zero_recall_and_zero_precision():
    result = evaluate_corpus([doc(GOLD)], [doc([])])
    assert counts(result["entity_strict"]) == (0, 0, 3)
    assert counts(result["token_all"]) == (0, 0, 8)
    assert counts(result["token_official_all"]) == (0, 0, 6)
    for name in MEASURES:
        assert (result[name]["precision"], result[name]["recall"], result[name]["f1"]) == (0, 0, 0)


def test_missing_documents_count_as_empty_and_are_named():
    gold = [doc(GOLD, "a"), doc(GOLD, "b")]
    pred = [doc(GOLD, "a"), doc(PRED, "c")]
    with pytest.warns(CorpusWarning) as caught:
        result = evaluate_corpus(gold, pred)
    messages = " | ".join(str(w.message) for w in caught)
    assert "no prediction document" in messages and ": b" in messages
    assert "no gold document" in messages and ": c" in messages
    assert counts(result["entity_strict"]) == (3, 4, 3)


def test_mismatched_text_is_an_error_naming_the_document():
    with pytest.raises(CorpusError, match="'note-1'.*texts differ"):
        evaluate_corpus([doc(GOLD)], [doc([], text=TEXT.upper())])


def test_duplicate_ids_are_an_error():
    with pytest.raises(CorpusError, match="duplicate gold"):
        evaluate_corpus([doc(GOLD), doc(GOLD)], [doc(GOLD)])


def test_macro_averages_over_documents():
    perfect = doc([Span(0, 4, "PATIENT", "John")], "a")
    gold_b = doc(GOLD, "b")  # 3 gold spans; 1 found strictly, 1 false positive
    pred_b = doc([GOLD[2], Span(11, 14, "AGE", "saw")], "b")
    result = evaluate_corpus([perfect, gold_b], [perfect, pred_b])["entity_strict"]
    assert counts(result) == (2, 1, 2)
    assert (result["precision"], result["recall"]) == pytest.approx((2 / 3, 1 / 2))
    macro = result["macro"]
    assert (macro["precision"], macro["recall"]) == pytest.approx(((1 + 1 / 2) / 2, (1 + 1 / 3) / 2))
    assert macro["f1"] == pytest.approx(12 / 17)


def test_result_is_json_serialisable_and_report_lists_the_rows(result):
    assert json.loads(json.dumps(result)) == result
    lines = format_report(result).splitlines()
    assert lines[0].split() == ["Measure", "Recall", "Precision", "F1", "TP", "FP", "FN", "F1", "95%", "CI"]
    assert lines[-1].startswith("CI: 95% percentile bootstrap interval")
    names = [line.split("  ")[0].strip() for line in lines[2:-1]]
    assert names == ["Token HIPAA (i2b2 2014 official, primary)", "Token all (i2b2 2014 official)",
                     "Token HIPAA (project tokenizer)", "Token all (project tokenizer)", "Strict micro",
                     "Relaxed micro", "Strict AGE", "Strict DATE", "Strict NAME"]
    assert [result[name]["measure"] for name in MEASURES] == names[:6]
    # one note: every resample is that note, so the interval is the point
    assert lines[2].split()[-8:] == ["0.8000", "0.8000", "0.8000", "4", "1", "1", "[0.8000,", "0.8000]"]
    assert lines[6].split()[-8:] == ["0.3333", "0.2500", "0.2857", "1", "3", "2", "[0.2857,", "0.2857]"]
    assert lines[8].split()[-6:] == ["0.0000", "0.0000", "0.0000", "0", "1", "0"]  # per category: no interval


def test_no_phi_anywhere_scores_zero():
    result = evaluate_corpus([doc([])], [doc([])])
    assert result["entity_strict"]["f1"] == 0 and result["entity_strict"]["macro"]["f1"] == 0
    assert "0.0000" in format_report(result)


def test_cli_evaluate_prints_one_json_object(tmp_path):
    write_corpus([doc(GOLD)], tmp_path / "gold", "i2b2")
    write_corpus([doc(PRED)], tmp_path / "pred", "i2b2")
    args = ["evaluate", str(tmp_path / "gold"), str(tmp_path / "pred"), "--format", "i2b2"]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)
    assert counts(scores["token_official_hipaa"]) == (4, 1, 1)
    assert scores["token_official_hipaa"]["measure"] == "Token HIPAA (i2b2 2014 official, primary)"
    assert counts(scores["token_hipaa"]) == (6, 1, 1)
    assert counts(scores["entity_strict"]) == (1, 3, 2)
    assert counts(scores["entity_relaxed"]) == (3, 1, 0)
    assert scores["token_official_hipaa"]["f1_interval"] == [0.8, 0.8]  # one note
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0 and "Strict NAME" in table.stdout
    assert table.stdout.splitlines()[0].endswith("F1 95% CI")
    primary = table.stdout.splitlines()[2]
    assert primary.startswith("Token HIPAA (i2b2 2014 official, primary)") and primary.endswith("[0.8000, 0.8000]")


def test_cli_evaluate_scores_overlapping_predictions_with_a_warning(tmp_path):
    write_corpus([doc(GOLD)], tmp_path / "gold", "i2b2")
    write_corpus([doc([*GOLD, Span(0, 4, "PATIENT", "John")])], tmp_path / "pred", "i2b2")
    args = ["evaluate", str(tmp_path / "gold"), str(tmp_path / "pred"), "--format", "i2b2", "--json"]
    with pytest.warns(CorpusWarning,
                      match=r"'note-1': overlapping prediction spans.*PATIENT \[0, 4\); PATIENT \[0, 10\)"):
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert counts(json.loads(result.stdout)["entity_strict"]) == (3, 1, 0)


def notes(count: int) -> tuple[list[Document], list[Document]]:
    """`count` notes, in runs of four: found perfectly, half found, one spurious date, nothing found."""
    gold, pred = [], []
    for index in range(count):
        found = (GOLD, (GOLD[0],), (*GOLD, Span(11, 14, "DATE", "saw")), ())[index % 4]
        gold.append(doc(GOLD, f"note-{index}"))
        pred.append(doc(found, f"note-{index}"))
    return gold, pred


def test_the_bootstrap_interval_brackets_the_f1_and_narrows_with_more_notes():
    widths = []
    for count in (8, 80):
        scores = evaluate_corpus(*notes(count))["token_official_hipaa"]
        low, high = scores["f1_interval"]
        assert low < scores["f1"] < high
        widths.append(high - low)
    assert widths[1] < widths[0] / 2  # ten times the notes: about a third of the width


def test_the_bootstrap_resamples_notes_with_a_fixed_seed():
    gold, pred = notes(8)
    per_note = [evaluate_corpus([g], [p])["token_official_hipaa"] for g, p in zip(gold, pred)]
    counts_per_note = [Counts(s["tp"], s["fp"], s["fn"]) for s in per_note]
    interval = evaluate_corpus(gold, pred)["token_official_hipaa"]["f1_interval"]
    assert list(f1_interval(counts_per_note)) == interval  # the notes are the unit, seed 0
    assert f1_interval(counts_per_note, seed=1) != tuple(interval)
    assert f1_interval(counts_per_note, level=0.5)[1] < interval[1]
    # the F1 of each resample is one of the notes' mixes: all perfect notes give 1, all empty ones 0
    assert f1_interval(counts_per_note[:1]) == (1.0, 1.0)
    assert f1_interval(counts_per_note[3:4]) == (0.0, 0.0)
    assert f1_interval([]) == (0.0, 0.0)


def test_document_counts_are_the_primary_measure_note_by_note_in_id_order():
    gold, pred = notes(8)
    counts = document_counts(gold[::-1], pred)
    expected = [evaluate_corpus([g], [p])["token_official_hipaa"] for g, p in sorted(
        zip(gold, pred), key=lambda pair: pair[0].id)]
    assert [(c.tp, c.fp, c.fn) for c in counts] == [(s["tp"], s["fp"], s["fn"]) for s in expected]
    assert sum(counts, Counts()).as_dict()["f1"] == evaluate_corpus(gold, pred)["token_official_hipaa"]["f1"]


def test_document_counts_of_entity_measures_label_spans_by_the_asked_key():
    """MEDDOCAN's script compares the corpus's own types: two source types of one i2b2 type
    (a patient's and a doctor's name are both NAME categories) match by category, not by source type."""
    text = "Ana vio a Luis."
    gold = [Document("a", text, (Span(0, 3, "NOMBRE_SUJETO_ASISTENCIA", "Ana"),))]
    pred = [Document("a", text, (Span(0, 3, "NOMBRE_PERSONAL_SANITARIO", "Ana"),))]
    assert document_counts(gold, pred, "entity_strict", key="category") == [Counts(1, 0, 0)]
    assert document_counts(gold, pred, "entity_strict", key="source_type") == [Counts(0, 1, 1)]
    assert evaluate_corpus(gold, pred, key="source_type")["entity_strict"]["f1"] == 0
    with pytest.raises(ValueError, match="unknown measure"):
        document_counts(gold, pred, "entity_exact")


def test_the_paired_difference_interval_cancels_what_two_taggers_share():
    gold, pred = notes(40)
    better = document_counts(gold, pred)
    worse = [Counts(c.tp, c.fp + 1, c.fn) for c in better]  # one more false positive in every note
    f1 = sum(better, Counts()).as_dict()["f1"] - sum(worse, Counts()).as_dict()["f1"]
    low, high = f1_difference_interval([(better, worse)])
    assert 0 < low < f1 < high  # a consistent gain is resolved, though each F1's own interval is wide
    unpaired = f1_interval(better)
    assert high - low < (unpaired[1] - unpaired[0]) / 2
    assert f1_difference_interval([(worse, better)]) == pytest.approx((-high, -low))
    assert f1_difference_interval([(better, better)]) == (0.0, 0.0)
    # several pairs (seeds): the interval of the mean difference
    both = f1_difference_interval([(better, worse), (better, better)])
    assert both == pytest.approx((low / 2, high / 2))
    with pytest.raises(ValueError, match="same documents"):
        f1_difference_interval([(better, worse[:-1])])


def test_score_row_flattens_the_headline_measures_official_first():
    result = evaluate_corpus(*notes(8))
    row = score_row(result)
    assert list(row)[:4] == ["token_official_hipaa_precision", "token_official_hipaa_recall", PRIMARY,
                             "token_official_hipaa_f1_interval"]
    assert row[PRIMARY] == result["token_official_hipaa"]["f1"] != row["token_hipaa_f1"]
    assert row["token_hipaa_f1"] == result["token_hipaa"]["f1"]
    assert row["entity_strict_f1_interval"] == result["entity_strict"]["f1_interval"]
    assert set(row) <= set(COLUMN_TITLES)
    assert COLUMN_TITLES[PRIMARY] == "token HIPAA F1 (official i2b2 2014 tokenization)"
    assert COLUMN_TITLES["token_hipaa_f1"] == "token HIPAA F1 (project tokenizer)"
