"""experiments/recall_bias.py on hand-made scores: the bias lowers the O tag's score before
Viterbi, and the bias is chosen on validation notes only."""

import numpy as np

import recall_bias
from deidpool.corpus import Document, Span
from deidpool.corpus.prepare import prepare_text

TEXT = "Seen by nurse Smith today."


def scored(unaries: np.ndarray) -> recall_bias.ScoredNotes:
    """ScoredNotes of one note whose single sentence has `unaries` (tokens, [O, B-PATIENT, I-PATIENT])."""
    notes = recall_bias.ScoredNotes.__new__(recall_bias.ScoredNotes)
    notes.documents = [Document("n", TEXT, (Span(14, 19, "PATIENT", "Smith"),))]
    notes.sentences = [prepare_text(TEXT)]
    assert [t.text for t in notes.sentences[0][0].tokens] == ["Seen", "by", "nurse", "Smith", "today", "."]
    notes.batches = [(unaries[None], np.array([len(unaries)]), np.array([0]))]
    notes.count = 1
    notes.crf = [np.zeros((3, 3), np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32)]
    notes.outside, notes.vocabulary, notes.scheme = 0, ["O", "B-PATIENT", "I-PATIENT"], "BIO"
    return notes


def test_a_bias_on_the_o_score_turns_near_misses_into_phi():
    unaries = np.zeros((6, 3), np.float32)
    unaries[:, 0] = [5, 5, 5, 0.8, 5, 5]  # "Smith" is O by 0.8 against B-PATIENT
    notes = scored(unaries)
    assert [d.spans for d in notes.decoded(0.0)] == [()]
    found = notes.decoded(1.0)[0].spans
    assert [(s.text, s.source_type) for s in found] == [("Smith", "PATIENT")]
    assert notes.batches[0][0][0, 3, 0] == 0.8  # the stored scores are not changed by a decoding


def test_the_largest_bias_within_the_slack_of_the_best_validation_f1_is_chosen():
    unaries = np.zeros((6, 3), np.float32)
    unaries[:, 0] = [5, 5, 1.2, 0.8, 5, 5]  # b = 1 finds Smith; b = 1.5 also takes "nurse" (a false positive)
    bias, scores = recall_bias.chosen_bias(scored(unaries), [0.0, 1.0, 1.5], slack=0.0)
    assert bias == 1.0 and scores[0.0]["recall"] == 0.0 and scores[1.0]["f1"] == 1.0 > scores[1.5]["f1"]
    bias, _ = recall_bias.chosen_bias(scored(unaries), [0.0, 1.0, 1.5], slack=0.5)
    assert bias == 1.5  # within the slack the most recall-oriented bias wins


def test_the_page_names_the_commits_the_folds_run_records_were_trained_at_else_the_rows_commit():
    import argparse

    note = Document("n", TEXT, (Span(14, 19, "PATIENT", "Smith"),))
    decoded = {b: {"": [note], "+patterns": [note]} for b in (0.0, "chosen")}
    args = argparse.Namespace(results_name="baselines_cv5", configuration="GloVe", biases=[0.0], slack=0.005)
    rows = [{"seed": 0, "commit": "aaa1111"}]
    run = {"date": "2020-01-02", "commit": "ccc3333", "command": "python experiments/recall_bias.py"}
    text, data = recall_bias.report(args, rows, [], [note], decoded, run)
    assert "2020-01-02, commit ccc3333; the taggers of `baselines_cv5` (5 folds by patient, seed 0, trained at " \
           "aaa1111), nothing retrained." in text
    assert data["record"] == run and (data["date"], data["commit"]) == ("2020-01-02", "ccc3333")
    trained, _ = recall_bias.report(args, rows, [], [note], decoded, {**run, "trained_at": ["bbb2222"]})
    assert "2020-01-02, trained at bbb2222; reported at ccc3333; the taggers of `baselines_cv5` (5 folds by patient, " \
           "seed 0), nothing retrained." in trained
