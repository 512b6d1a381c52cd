"""Where every experiment leaves its table: printed, and written to experiments/results/ as
<stem>.md (the Markdown table) and <stem>.json (the numbers behind it); how a score is
shown in those tables; and the commit a result was produced at."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

from deidpool.corpus.metrics import COLUMN_TITLES, format_score

RESULTS = Path(__file__).resolve().parent / "results"
# The score columns of the experiments' tables (keys of corpus.metrics.score_row): the official
# i2b2 2014 token HIPAA P/R/F1 and the F1's bootstrap interval, the project tokenizer's F1, entity strict P/R/F1.
SCORE_COLUMNS = ("token_official_hipaa_precision", "token_official_hipaa_recall", "token_official_hipaa_f1",
                 "token_official_hipaa_f1_interval", "token_hipaa_f1", "entity_strict_precision",
                 "entity_strict_recall", "entity_strict_f1")


def score_header(columns=SCORE_COLUMNS) -> str:
    """The titles of `columns` (score_row keys) as Markdown header cells, "a | b | c"."""
    return " | ".join(COLUMN_TITLES[key] for key in columns)


def over_seeds(rows: list[dict], key: str) -> str:
    """The table cell of score `key` over `rows` (one per seed): the value or its mean ± sd;
    an interval as [low, high] per seed; "n/a" where a row lacks the score (scored before it
    was recorded: rescore that row)."""
    if any(key not in row for row in rows):
        return "n/a"
    values = [row[key] for row in rows]
    if isinstance(values[0], (list, tuple)) or len(values) == 1:
        return " ".join(format_score(value) for value in values)
    return f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"


def spread(values: list[float], digits: int = 3) -> str:
    """mean ± sd (the value alone for one, "-" for none)."""
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def configuration_folder(name: str) -> str:
    """The folder name of a configuration's run under runs/<results name>/: "three-phase N=100,
    seed 1" -> "three-phase_N100_seed_1"."""
    return name.replace(",", "").replace(" ", "_").replace("=", "")


def git_commit() -> str:
    """The short hash of the checkout's HEAD, or "unknown" outside a git checkout."""
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS.parent, capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def write_results(stem: str, table: str, data) -> None:
    """Print `table` and write it and `data` (JSON-ready) under RESULTS."""
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.md").write_text(table + "\n")
    (RESULTS / f"{stem}.json").write_text(json.dumps(data, indent=2) + "\n")


def save_figure(figure, path: Path, dpi: int = 120) -> None:
    """Lay `figure` out tightly, write it to `path` and free it."""
    from matplotlib import pyplot

    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    pyplot.close(figure)
