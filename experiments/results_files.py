"""Where every experiment leaves its table: printed, and written to experiments/results/ as
<stem>.md (the Markdown table) and <stem>.json (the numbers behind it)."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def write_results(stem: str, table: str, data) -> None:
    """Print `table` and write it and `data` (JSON-ready) under RESULTS."""
    print(table)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.md").write_text(table + "\n")
    (RESULTS / f"{stem}.json").write_text(json.dumps(data, indent=2) + "\n")
