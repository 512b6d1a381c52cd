"""experiments/results/ holds one folder per question (results_files.GROUPS) and archive/, each
with its README; every results file lies in the folder results_files maps its results name to,
so the scripts that write and read it find it there."""

from pathlib import Path

import pytest

from results_files import ARCHIVED, GROUPS, RESULTS, results_file, results_folder

FOLDERS = [*GROUPS, "archive"]


def test_the_results_folder_holds_its_index_and_one_folder_per_group():
    assert sorted(path.name for path in RESULTS.iterdir()) == sorted(["README.md", *FOLDERS])
    assert all((RESULTS / folder / "README.md").exists() for folder in FOLDERS)


def results_names(path: Path) -> list[str]:
    """The results names a file may belong to: its name up to each "_" (a script adds suffixes
    such as _pareto.png or _diagnosis.md to its results name), and its whole stem."""
    parts = path.name.split(".")[0].split("_")
    return ["_".join(parts[:end]) for end in range(1, len(parts) + 1)]


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_file_lies_where_its_results_name_is_written(folder):
    misplaced = [path.name for path in sorted((RESULTS / folder).iterdir()) if path.name != "README.md"
                 and not any(results_folder(name) == RESULTS / folder for name in results_names(path))]
    assert not misplaced, f"{folder}/: files whose results name results_files maps elsewhere: {misplaced}"


def test_results_names_map_to_their_question_and_superseded_ones_to_the_archive():
    assert results_file("privacy_table", "_pareto.png") == RESULTS / "privacy" / "privacy_table_pareto.png"
    assert results_folder("federation_meddocan_short") == RESULTS / "federation"
    assert results_folder("pseudonymization_utility_meddocan") == RESULTS / "privacy"
    assert results_folder("baselines_f1_stopping") == RESULTS / "quality"
    assert results_folder("load_uploads_faults") == RESULTS / "server"
    assert {results_folder(name) for name in ARCHIVED} == {RESULTS / "archive"}
    assert results_folder("unsorted") == RESULTS
