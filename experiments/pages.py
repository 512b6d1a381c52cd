"""The results pages from their records: every results JSON under experiments/results whose
experiment registers a renderer in `RENDERERS` is rendered to its .md (the experiment's own report
function, fed the stored JSON alone: no runs/ folder, data or model), and each results folder's
README gets a generated index of its pages, newest first; results names moved into
results_files.ARCHIVED have their files moved to archive/ first. `NOT_GENERATED` says which
experiments' and pages' .md files are still written only by their runs (or by hand), and why.

    python experiments/pages.py            # write every generated page and index
    python experiments/pages.py --check    # write nothing; exit 1 naming each page out of date

tests/experiments/test_pages.py fails when a page differs from what its record renders."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import results_files
from results_files import ARCHIVED, GROUPS


@dataclass(frozen=True)
class Renderer:
    """The pages of results names matching `stems` (a regular expression over the whole name)
    whose JSON `accepts`, rendered by `render(module, data, stem)` with `module` the experiment."""
    module: str
    stems: str
    render: Callable[..., str]
    accepts: Callable[[object], bool] = lambda data: True


def federation_page(module, data: dict, stem: str) -> str:
    against = (data.get("record") or {}).get("against")
    other = None
    if against:  # a diagnosis variant's rows are kept in the record; a federation's are in its own JSON
        other = ({int(seed): rows for seed, rows in against["seeds"].items()} if "seeds" in against
                 else module.finished_seeds([], Path(), results_files.results_file(against["name"], ".json")))
    per_seed = {int(seed): rows for seed, rows in data["seeds"].items()}
    return module.report_text(per_seed, stem, data["corpus"], data, against and against["name"], other)[0]


def utility_page(module, data: dict, stem: str) -> str:
    per_seed = {int(seed): rows for seed, rows in data["seeds"].items()}
    return module.report_text(per_seed, data["corpus"], stem, data, data.get("record", {}).get("before"))[0]


def table_page(module, data, stem: str) -> str:
    """A page that results_files.write_results wrote: the experiment's table(JSON) and a line break."""
    return module.table(data) + "\n"


def report_page(module, data, stem: str) -> str:
    """A page that results_files.write_results wrote from the experiment's report(JSON)."""
    return module.report(data) + "\n"


def written_page(module, data, stem: str) -> str:
    """A page the experiment wrote as its page(JSON) returns it."""
    return module.page(data)


RENDERERS = (
    Renderer("federation", r"federation_(meddocan|physionet)_.+", federation_page,
             lambda data: isinstance(data, dict) and {"machine", "corpus", "seeds"} <= set(data)),
    Renderer("pseudonymization_utility", r"pseudonymization_utility_.+", utility_page),
    Renderer("nonphi_readback", r"nonphi_readback.*", table_page),
    Renderer("phi_candidate_search", r"phi_candidate_search.*", table_page),
    Renderer("pattern_layer", r"pattern_layer", table_page),
    Renderer("presidio_comparison", r"presidio_comparison", table_page),
    Renderer("simulated_misses", r"simulated_misses.*", table_page),
    Renderer("spanish_patterns", r"spanish_patterns.*", table_page),
    Renderer("stack_misses", r"stack_misses_.+", table_page),
    Renderer("reidentification_bound", r"reidentification_bound.*", table_page),
    Renderer("surrogate_coverage", r"surrogate_coverage_.+", table_page),
    Renderer("bench_distributed", r"distributed_training", report_page),
    Renderer("bench_pooled_memory", r"pooled_memory", report_page),
    Renderer("memory_cv", r"memory_cv5", report_page),
    Renderer("novelty_breakdown", r"novelty_breakdown_.+", report_page),
    Renderer("phi_memory", r"phi_memory_.+", report_page),
    Renderer("federation_paired", r"federation_.+_paired", report_page),
    Renderer("representation_diagnosis", r"federation_.+_diagnosis.*", written_page),
    Renderer("tagger_ensemble", r"baselines.*_ensemble", table_page),
    Renderer("type_breakdown", r"type_breakdown_.+", report_page),
    Renderer("input_noise_confusion", r"federation_input_noise", report_page),
    Renderer("load_uploads", r"load_uploads", lambda module, data, stem: module.report(data)),  # written as is
)
# What is not generated yet, and why: results names (pages a renderer would claim, whose record
# does not render them) and experiments (no renderer registered).
NOT_GENERATED = {
    # Pages a renderer claims but cannot render from their JSON.
    "phi_candidate_search": "run before the surrogates drew by shape (82a1bda): the script's text now describes "
                            "today's surrogates ('function words', 'shape set'); rerun to regenerate",
    "phi_candidate_search_physionet": "as phi_candidate_search",
    "load_uploads_faults": "its JSON predates the matmul rate report_faults prints",
    **dict.fromkeys(
        ("federation_meddocan_d300", "federation_meddocan_innoise",
         "federation_meddocan_innoise02", "federation_meddocan_p1short", "federation_meddocan_pcopy",
         "federation_meddocan_repunits", "federation_meddocan_self1"),
        "compared --against a diagnosis variant whose rows lie under runs/ only; a report since keeps them "
        "in the record"),
    # Experiments without a renderer.
    "adversarial.py": "a list of rows without the run's record; the table also reads baselines.json",
    "audit_seeds.py, whitebox_lookup.py, noise_lookup.py, export_schemes.py, shared_text_lookup.py, "
    "corpus_stats.py, classic_baselines.py, tagger_baselines.py, privacy_table.py":
        "pages written by older versions of their table functions or by hand (e.g. baselines.md lacks the "
        "official-metric columns the table now prints), or JSON that lacks the table's arguments "
        "(export_schemes' and whitebox_lookup's parsed options, noise_lookup's run): rerun, or store them",
    "recall_bias.py, tagger_layers.py":
        "their JSON lacks part of the page (recall_bias: each row's F1 interval and the number of test notes; "
        "tagger_layers: the per-type error table): store them, then render as type_breakdown's report",
    "bench_speed.py, bench_client.py, bench_corpus_speed.py, bench_demo.py, span_boundaries.py, "
    "common_value_surrogates.py": "the page is built inside main() from measurements the JSON keeps only in part",
}
INDEX_START = "<!-- index generated by experiments/pages.py: edit above this line -->"
INDEX_END = "<!-- end of the generated index -->"


