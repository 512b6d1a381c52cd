"""Where every experiment leaves its table: printed, and written to experiments/results/<group>/
as <stem>.md (the Markdown table) and <stem>.json (the numbers behind it), the group being the
question the results answer; how a score is shown in those tables; and the commit a result was
produced at; the record of the run each results file keeps beside its numbers (`record`), from which
experiments/pages.py renders the pages again; and the run record each run folder under runs/ keeps
of what trained it (`write_run_record`), from which a record learns the commits its results were
trained at."""

from __future__ import annotations

import json
import re
import shlex
import statistics
import subprocess
import sys
from collections.abc import Iterable
from datetime import date
from pathlib import Path

from deidpool.corpus.metrics import COLUMN_TITLES, format_score

RESULTS = Path(__file__).resolve().parent / "results"
RUN_RECORD = "run.json"  # in a run folder under runs/: what started training it (`write_run_record`)
# The folder under RESULTS of each question, with the prefixes of the results names that answer it.
GROUPS = {
    "quality": ("baselines", "classic_baselines", "pattern_layer", "spanish_patterns", "presidio_comparison",
                "span_boundaries", "corpus_stats", "memory_cv"),
    "privacy": ("adversarial", "audit", "export_schemes", "noise", "privacy_table", "reidentification_bound",
                "shared_text_lookup", "whitebox_lookup", "document_linkage", "pseudonymization_utility",
                "simulated_misses", "nonphi_readback", "phi_candidate_search"),
    "federation": ("federation", "type_breakdown", "novelty_breakdown", "phi_memory", "surrogate_coverage",
                   "stack_misses"),
    "speed": ("speed", "client_speed", "corpus_speed", "demo", "distributed_training", "pooled_memory"),
    "server": ("load_uploads",),
}
# Results names a newer result replaced (results/archive/README.md says which): kept in archive/;
# <group>_answers_until_2026-11-29 is a group README's long answer table, replaced by its short one.
ARCHIVED = frozenset({"adversarial_smoke", "adversarial_all_splits", "adversarial_export",
                      "adversarial_N100_audit_passes15", "baselines_official", "federation",
                      "federation_meddocan_smoke"}) | {f"{group}_answers_until_2026-11-29" for group in GROUPS}
# The score columns of the experiments' tables (keys of corpus.metrics.score_row): the official
# i2b2 2014 token HIPAA P/R/F1 and the F1's bootstrap interval, the project tokenizer's F1, entity strict P/R/F1.
SCORE_COLUMNS = ("token_official_hipaa_precision", "token_official_hipaa_recall", "token_official_hipaa_f1",
                 "token_official_hipaa_f1_interval", "token_hipaa_f1", "entity_strict_precision",
                 "entity_strict_recall", "entity_strict_f1")


def results_folder(stem: str) -> Path:
    """The folder of the results named `stem`: archive/ if they were superseded, else the folder
    of the group whose prefix `stem` starts with; RESULTS itself for a stem no group claims."""
    if stem in ARCHIVED:
        return RESULTS / "archive"
    return RESULTS / next((group for group, prefixes in GROUPS.items() if stem.startswith(prefixes)), "")


def results_file(stem: str, ending: str) -> Path:
    """The file <stem><ending> of the results named `stem` (e.g. "privacy_table", "_pareto.png")."""
    return results_folder(stem) / f"{stem}{ending}"


def points_cell(difference: float, interval) -> str:
    """A difference of F1 scores and its (low, high) interval, all in points: "+1.3 [+0.9, +1.7]"."""
    low, high = interval
    return f"{difference:+.1f} [{low:+.1f}, {high:+.1f}]"


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


def seeds_as_numbers(rows: list[dict]) -> list[dict]:
    """Paired rows (federation.paired_rows) as a results JSON keeps them, their "seeds" keyed by
    strings, keyed by the seed numbers again (as federation.paired_table reads them)."""
    return [{**row, "seeds": {int(seed): cell for seed, cell in row["seeds"].items()}} for row in rows]


def configuration_folder(name: str) -> str:
    """The folder name of a configuration's run under runs/<results name>/: "three-phase N=100,
    seed 1" -> "three-phase_N100_seed_1"."""
    return name.replace(",", "").replace(" ", "_").replace("=", "")


def git_commit() -> str:
    """The short hash of the checkout's HEAD, or "unknown" outside a git checkout."""
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS.parent, capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


