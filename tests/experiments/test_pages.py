"""The results pages are what their records render (experiments/pages.py): a generated page edited
by hand, a record changed without its page, or a folder index out of step fails here, naming the
page; `python experiments/pages.py` writes them again. A page whose runs were trained at other
commits than the one reporting them names those commits. Each group README's hand-written answer table
stays short (issue #64: at most `MAX_ROWS` rows, question and answer at most `MAX_WORDS` words), and
every relative .md link of the group READMEs and the archived answer tables resolves."""

import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

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



@pytest.mark.parametrize("stem", ["federation_meddocan_stack", "pseudonymization_utility_physionet"])
def test_a_page_whose_runs_were_trained_at_other_commits_says_so_and_one_without_renders_as_before(stem):
    stored = results_files.results_file(stem, ".json")
    data = json.loads(stored.read_text())
    found = pages.renderer(stem, data)
    module = importlib.import_module(found.module)
    as_committed = stored.with_suffix(".md").read_text(encoding="utf-8")
    assert found.render(module, data, stem) == as_committed
    trained = found.render(module, {**data, "trained_at": ["03684e7", "13d302d"]}, stem)
    commit = f"commit {data['commit']}"
    assert trained == as_committed.replace(commit, f"trained at 03684e7, 13d302d; reported at {data['commit']}", 1)
    assert trained != as_committed
    assert found.render(module, {**data, "trained_at": [data["commit"]]}, stem) == as_committed


MAX_ROWS = 10
MAX_WORDS = 40  # the question and answer cells of a row together; the page cell is not counted
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


HEADER = "| question | current answer | page |"


def answer_table_problems(readme: str) -> list[str]:
    """One line per way the answer table (`HEADER`, then its rows) of a README's hand-written part
    is missing or too long."""
    lines = readme.split(pages.INDEX_START)[0].splitlines()
    if HEADER not in lines:
        return [f"no answer table ({HEADER})"]
    rows = []
    for line in lines[lines.index(HEADER) + 2:]:  # past the header's rule
        if not line.startswith("|"):
            break
        rows.append(line)
    problems = [f"{len(rows)} rows (at most {MAX_ROWS})"] * (len(rows) > MAX_ROWS) or ["no rows"] * (not rows)
    for row in rows:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
        words = len(" ".join(cells[:2]).split())
        if words > MAX_WORDS:
            problems.append(f"{words} words (at most {MAX_WORDS}): {cells[0]}")
    return problems


def broken_md_links(page: Path) -> list[str]:
    """The relative links to .md files in `page` that name no file."""
    return [target for target in LINK.findall(page.read_text(encoding="utf-8"))
            if not re.match(r"[a-z]+:", target) and target.partition("#")[0].endswith(".md")
            and not (page.parent / target.partition("#")[0]).exists()]


def test_every_group_readme_opens_with_a_short_answer_table():
    problems = [f"{group}/README.md: {problem}" for group in GROUPS
                for problem in answer_table_problems((RESULTS / group / "README.md").read_text(encoding="utf-8"))]
    assert not problems, "\n".join(problems)


def test_the_group_readmes_and_archived_answer_tables_link_existing_pages():
    archived = sorted((RESULTS / "archive").glob("*_answers_until_*.md"))
    assert len(archived) == len(GROUPS)
    broken = {str(page.relative_to(RESULTS)): links for page in (*(RESULTS / group / "README.md" for group in GROUPS),
                                                                  *archived) if (links := broken_md_links(page))}
    assert not broken, f"broken links: {broken}"


def test_a_long_answer_table_and_a_broken_link_are_named(tmp_path):
    row = "| a question? | an answer of five words | [x.md](x.md) |"
    table = ["# Group", "", "| question | current answer | page |", "|---|---|---|"]
    short = "\n".join([*table, row, "", pages.INDEX_START, "", "| not | counted | here |", ""])
    assert answer_table_problems(short) == []
    long_row = f"| why? | {'word ' * MAX_WORDS}| [x.md](x.md) |"
    long = "\n".join([*table, *[row] * MAX_ROWS, long_row, "", pages.INDEX_START, ""])
    assert answer_table_problems(long) == [f"{MAX_ROWS + 1} rows (at most {MAX_ROWS})",
                                           f"{MAX_WORDS + 1} words (at most {MAX_WORDS}): why?"]
    assert answer_table_problems("# Group\n\nprose only\n") == [f"no answer table ({HEADER})"]
    assert answer_table_problems("\n".join([*table, "", "prose"])) == ["no rows"]
    page = tmp_path / "README.md"
    (tmp_path / "x.md").write_text("# x\n")
    page.write_text("[x](x.md) [y](y.md#part) [web](https://example.org/z.md) [png](p.png)\n")
    assert broken_md_links(page) == ["y.md#part"]
