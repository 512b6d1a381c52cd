"""The demo's results as text and as a self-contained HTML page (tables + PNG plots beside it)."""

from __future__ import annotations

import html
import shutil
import textwrap
from pathlib import Path

from deidpool.contribution.container import PSEUDONYMIZATION_SCHEMES
from deidpool.corpus.metrics import COLUMN_TITLES, format_score
from deidpool.pseudonymization.schemes import PRIORS as BOUND_PRIORS

# (key of deidpool.demo.scores, column title): the official token HIPAA measure first, the project
# tokenizer's F1 beside it
SCORE_COLUMNS = tuple((key, COLUMN_TITLES[key]) for key in (
    "token_official_hipaa_precision", "token_official_hipaa_recall", "token_official_hipaa_f1",
    "token_official_hipaa_f1_interval", "token_hipaa_f1", "entity_strict_f1"))


# What each contribution header's pseudonymization scheme did, for the report's readers
SCHEME_TEXT = {
    PSEUDONYMIZATION_SCHEMES["surrogates"]: (
        "Every labeled PHI token was replaced by a realistic surrogate of its type and shape, drawn whatever the "
        "original, before the representer ran; function words inside a name and the words that name a kind of "
        "place (such as \"Hospital\") stay as written and count as named. A surrogate tells nothing about which "
        "original it replaced, so the bound is what the prior alone gives, plus those kept words."),
    PSEUDONYMIZATION_SCHEMES["groups"]: (
        "Every labeled PHI token was replaced by a member of its group of N to 2N - 1 near embedding words "
        "(numbers from their block) before the representer ran."),
    PSEUDONYMIZATION_SCHEMES["neighbours"]: (
        "Every labeled PHI token was replaced by one of its N nearest embedding neighbours (numbers by plausible "
        "surrogates) before the representer ran."),
}


