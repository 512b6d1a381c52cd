"""The cross-validated mode of experiments/tagger_baselines.py on hand-made fold results (nothing
is trained): folds by patient, scores pooled over every fold's test notes, the spread and the
pattern layer's gain per fold, and each default pattern's precision on the test folds."""

import pytest

import tagger_baselines
from deidpool.client.patterns import DEFAULT_PATTERNS, with_patterns
from deidpool.corpus.document import Document, Span
from deidpool.corpus.formats.physionet import patient
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, evaluate_corpus, format_score, score_row
from tests.experiments.test_result_tables import cells, column, table_lines

TEXT = "Seen 8/23 by Dr Smith, call 204-943-1045."
DATE, DOCTOR, PHONE = (5, 9, "Date"), (16, 21, "HCPName"), (28, 40, "Phone")


def note(note_id: str, *spans) -> Document:
    return Document(note_id, TEXT, tuple(Span(s, e, label, TEXT[s:e]) for s, e, label in spans))


# fold 0: patients 1 and 2; fold 1: patients 3 and 5, whose note has a date and a doctor nobody annotated
GOLD = [note("1-1", DATE, DOCTOR, PHONE), note("2-1", DATE, DOCTOR, PHONE), note("3-1", DATE, DOCTOR, PHONE),
        note("5-1", PHONE)]
PREDICTED = {0: [note("1-1", DATE), note("2-1")], 1: [note("3-1", DATE, DOCTOR, PHONE), note("5-1", PHONE)]}
UNSEEN = {"5-1"}  # the `test` split's notes


def fold_row(fold: int, seed: int = 0) -> dict:
    return {"corpus": "physionet", "name": "GloVe + casing", "seed": seed, "fold": fold, "folds": 2, "fold_seed": 0,
            "key": f"physionet/GloVe + casing/seed{seed}/fold{fold}", "commit": "abc1234", "max_epochs": 1,
            "patience": 1, "predicted": tagger_baselines.stored_predictions(PREDICTED[fold])}


def by_id(documents):
    return {d.id: d for d in documents}


def test_stored_predictions_come_back_as_the_predicted_notes():
    assert tagger_baselines.fold_predictions(fold_row(1), by_id(GOLD)) == PREDICTED[1]


def test_every_physionet_configuration_runs_once_per_fold():
    configs = tagger_baselines.cv_configurations([0], 5)
    assert {c["corpus"] for c in configs} == {"physionet"} and len({c["key"] for c in configs}) == len(configs)
    assert sorted(c["fold"] for c in configs if c["name"] == "GloVe + casing") == [0, 1, 2, 3, 4]
    assert configs[0]["key"] == "physionet/GloVe + casing/seed0/fold0"


def test_a_fold_trains_and_validates_on_other_patients_than_it_tests():
    documents = [Document(f"{p}-{n}", "text") for p in range(30) for n in range(p % 4 + 1)]
    tested = []
    for fold in range(5):
        train, valid, test = tagger_baselines.cv_data(documents, fold, 5)
        groups = [{patient(d) for d in part} for part in (train, valid, test)]
        assert not (groups[0] & groups[1] or groups[0] & groups[2] or groups[1] & groups[2])
        assert len(groups[1]) == round(0.1 * (len(groups[0]) + len(groups[1])))
        assert len(train) + len(valid) + len(test) == len(documents)
        tested += test
    assert sorted(d.id for d in tested) == sorted(d.id for d in documents)


