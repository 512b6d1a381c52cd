"""Several audits of one representer, side by side (issue: privacy): the reports that `deidpool
audit` wrote with different `--seed`s (attack initialisation and pair draws), every attack's
held-out accuracy per seed and over seeds, the verdicts, the inversion beside its baselines and
the re-identification bound, and every target attack's held-out answers pooled over the seeds
(`pooled_over_seeds`); writes experiments/results/privacy/<results name>.{md,json} (name it audit_*).

    python experiments/audit_seeds.py REPORT_DIR [REPORT_DIR ...] --results-name NAME [--title TEXT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from deidpool.adversary.verdicts import chance_rule, chance_verdict
from results_files import git_commit, write_results

# What the audits side by side must share (config.json keys): only the seed may differ.
SAME = ("representer", "export_path", "neighbours", "pseudonymization", "epochs", "passes", "units", "attacker_design",
        "held_out_draws")
BEFORE = {"held_out_draws": 1}  # the value of a setting in reports made before it was recorded


def read_report(folder: Path) -> dict:
    """A report folder's metrics.json and config.json, as {"metrics", "config"}."""
    try:
        return {"metrics": json.loads((folder / "metrics.json").read_text()),
                "config": json.loads((folder / "config.json").read_text())}
    except FileNotFoundError as error:
        raise SystemExit(f"{folder}: no finished audit report ({Path(error.filename).name} missing)") from None


def measurements(metrics: dict) -> dict[str, float]:
    """One audit's numbers by row name: every adversary output, the lookup rates, the inversions
    and their baselines (top-1 / top-10) and, on the export path, the bound's mean success."""
    rows = {f"{name} ({head})": result["rate"] for name, attack in metrics["attacks"].items()
            for head, result in attack["heads"].items()}
    rows.update({f"lookup: {name}": result["rate"] for name, result in metrics["lookup"].items()})
    baselines = {f"baseline {name}": result for name, result in metrics["inversion_baselines"].items()}
    inversions = {**metrics["inversion"], **baselines}
    for name, result in inversions.items():
        rows.update({f"inversion {name} top-1": result["top1"], f"inversion {name} top-10": result["top10"]})
    for prior, value in metrics.get("bound", {}).get("overall", {}).get("mean_success", {}).items():
        rows[f"bound, {prior} prior"] = value
    return rows


def target_rates(metrics: dict) -> list[float]:
    """The held-out rate of every attack on the target: each adversary output and the lookup."""
    adversaries = [head["rate"] for name, result in metrics["attacks"].items() if name.startswith("target/")
                   for head in result["heads"].values()]
    return [*adversaries, metrics["lookup"]["target"]["rate"]]


def strongest_attack(metrics: dict) -> float:
    """The best held-out rate of any attack on the target."""
    return max(target_rates(metrics))


def target_outputs(metrics: dict) -> dict[str, dict]:
    """Every output whose verdict judges the target, by row name: the target adversaries' heads,
    the partner-only floor and the lookup ({"rate", "trials"} each)."""
    outputs = {f"{name} ({head})": result for name, attack in metrics["attacks"].items()
               if not name.startswith(("raw/", "p1/")) for head, result in attack["heads"].items()}
    return {**outputs, "lookup: target": metrics["lookup"]["target"]}


def pooled_over_seeds(reports: list[dict]) -> list[str]:
    """Markdown: each target output's held-out answers of every seed counted together for its rate,
    judged by the audit's own rule (`chance_verdict`, at the family confidence the first report used)
    on the effective answers of one seed: the seeds ask about the same held-out pairs, so they add
    attackers, not sentences, and the pooled interval is no narrower than a single audit's."""
    per_seed = [target_outputs(report["metrics"]) for report in reports]
    tests = reports[0]["metrics"].get("judged_outputs", 1)
    lines = ["", "## Target outputs pooled over the seeds", "",
             f"Each of the {len(per_seed[0])} target outputs with every seed's answers counted together: its rate "
             "is the seeds' answers right over their answers, and its interval is read on one seed's effective "
             "answers (their mean over the seeds), since every seed judges the same held-out pairs (draws of seed "
             "0) with attackers of its own. Averaging attackers steadies the rate; it does not add held-out "
             f"sentences. Judged by the current rule, at the confidence of one of {tests} outputs: {chance_rule()}. "
             "A supplement to the per-seed verdicts, not a replacement.", "",
             "| output | answers right / answers | rate | effective answers | interval | verdict |",
             "|---|---:|---:|---:|---|---|"]
    for name in per_seed[0]:
        found = [outputs[name] for outputs in per_seed if name in outputs]
        right = sum(round(output["rate"] * output["trials"]) for output in found)
        total = sum(output["trials"] for output in found)
        effective = statistics.mean(output.get("effective_trials", output["trials"]) for output in found)
        verdict = chance_verdict(right / total, total, tests, design_effect=total / effective)
        low, high = verdict["ci"]
        lines.append(f"| {name} | {right} / {total} | {right / total:.3f} | {effective:.0f} | [{low:.3f}, {high:.3f}] "
                     f"| {verdict['verdict']} |")
    return lines


def table(reports: list[dict], title: str) -> str:
    seeds = [report["config"]["seed"] for report in reports]
    per_seed = [measurements(report["metrics"]) for report in reports]
    first = reports[0]["metrics"]
    lines = [f"# {title}", "",
             f"{len(reports)} audits (seeds {', '.join(map(str, seeds))}) of "
             f"`{reports[0]['config']['representer']}`, {first['path']} path, N = {first['neighbours']}, "
             f"{first['epochs']} epochs x {first['passes']} draws, {first['held_out_pairs']} held-out pairs, "
             f"attacker design {first.get('attacker_design', 'paper')}; commit {git_commit()}. Each audit's own "
             f"reading: {chance_rule(first)}; positive controls must reach {first['control_threshold']}.", "",
             "| verdict | " + " | ".join(f"seed {seed}" for seed in seeds) + " |",
             "|---|" + "---|" * len(seeds),
             "| overall | " + " | ".join(report["metrics"]["verdict"] for report in reports) + " |", "",
             "| measurement | " + " | ".join(f"seed {seed}" for seed in seeds) + " | mean ± sd |",
             "|---|" + "---:|" * (len(seeds) + 1)]
    for name in per_seed[0]:
        values = [rows.get(name) for rows in per_seed]
        known = [value for value in values if value is not None]
        spread = f"{statistics.mean(known):.3f} ± {statistics.stdev(known):.3f}" if len(known) > 1 else "-"
        cells = " | ".join("-" if value is None else f"{value:.3f}" for value in values)
        lines.append(f"| {name} | {cells} | {spread} |")
    if len(reports) > 1:
        lines += pooled_over_seeds(reports)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", type=Path, nargs="+", help="audit report folders (deidpool audit --out)")
    parser.add_argument("--results-name", required=True, help="results/<name>.{md,json}")
    parser.add_argument("--title", default="Privacy audits over seeds")
    args = parser.parse_args()
    reports = [read_report(folder) for folder in args.reports]
    for key in SAME:
        values = {str(report["config"].get(key, BEFORE.get(key))) for report in reports}
        if len(values) > 1:
            sys.exit(f"the reports differ in {key} ({', '.join(sorted(values))}): only seeds may differ")
    write_results(args.results_name, table(reports, args.title),
                  {"reports": [str(folder) for folder in args.reports], "audits": reports})


if __name__ == "__main__":
    main()
