"""experiments/pseudonymization_utility.py's report on hand-made rows (nothing is trained): every
scheme's F1, and the paired differences scheme - raw and surrogates - groups N = 100."""

import json

import pytest

import federation
import pseudonymization_utility as utility
import results_files
from deidpool.corpus.metrics import PRIMARY

NOTES = 40


def per_note(tp: int, fn: int) -> list[list[int]]:
    return [[tp, 0, fn] for _ in range(NOTES)]


def rows(counts: dict[str, list[list[int]]]) -> dict:
    """One seed's rows.json: each tagger alone and with the pattern layer (the same counts)."""
    made = {"budget": {"tagger_epochs": 1, "patience": 1, "limit": 5}}
    for name, notes in counts.items():
        score = federation.f1(notes)
        for suffix in ("", federation.PATTERNS):
            made[f"{name}{suffix}@test"] = {PRIMARY: score, "entity_strict_f1": score, "epochs": 1,
                                            federation.NOTE_COUNTS: {measure: notes for measure in
                                                                     federation.MEASURES.values()}}
    return made


def test_the_report_gives_each_scheme_and_the_paired_differences():
    seed = {"raw": per_note(10, 0), "groups-100": per_note(8, 2), "groups-500": per_note(7, 3),
            "surrogates": per_note(9, 1)}
    text, paired = utility.report_text({0: rows(seed), 1: rows(seed)}, "meddocan", "pseudonymization_utility_x")
    assert "--limit 5 --results-name pseudonymization_utility_x" in text
    assert "| surrogates | alone | 0.9474 ± 0.0000 |" in text
    strict = {row["comparison"]: row for row in paired["entity_strict"] if not row["patterns"]}
    assert list(strict) == ["groups, N = 100 - raw text", "surrogates - raw text", "groups, N = 500 - raw text",
                            "surrogates - groups, N = 100"]
    gain = strict["surrogates - groups, N = 100"]
    assert round(gain["mean"]["difference"], 2) == round(100 * (18 / 19 - 16 / 18), 2)
    assert gain["seeds"][1]["interval"][0] > 0  # every note agrees: the interval is a point
    cell = "+5.8 [+5.8, +5.8]"
    assert f"| surrogates - groups, N = 100 | alone | {cell} | {cell} | {cell} | > 0 |" in text


def test_before_pairs_today_s_surrogates_with_those_of_an_earlier_run(tmp_path, monkeypatch):
    """--before NAME: the surrogates rows of runs/NAME become "surrogates of --before", paired with
    today's on the same seeds; a seed with only those two taggers is reported."""
    monkeypatch.setattr(utility, "REPO", tmp_path)
    for name, counts in (("today", per_note(9, 1)), ("earlier", per_note(8, 2))):
        for seed in (0, 1):
            folder = tmp_path / "runs" / name / f"seed-{seed}"
            folder.mkdir(parents=True)
            (folder / "rows.json").write_text(json.dumps(rows({"surrogates": counts})))
    per_seed = utility.finished_seeds([0, 1], tmp_path / "runs" / "today", tmp_path / "absent.json", "earlier")
    assert sorted(per_seed) == [0, 1]
    assert not utility.finished_seeds([0, 1], tmp_path / "runs" / "today", tmp_path / "absent.json")
    text, paired = utility.report_text(per_seed, "meddocan", "today", before="earlier")
    assert "--results-name today --before earlier" in text
    assert "| surrogates of --before | alone | 0.8889 ± 0.0000 |" in text
    (row,) = [row for row in paired["entity_strict"] if not row["patterns"]]
    assert row["comparison"] == "surrogates today - surrogates of --before"
    assert round(row["mean"]["difference"], 2) == round(100 * (18 / 19 - 16 / 18), 2)


class TrainingStarts(Exception):
    """Raised by a stand-in where training would start, carrying the seed folder's run record."""


def test_a_seed_folder_records_what_trains_it_before_training(tmp_path, monkeypatch):
    import argparse

    import deidpool.corpus.formats

    monkeypatch.setattr(utility, "REPO", tmp_path)
    monkeypatch.setattr(deidpool.corpus.formats, "read_corpus", lambda *a, **k: [])

    def embeddings(corpus, folder, notes, seed):
        raise TrainingStarts(json.loads((folder / results_files.RUN_RECORD).read_text()))

    monkeypatch.setattr(federation, "provider_embeddings", embeddings)
    args = argparse.Namespace(corpus="meddocan", results_name="x", tagger_epochs=1, patience=1, limit=5,
                              taggers=["raw"])
    with pytest.raises(TrainingStarts) as stopped:
        utility.run_seed(2, args)
    run = stopped.value.args[0]
    assert run["seed"] == 2 and run["data"] == "meddocan" and run["taggers"] == ["raw"]
    assert run["budget"] == {"tagger_epochs": 1, "patience": 1, "limit": 5}


def test_the_report_names_the_commits_its_seeds_and_those_of_before_were_trained_at(tmp_path, monkeypatch):
    monkeypatch.setattr(utility, "REPO", tmp_path)
    monkeypatch.setattr(results_files, "RESULTS", tmp_path / "results")
    for commit, folder in (("0aaaaaa", "earlier/seed-0"), ("1bbbbbb", "today/seed-1")):
        monkeypatch.setattr(results_files, "git_commit", lambda commit=commit: commit)
        results_files.write_run_record(tmp_path / "runs" / folder)
    for name, counts in (("today", {"raw": per_note(10, 0), "surrogates": per_note(9, 1)}),
                         ("earlier", {"surrogates": per_note(8, 2)})):
        for seed in (0, 1):
            (tmp_path / "runs" / name / f"seed-{seed}").mkdir(parents=True, exist_ok=True)
            (tmp_path / "runs" / name / f"seed-{seed}" / "rows.json").write_text(json.dumps(rows(counts)))
    monkeypatch.setattr(utility, "git_commit", lambda: "2cccccc")
    utility.report([0, 1], "today", "meddocan", "earlier")
    stored = json.loads(results_files.results_file("today", ".json").read_text())
    assert stored["record"]["trained_at"] == ["0aaaaaa", "1bbbbbb"]
    assert ", trained at 0aaaaaa, 1bbbbbb; reported at 2cccccc, Python" in \
        results_files.results_file("today", ".md").read_text()