def test_the_summary_pools_every_folds_test_notes_and_scores_each_fold():
    summary = tagger_baselines.cv_summary([fold_row(1), fold_row(0)], by_id(GOLD))
    predicted = PREDICTED[0] + PREDICTED[1]
    assert summary["folds"] == [0, 1]
    assert summary["pooled"] == score_row(evaluate_corpus(GOLD, predicted), tagger_baselines.SCORED)
    merged = [with_patterns(d) for d in predicted]
    assert summary["pooled_patterns"] == score_row(evaluate_corpus(GOLD, merged), tagger_baselines.SCORED)
    folds = [(GOLD[:2], PREDICTED[0]), (GOLD[2:], PREDICTED[1])]
    assert summary["fold_f1"] == [pytest.approx(evaluate_corpus(g, p)["token_official_hipaa"]["f1"]) for g, p in folds]
    assert summary["fold_f1_patterns"] == [
        pytest.approx(evaluate_corpus(g, [with_patterns(d) for d in p])["token_official_hipaa"]["f1"])
        for g, p in folds]
    low, high = summary["gain_interval"]
    assert low <= summary["pooled_patterns"][PRIMARY] - summary["pooled"][PRIMARY] <= high


def test_the_report_gives_pooled_scores_the_spread_and_the_gain_on_every_fold():
    text = tagger_baselines.cv_table([fold_row(0), fold_row(1)], GOLD, UNSEEN)
    summary = tagger_baselines.cv_summary([fold_row(0), fold_row(1)], by_id(GOLD))
    assert text.startswith("# Cross-validated baselines: PhysioNet, 2 folds by patient")
    lines = table_lines(text)
    assert column(lines, "configuration") == ["GloVe + casing, seed 0", "GloVe + casing, seed 0 + patterns"]
    assert column(lines, "folds") == ["2/2", "2/2"]
    assert column(lines, COLUMN_TITLES[PRIMARY]) == [format_score(summary["pooled"][PRIMARY]),
                                                     format_score(summary["pooled_patterns"][PRIMARY])]
    fold_f1 = summary["fold_f1"]
    assert column(lines, "F1 per fold (mean ± sd)")[0] == tagger_baselines.spread(fold_f1, 4)
    gains = table_lines(text, 1)
    gain = [m - a for m, a in zip(summary["fold_f1_patterns"], fold_f1)]
    assert gain[0] > 0 > gain[1]  # the patterns find fold 0's misses but mark fold 1's unannotated date
    assert column(gains, "gain per fold") == [f"0: {gain[0]:+.4f} 1: {gain[1]:+.4f}"]
    assert column(gains, "positive on every fold") == ["NO"]
    assert table_lines(text, 2)[2:] == ["| 0 | 2 | 2 | 6 |", "| 1 | 2 | 2 | 4 |"]


def test_the_report_gives_each_default_patterns_precision_on_the_test_folds():
    lines = table_lines(tagger_baselines.cv_table([fold_row(0), fold_row(1)], GOLD, UNSEEN), 3)
    rows = {cells(line)[0]: cells(line)[1:] for line in lines[2:]}
    assert list(rows) == [p.name for p in DEFAULT_PATTERNS if not p.refuses]
    # 8/23 is a gold date in three notes, not in 5-1 (fold 1, the `test` split)
    assert rows["date_month_day"] == ["DATE", "4", "0.7500", "0.5000 (fold 1, 2 spans)", "1", "0.0000"]
    assert rows["phone"] == ["PHONE", "4", "1.0000", "1.0000 (fold 0, 2 spans)", "1", "1.0000"]
    assert rows["email"] == ["EMAIL", "0", "n/a", "n/a", "0", "n/a"]


def test_a_configuration_with_folds_missing_says_how_many_are_done():
    text = tagger_baselines.cv_table([fold_row(0), fold_row(0, seed=1), fold_row(1, seed=1)], GOLD, UNSEEN)
    assert column(table_lines(text), "folds") == ["1/2", "1/2", "2/2", "2/2"]


