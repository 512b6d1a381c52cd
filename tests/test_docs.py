"""The front door's pages: every relative link in README.md, docs/ and the results' pages
(experiments/results/**/*.md) resolves (file and, for Markdown pages, heading anchor), and the
README stays a page a newcomer reads in five minutes."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
         *sorted((REPO / "experiments" / "results").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+\s+(.+)$", FENCE.sub("", page.read_text(encoding="utf-8")), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: broken links {broken}"


def test_anchors_follow_githubs_rule(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Models, privacy and the institution's client\n```\n# not a heading\n```\n"
                    "## The corpus layer (`corpus/`, no ML framework)\n")
    assert anchors(page) == {"models-privacy-and-the-institutions-client", "the-corpus-layer-corpus-no-ml-framework"}


def test_the_readme_is_short_with_a_short_results_table():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    results = text.split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in results.splitlines() if line.startswith("| ") and not line.startswith("| question")]
    assert 0 < len(rows) <= 6
    assert all(len(row.split()) <= 90 for row in rows)  # one sentence an answer, its links included
    assert "```mermaid" in text  # the flow picture, drawn from its source in the page