def renderer(stem: str, data) -> Renderer | None:
    """The renderer of the results named `stem` holding `data`, if one claims it and it renders."""
    if stem in NOT_GENERATED:
        return None
    return next((r for r in RENDERERS if re.fullmatch(r.stems, stem) and r.accepts(data)), None)


def rendered_pages() -> dict[Path, str]:
    """Every generated page (its .md path) and the text its record renders; archived pages stay as
    they were when a newer result replaced them."""
    pages = {}
    for stored in sorted(path for group in GROUPS for path in (results_files.RESULTS / group).glob("*.json")):
        data = json.loads(stored.read_text())
        found = renderer(stored.stem, data)
        if found:
            pages[stored.with_suffix(".md")] = found.render(importlib.import_module(found.module), data, stored.stem)
    return pages


def archive_moves() -> dict[Path, Path]:
    """The files of each ARCHIVED results name still in a group folder, and where they go: a file
    belongs to the longest results name its name starts with (its .md, .json and figures)."""
    moves = {}
    for group in GROUPS:
        paths = sorted((results_files.RESULTS / group).iterdir())
        names = ARCHIVED | {path.name.split(".")[0] for path in paths if path.suffix in (".md", ".json")}
        for path in paths:
            stem = path.name.split(".")[0]
            owner = max((name for name in names if stem == name or stem.startswith(f"{name}_")), key=len, default=None)
            if owner in ARCHIVED:
                moves[path] = results_files.RESULTS / "archive" / path.name
    return moves


def page_line(page: Path, text: str) -> tuple[str, str]:
    """The date of the run of `page`, whose text is `text` (from its JSON's record or date, else the
    first date in the text; "" if neither says), and its first line."""
    first = next((line.lstrip("#").strip() for line in text.splitlines() if line.strip()), "")
    stored = page.with_suffix(".json")
    data = json.loads(stored.read_text()) if stored.exists() else None
    day = isinstance(data, dict) and ((data.get("record") or {}).get("date") or data.get("date"))
    written = re.search(r"\b(20\d\d-\d\d-\d\d)\b", text)
    return day or (written[1] if written else ""), first


def index(folder: Path, pages: dict[Path, str]) -> str:
    """`folder`'s README with its generated index of pages (newest first; `pages` the rendered
    texts, read instead of the files on disk) after the hand-written part."""
    lines = []
    for page in sorted(folder.glob("*.md")):
        if page.name != "README.md":
            day, first = page_line(page, pages.get(page) or page.read_text(encoding="utf-8"))
            lines.append((day, f"- {day or 'undated'} [{page.name}]({page.name})"
                               f"{' (generated)' * (page in pages)}: {first}"))
    title = "Superseded results (results_files.ARCHIVED)" if folder.name == "archive" else "Every page"
    body = [INDEX_START, "", f"## {title}, newest first", "",
            *(line for _, line in sorted(lines, key=lambda line: line[0], reverse=True)), "", INDEX_END]
    readme = (folder / "README.md").read_text(encoding="utf-8")
    return readme.split(INDEX_START)[0].rstrip("\n") + "\n\n" + "\n".join(body) + "\n"


def outputs() -> dict[Path, str]:
    """Every file the generator writes and its text: the pages, then the folders' READMEs."""
    pages = rendered_pages()
    readmes = {folder / "README.md": index(folder, pages)
               for folder in (results_files.RESULTS / name for name in (*GROUPS, "archive"))}
    return {**pages, **readmes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is out of date")
    args = parser.parse_args()
    moves = archive_moves()
    if args.check:
        stale = [f"{path.relative_to(results_files.RESULTS)}: archived, still in its group" for path in moves]
        stale += [str(path.relative_to(results_files.RESULTS)) for path, text in outputs().items()
                  if not path.exists() or path.read_text(encoding="utf-8") != text]
        if stale:
            sys.exit("out of date with their records (run python experiments/pages.py):\n" + "\n".join(stale))
        return
    for source, target in moves.items():
        source.rename(target)
    for path, text in outputs().items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(results_files.RESULTS)}")


if __name__ == "__main__":
    main()
