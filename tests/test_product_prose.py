"""Product code says what a thing does; results live on the results pages (issue #64): no module of
the product folders (docstrings, comments, help texts alike) points into experiments/results, and no
module docstring runs past `MAX_DOCSTRING_WORDS` words. A pointer to the experiment script that
chose a value ("chosen by experiments/federation.py; see its results page") is fine."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("adversary", "baselines", "client", "contribution", "corpus", "deidpool", "pseudonymization",
           "representer", "server")
MAX_DOCSTRING_WORDS = 260  # the longest were trimmed to 245-258 words (what the module is for, no history)
RESULTS = "experiments/results"


def product_modules(repo: Path = REPO) -> list[Path]:
    return sorted(path for folder in PRODUCT for path in (repo / folder).rglob("*.py"))


def prose_problems(paths: list[Path], repo: Path = REPO) -> list[str]:
    """One line per module that points into experiments/results or whose module docstring is too long."""
    problems = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(repo))
        if RESULTS in text:
            line = text[:text.index(RESULTS)].count("\n") + 1
            problems.append(f"{name}:{line}: points into {RESULTS} (say what the code does; numbers live there)")
        words = len((ast.get_docstring(ast.parse(text, name)) or "").split())
        if words > MAX_DOCSTRING_WORDS:
            problems.append(f"{name}: module docstring of {words} words (at most {MAX_DOCSTRING_WORDS})")
    return problems


def test_product_code_carries_no_results_and_short_module_docstrings():
    paths = product_modules()
    assert len(paths) > 100  # the folders are where they were
    problems = prose_problems(paths)
    assert not problems, "\n".join(problems)


def test_the_check_names_the_file_and_the_problem(tmp_path):
    (tmp_path / "client").mkdir()
    cited = tmp_path / "client" / "cited.py"
    cited.write_text('"""Short."""\n\n# 0.9 F1 (experiments/results/quality/x.md)\nX = 1\n')
    long = tmp_path / "client" / "long.py"
    long.write_text('"""' + "word " * (MAX_DOCSTRING_WORDS + 1) + '"""\n')
    fine = tmp_path / "client" / "fine.py"
    fine.write_text('"""What it does."""\n\nX = 1  # chosen by experiments/federation.py; see its results page\n')
    problems = prose_problems([cited, long, fine], tmp_path)
    assert problems[0].startswith("client/cited.py:3: points into experiments/results")
    assert problems[1] == f"client/long.py: module docstring of {MAX_DOCSTRING_WORDS + 1} words (at most 260)"
    assert len(problems) == 2