def test_a_fold_finished_by_another_process_stays_in_the_results(tmp_path, monkeypatch):
    stored = tmp_path / "cv.json"
    stored.write_text("[]")
    monkeypatch.setattr(tagger_baselines, "results_file", lambda name, ending: tmp_path / f"cv{ending}")
    monkeypatch.setattr(tagger_baselines, "cv_documents", lambda limit: (GOLD, UNSEEN))
    monkeypatch.setattr(tagger_baselines, "cv_data", lambda documents, fold, k: None)

    def run(config, data, max_epochs, patience, runs, monitor):  # the other process lands fold 0 while this one trains
        assert monitor == "val_loss"
        stored.write_text(tagger_baselines.json.dumps([fold_row(0)]))
        return fold_row(config["fold"])

    monkeypatch.setattr(tagger_baselines, "run", run)
    args = tagger_baselines.argparse.Namespace(report_only=False, seeds=[0], cv=2, limit=None, max_epochs=1,
                                               patience=1, monitor="val_loss", only="GloVe + casing/seed0/fold1")
    tagger_baselines.cross_validate(args, "cv", [])
    keys = [r["key"] for r in tagger_baselines.json.loads(stored.read_text())]
    assert keys == ["physionet/GloVe + casing/seed0/fold0", "physionet/GloVe + casing/seed0/fold1"]


def test_the_report_counts_the_tagger_spans_each_look_alike_drops():
    """A tagger's "10/5" after "bipap" (no PHI) and its "9/9" after "CPAP" (gold PHI, lost) are
    both dropped; the date far from any ventilator word stays."""
    text = "Now on bipap 10/5. Seen 9/9 on CPAP 9/9 and 8/23."
    at = [text.index("10/5"), text.index("CPAP 9/9") + 5, text.index("8/23")]
    gold = [Document("5-1", text, (Span(at[1], at[1] + 3, "Date", "9/9"), Span(at[2], at[2] + 4, "Date", "8/23")))]
    predicted = {0: [Document("5-1", text, tuple(Span(a, a + n, "Date", text[a:a + n])
                                                  for a, n in zip(at, (4, 3, 4))))]}
    row = {**fold_row(0), "predicted": tagger_baselines.stored_predictions(predicted[0])}
    lines = table_lines(tagger_baselines.cv_table([row], gold, {"5-1"}), 4)
    rows = {cells(line)[0]: cells(line)[1:] for line in lines[2:]}
    assert rows == {"setting_or_count": ["2", "1", "2", "1"], "pain_score": ["0", "0", "0", "0"]}


def test_each_corpus_is_scored_with_the_pattern_layer_of_its_language():
    text = "NHC: 368503. Seen by Dr. Smith."
    note = Document("n", text, (Span(5, 11, "ID_SUJETO_ASISTENCIA", "368503"), Span(25, 30, "DOCTOR", "Smith")))
    found = [Document("n", text)]  # the tagger finds nothing
    spanish = tagger_baselines.pattern_scores({"corpus": "meddocan"}, [note], found)["patterns"]
    english = tagger_baselines.pattern_scores({"corpus": "physionet"}, [note], found)["patterns"]
    assert spanish["entity_strict_recall"] == 0.5 and spanish["entity_strict_precision"] == 1.0  # the NHC only
    assert english["entity_strict_recall"] == 0.5 and english["entity_strict_precision"] == 1.0  # Dr. Smith only
    assert spanish["token_all_f1"] == english["token_all_f1"] and spanish != english


def test_a_second_configuration_is_paired_with_the_first_on_the_same_notes():
    better = {0: [note("1-1", DATE, DOCTOR, PHONE), note("2-1", DATE, DOCTOR, PHONE)], 1: PREDICTED[1]}
    chars = [{**fold_row(fold), "name": "GloVe + casing + chars", "key": f"physionet/GloVe + casing + chars/seed0/"
              f"fold{fold}", "predicted": tagger_baselines.stored_predictions(better[fold])} for fold in (0, 1)]
    text = tagger_baselines.cv_table([fold_row(0), fold_row(1), *chars], GOLD, UNSEEN)
    section = text.split("## Against GloVe + casing, seed 0")[1]
    rows = [cells(line) for line in section.splitlines() if line.startswith("| GloVe + casing + chars")]
    first = tagger_baselines.cv_summary([fold_row(0), fold_row(1)], by_id(GOLD))["pooled"][PRIMARY]
    second = tagger_baselines.cv_summary(chars, by_id(GOLD))["pooled"][PRIMARY]
    assert [row[1] for row in rows] == ["alone", "+ pattern layer"]
    assert rows[0][2] == f"{second - first:+.4f}" and second > first