def readable(value):
    """`value` (a fact of a stage: a number, text, or a dict or list of them) with every float rounded
    to 3 decimals, for a log line or a table cell."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {key: readable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [readable(item) for item in value]
    return value


def stage_rows(summary: dict) -> list[tuple[str, str, str]]:
    """(stage, seconds, facts) per stage."""
    return [(stage["name"], f"{stage['seconds']:.1f}",
             "; ".join(f"{key}: {readable(value)}" for key, value in stage["details"].items()))
            for stage in summary["stages"]]


def score_rows(summary: dict) -> list[tuple[str, ...]]:
    return [(name, *(format_score(scores[key]) for key, _ in SCORE_COLUMNS))
            for name, scores in summary["scores"].items()]


def text_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = [header, tuple("-" * width for width in widths), *rows]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)


def format_summary(summary: dict) -> str:
    """The final summary printed by `deidpool demo`."""
    return "\n\n".join([
        text_table(("stage", "seconds", "facts"), stage_rows(summary)),
        text_table(("tagger on test notes", *(title for _, title in SCORE_COLUMNS)), score_rows(summary)),
        f"audit verdict: {summary['audit']['verdict']}; wall time {summary['wall_seconds']:.0f} s; "
        f"{memory_text(summary['peak_memory_mb'])}",
    ])


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def memory_text(memory: dict) -> str:
    return ("peak memory " + ", ".join(f"{megabytes:.0f} MB ({process})" for process, megabytes in memory.items())
            + " (each process's VmHWM; the roles on this machine run in these processes)")


def _html_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def plot_training(summary: dict, path: Path) -> None:
    """Validation F1 per epoch: the provider's three phases and the pooled run."""
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    provider = [record for record in summary["provider_history"] if "val_f1" in record]
    axes.plot(range(1, len(provider) + 1), [record["val_f1"] for record in provider], marker="o",
              label="provider (P1 then P3 epochs)")
    pooled = summary["pooled_run"]["epochs"]
    axes.plot([record["epoch"] for record in pooled], [record["val_f1"] for record in pooled], marker="s",
              label="pooled tagger (server run)")
    axes.set(xlabel="epoch", ylabel="validation token PHI F1", ylim=(0, 1))
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def plot_scores(summary: dict, path: Path) -> None:
    """Test scores of the provider-only and the pooled pipeline, side by side, each F1 with its
    bootstrap interval as an error bar."""
    from matplotlib import pyplot

    columns = [(key, title) for key, title in SCORE_COLUMNS if not key.endswith("_interval")]
    figure, axes = pyplot.subplots(figsize=(8, 4.5))
    names = list(summary["scores"])
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        scores = summary["scores"][name]
        values = [scores[key] for key, _ in columns]
        intervals = [scores.get(f"{key}_interval", (scores[key], scores[key])) for key, _ in columns]
        errors = [[max(0.0, value - low) for value, (low, _) in zip(values, intervals)],
                  [max(0.0, high - value) for value, (_, high) in zip(values, intervals)]]
        axes.bar([column + index * width for column in range(len(columns))], values, width, yerr=errors, capsize=3,
                 label=name)
    axes.set_xticks([column + width * (len(names) - 1) / 2 for column in range(len(columns))],
                    [textwrap.fill(title, 18) for _, title in columns], fontsize="x-small")
    axes.set(ylabel="score on the test notes", ylim=(0, 1))
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def write_report(summary: dict, out: Path, audit_plot: Path | None = None) -> Path:
    """out/report.html with the tables, and its plots in out/plots/; returns the page's path."""
    import matplotlib

    matplotlib.use("Agg")
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    plot_training(summary, plots / "training.png")
    plot_scores(summary, plots / "scores.png")
    figures = [("training.png", "Validation F1 per epoch"), ("scores.png", "Scores on the test notes")]
    if audit_plot is not None and audit_plot.exists():
        shutil.copyfile(audit_plot, plots / "audit.png")
        figures.append(("audit.png", "Privacy audit: held-out accuracy of the attacks per epoch"))
    contributions = [(name, str(facts["sentences"]), str(facts["tokens"]), f"{facts['bytes']:,}",
                      facts["pseudonymization"],
                      "-" if facts["pseudonymization"] == PSEUDONYMIZATION_SCHEMES["surrogates"]
                      else str(facts["neighbours"]), *(_share(facts[f"bound_{prior}"]) for prior in BOUND_PRIORS))
                     for name, facts in summary["contributions"].items()]
    schemes = {facts["pseudonymization"] for facts in summary["contributions"].values()}
    audit = summary["audit"]
    audit_rows = [(name, f"{accuracy:.3f}") for name, accuracy in audit["attacks"].items()]
    audit_rows.append(("lookup (A2) on the target", f"{audit['lookup']:.3f}"))
    memory = summary["peak_memory_mb"]
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>deidpool demo report</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto;}}table{{border-collapse:collapse;margin:1em 0;}}
td,th{{border:1px solid #bbb;padding:0.3em 0.6em;text-align:left;}}th{{background:#eee;}}img{{max-width:100%;}}</style>
</head><body>
<h1>deidpool demo report</h1>
<p>Data: {html.escape(summary['data'])}. Wall time {summary['wall_seconds']:.0f} s;
{html.escape(memory_text(memory))}.</p>
<h2>Tagger scores on the test notes</h2>
{_html_table(("pipeline", *(title for _, title in SCORE_COLUMNS)), score_rows(summary))}
<h2>Privacy audit: {html.escape(audit['verdict'])}</h2>
{_html_table(("attack", "held-out accuracy"), audit_rows)}
<h2>Contributions</h2>
<p>{" ".join(html.escape(SCHEME_TEXT[scheme]) for scheme in sorted(schemes))} The
re-identification bound is the best attacker's mean chance of naming an original PHI token even from an
exactly recovered surrogate, with every candidate equally likely (uniform), words as frequent as in
general text (frequency) or as in the export's own PHI (empirical: the attacker knows that distribution).</p>
{_html_table(("institution", "sentences", "tokens", "bytes", "pseudonymization", "N",
              *(f"bound ({prior})" for prior in BOUND_PRIORS)), contributions)}
<h2>Stages</h2>
{_html_table(("stage", "seconds", "facts"), stage_rows(summary))}
{"".join(f'<h2>{html.escape(title)}</h2><img src="plots/{name}" alt="{html.escape(title)}">'
         for name, title in figures)}
</body></html>
"""
    path = out / "report.html"
    path.write_text(page)
    return path
