"""experiments/results_files.py's run records (issue #64): a run folder keeps the commit that started
training it and each other commit that resumed it, and a results record names the commits its run
folders were trained at, which the pages print beside the commit that reported them."""

import json

import pytest

import results_files
from results_files import RUN_RECORD, commit_text, record, recorded_folder, write_run_record


@pytest.fixture
def at_commit(monkeypatch):
    """Set the commit the run records and results records see."""
    def move_to(commit: str) -> None:
        monkeypatch.setattr(results_files, "git_commit", lambda: commit)
    return move_to


def run_record(folder) -> dict:
    return json.loads((folder / RUN_RECORD).read_text())


def test_a_run_record_is_written_once_and_a_resume_at_another_commit_appends_once(tmp_path, at_commit):
    folder = tmp_path / "runs" / "x" / "seed-0"
    at_commit("aaa1111")
    write_run_record(folder, seed=0, budget={"epochs": 2})
    started = run_record(folder)
    assert started["commit"] == "aaa1111" and started["seed"] == 0 and started["budget"] == {"epochs": 2}
    assert started["command"].startswith("python ") and "resumed" not in started
    write_run_record(folder, seed=1)  # resumed at the same commit: nothing changes
    assert run_record(folder) == started
    at_commit("bbb2222")
    write_run_record(folder, seed=1)
    write_run_record(folder, seed=1)
    at_commit("aaa1111")
    write_run_record(folder, seed=1)
    resumed = run_record(folder)
    assert {key: resumed[key] for key in started} == started
    assert [entry["commit"] for entry in resumed["resumed"]] == ["bbb2222"]
    assert set(resumed["resumed"][0]) == {"command", "commit", "date"}


def test_a_run_started_before_run_records_were_kept_is_recorded_as_started_at_an_unknown_commit(tmp_path, at_commit):
    folder = tmp_path / "seed-0"
    folder.mkdir()
    (folder / "rows.json").write_text("{}")
    at_commit("bbb2222")
    write_run_record(folder, seed=0)
    run = run_record(folder)
    assert (run["command"], run["commit"], run["date"], run["seed"]) == ("unknown", "unknown", "unknown", 0)
    assert [entry["commit"] for entry in run["resumed"]] == ["bbb2222"]
    assert record([folder])["trained_at"] == ["bbb2222", "unknown"]


def test_a_record_names_the_commits_its_run_folders_were_trained_at(tmp_path, at_commit):
    first, second, untracked = (tmp_path / name for name in ("seed-0", "seed-1", "seed-2"))
    at_commit("ccc3333")
    write_run_record(first)
    at_commit("aaa1111")
    write_run_record(first)
    write_run_record(second)
    untracked.mkdir()
    at_commit("fff9999")
    assert record([first, second, untracked], seeds=[0, 1, 2])["trained_at"] == ["aaa1111", "ccc3333"]
    assert "trained_at" not in record([untracked, tmp_path / "absent"])
    assert "trained_at" not in record()



def test_a_result_reading_a_folder_inside_a_seed_folder_finds_the_seed_folders_run_record(tmp_path, at_commit):
    seed = tmp_path / "federation" / "seed-0"
    representer = seed / "representer"
    assert recorded_folder(representer) == []
    at_commit("ddd4444")
    write_run_record(seed)
    representer.mkdir()
    assert recorded_folder(representer) == [seed.resolve()]
    assert recorded_folder(seed / "pipelines" / "pooled.tar") == [seed.resolve()]
    at_commit("eee5555")
    assert record(recorded_folder(representer))["trained_at"] == ["ddd4444"]

def test_the_commit_text_says_where_results_were_trained_when_that_was_elsewhere():
    assert commit_text({"commit": "abbea32", "trained_at": ["03684e7"]}) == "trained at 03684e7; reported at abbea32"
    assert commit_text({"commit": "abbea32", "trained_at": ["03684e7", "abbea32"]}) == \
        "trained at 03684e7, abbea32; reported at abbea32"
    assert commit_text({"commit": "abbea32", "trained_at": ["abbea32"]}) == "commit abbea32"
    assert commit_text({"commit": "abbea32"}) == "commit abbea32"
