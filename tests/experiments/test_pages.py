"""The results pages are what their records render (experiments/pages.py): a generated page edited
by hand, a record changed without its page, or a folder index out of step fails here, naming the
page; `python experiments/pages.py` writes them again."""

import json
import shutil

import pages
import results_files
from results_files import GROUPS, RESULTS


def test_every_generated_page_and_index_is_what_its_records_render():
    stale = [str(path.relative_to(RESULTS)) for path, text in pages.outputs().items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"out of date with their records (run python experiments/pages.py): {stale}"


def test_no_archived_results_name_is_left_in_its_group():
    assert not pages.archive_moves()


def test_a_hand_edited_page_is_named_and_an_archived_name_leaves_its_group(tmp_path, monkeypatch):
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    for folder in (*GROUPS, "archive"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "README.md").write_text(f"# {folder}\n")
    for ending in (".json", ".md"):
        shutil.copy(RESULTS / "privacy" / f"reidentification_bound{ending}", tmp_path / "privacy")
    page = tmp_path / "privacy" / "reidentification_bound.md"
    assert pages.outputs()[page] == page.read_text()
    page.write_text(page.read_text().replace("|", "| edited", 1))
    assert pages.outputs()[page] != page.read_text()
    index = pages.outputs()[tmp_path / "privacy" / "README.md"]
    assert "[reidentification_bound.md](reidentification_bound.md) (generated)" in index
    monkeypatch.setattr(pages, "ARCHIVED", frozenset({"reidentification_bound"}))
    assert set(pages.archive_moves()) == {page, page.with_suffix(".json")}
    assert json.loads(page.with_suffix(".json").read_text())