_SCALARS = re.compile(r"\[[^\[\]{}]*\]")  # a list of numbers and strings
_LISTS_OF_SCALARS = re.compile(r"\[\s*\n\s*(\[[^\[\]{}\n]*\](?:,\s*\n\s*\[[^\[\]{}\n]*\])*)\s*\n\s*\]")
_BREAK = re.compile(r"\s*\n\s*")  # whitespace with a line break: never inside a JSON string
_EDGE_BREAKS = re.compile(r"^\s*\n\s*|\s*\n\s*$")


def json_text(data) -> str:
    """`data` as indented JSON, with every list of scalars, and every list of such lists (e.g. a
    note's predicted spans), on one line: stored predictions take a line per note, not per number."""
    def one_line(inner: str) -> str:
        return "[" + _BREAK.sub(" ", _EDGE_BREAKS.sub("", inner)) + "]"

    text = _SCALARS.sub(lambda m: one_line(m[0][1:-1]), json.dumps(data, indent=2))
    return _LISTS_OF_SCALARS.sub(lambda m: one_line(m[1]), text) + "\n"


def invocation() -> dict:
    """The command line, the commit and the date of this process."""
    return {"command": shlex.join(["python", *sys.argv]), "commit": git_commit(), "date": str(date.today())}


def write_run_record(folder: Path, **config) -> None:
    """Keep in `folder`'s RUN_RECORD what trains it: the `invocation` that started it and `config`
    (e.g. seed, budget, data), written once; a resume at a commit the record does not name yet
    appends its invocation to the record's "resumed" list. A folder that holds files but no run
    record was started before run records were kept: its start is recorded as "unknown"."""
    path = folder / RUN_RECORD
    now = invocation()
    stored = json.loads(path.read_text()) if path.exists() else None
    started_unrecorded = stored is None and folder.exists() and any(folder.iterdir())
    kept = stored or {**(dict.fromkeys(now, "unknown") if started_unrecorded else now), **config}
    if now["commit"] not in run_commits(kept):
        kept = {**kept, "resumed": [*kept.get("resumed", []), now]}
    if kept != stored:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json_text(kept))


def run_commits(run: dict) -> list[str]:
    """The commits that trained the run of the run record `run`: the one that started it, then each resume's."""
    return [run["commit"], *(resumed["commit"] for resumed in run.get("resumed", []))]


def trained_at(folders: Iterable[Path]) -> list[str] | None:
    """The sorted distinct commits the run records of the run folders `folders` name; None where none has one."""
    records = [json.loads((folder / RUN_RECORD).read_text()) for folder in folders if (folder / RUN_RECORD).is_file()]
    return sorted({commit for run in records for commit in run_commits(run)}) or None


def recorded_folder(path: Path) -> list[Path]:
    """The nearest of `path` (a run folder or file a result reads) and the folders above it that
    holds a run record, as a list for `record(run_folders=...)` (a federation keeps one per seed
    folder, for the representer, taggers and pipelines inside it); empty where none does."""
    path = Path(path).resolve()
    return next(([folder] for folder in (path, *path.parents) if (folder / RUN_RECORD).is_file()), [])


def record(run_folders: Iterable[Path] = (), **config) -> dict:
    """The record of the run that writes results now, kept under "record" in its results JSON: its
    `invocation`, "trained_at" (`trained_at` of the run folders `run_folders` the results read, where
    any has a run record), and `config` (e.g. seeds, budget, data, machine)."""
    commits = trained_at(run_folders)
    return {**invocation(), **({"trained_at": commits} if commits else {}), **config}


def commit_text(run: dict) -> str:
    """"commit X" of the record `run` (X: the commit that reported its results), or "trained at A,
    B; reported at X" where its "trained_at" names other commits."""
    trained = run.get("trained_at")
    if trained and trained != [run["commit"]]:
        return f"trained at {', '.join(trained)}; reported at {run['commit']}"
    return f"commit {run['commit']}"


def write_results(stem: str, table: str, data, **config) -> None:
    """Print `table` and write it and `data` (JSON-ready, as `json_text`) to the results files of
    `stem`; a dict `data` gets the run's `record(**config)` under "record" unless it holds one (a
    list keeps its shape: its readers index it)."""
    print(table)
    if isinstance(data, dict) and "record" not in data:
        data = {**data, "record": record(**config)}
    results_file(stem, ".md").parent.mkdir(parents=True, exist_ok=True)
    results_file(stem, ".md").write_text(table + "\n")
    results_file(stem, ".json").write_text(json_text(data))


def save_figure(figure, path: Path, dpi: int = 120) -> None:
    """Lay `figure` out tightly, write it to `path` and free it."""
    from matplotlib import pyplot

    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    pyplot.close(figure)
