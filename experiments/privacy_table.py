"""The privacy experiment's table and Pareto plot (issue: privacy, section 4), gathered from
what the other experiments wrote to experiments/results/ (nothing is trained here):

- the representers: adversarial.py's rows (`--representers`, e.g. adversarial_reference): one
  per trained representer (a seed), its training minutes and its bare-path audit (the raw export);
- export-path audits: audit_seeds.py's files (`--audits`): `deidpool audit` reports of a
  representer's pseudonymize-then-represent export at some N;
- taggers retrained on exports, as the pooling server trains: export_schemes.py's files
  (`--taggers`), alone and merged with the pattern layer;
- the non-private tagger and the pseudonymized-text baseline: tagger_baselines.py's rows
  (`--baselines`); the pseudonymized text's attack is the audits' lookup on shared text at
  its N and scheme.

A configuration is a procedure and an export (raw, or a scheme at N). Its numbers are averaged
per representer first (over its audit and tagger seeds), then given as mean ± sd over
representers, so the spread is the representer seeds'; every cell says how many it rests on.
The strongest attack is the best held-out rate of any attack on the target (adversary output
or lookup); a configuration that shares raw text is drawn at 1.0 (its text is read as it is).

    python experiments/privacy_table.py [--representers adversarial_reference]
        [--audits audit_pooled_reference_groups ...] [--taggers export_schemes_f1_stopping ...]
        [--baselines baselines_f1_stopping] [--results-name privacy_table]

Writes results/privacy/<results name>.{md,json} and <results name>_pareto.png.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from audit_seeds import strongest_attack, target_rates  # noqa: E402
from deidpool.adversary.verdicts import EXPORT_PATH  # noqa: E402
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY  # noqa: E402
from results_files import configuration_folder, git_commit, results_file, save_figure, spread, write_results  # noqa: E402

PRIORS = ("uniform", "frequency", "empirical")
NON_PRIVATE = "GloVe + casing"  # tagger_baselines.py's name of the non-private tagger
RAW_TEXT = 1.0  # the strongest attack drawn for shared raw text


def run_of(path: str) -> str:
    """The run folder under runs/ a representer or run path names: "<results>/<configuration>"
    of runs/<results>/<configuration>[/training/models/representer.keras]."""
    parts = Path(path).parts
    start = len(parts) - 1 - parts[::-1].index("runs") if "runs" in parts else 0
    end = parts.index("training") if "training" in parts else len(parts)
    return "/".join(parts[start + 1:end])


def export_label(scheme: str | None, neighbours: int) -> str:
    """A configuration's export: raw (`scheme` None), or pseudonymized under `scheme` among N."""
    return "raw export" if scheme is None else f"{scheme} export N={neighbours}"


class Gathered:
    """Every number found, by configuration and representer run."""

    def __init__(self):
        self.procedure: dict[str, str] = {}  # run -> procedure
        self.train_minutes: dict[str, float] = {}
        self.audits = defaultdict(lambda: defaultdict(list))  # configuration -> run -> audit metrics
        self.taggers = defaultdict(lambda: defaultdict(list))  # configuration -> run -> score rows
        self.baselines = defaultdict(list)  # configuration -> tagger_baselines rows

    def configuration(self, run: str, export: str) -> str:
        procedure = self.procedure.get(run, "three-phase")
        return f"{'paper representer' if procedure == 'three-phase' else procedure.upper()}, {export}"

    def add_representers(self, results_name: str, rows: list[dict]) -> None:
        for row in rows:
            run = f"{results_name}/{configuration_folder(row['name'])}"
            self.procedure[run] = row["procedure"]
            self.train_minutes[run] = row["train_seconds"] / 60
            audit = row.get("audit")
            if audit:
                self.audits[self.configuration(run, export_label(None, audit["neighbours"]))][run].append(
                    {**audit, "pseudonymization": None})

    def add_audits(self, data: dict) -> None:
        for audit in data["audits"]:
            metrics, config = audit["metrics"], audit["config"]
            run = run_of(config["representer"])
            scheme = config.get("pseudonymization") if metrics["path"] == EXPORT_PATH else None
            self.audits[self.configuration(run, export_label(scheme, metrics["neighbours"]))][run].append(
                {**metrics, "pseudonymization": scheme})

    def add_taggers(self, data: dict) -> None:
        run = run_of(data["run"])
        for row in data["rows"]:
            if row["seed"] == "ensemble":
                continue
            export = export_label(None if row["scheme"] == "raw" else row["scheme"], row["neighbours"])
            self.taggers[self.configuration(run, export)][run].append(row)

    def add_baselines(self, rows: list[dict]) -> None:
        for row in rows:
            if row["corpus"] != "physionet" or row.get("keep_originals"):
                continue
            if row["name"] == NON_PRIVATE:
                self.baselines["non-private tagger (raw text)"].append(row)
            elif row.get("neighbours"):
                self.baselines[f"pseudonymized text, {row['scheme']} N={row['neighbours']}"].append(row)


def per_run(found: dict[str, list], value) -> list[float]:
    """`value` averaged within each representer run (over the entries that have it)."""
    means = []
    for entries in found.values():
        values = [v for v in map(value, entries) if v is not None]
        if values:
            means.append(statistics.mean(values))
    return means


def f1_alone(row: dict) -> float:
    return row[PRIMARY]


def f1_patterns(row: dict) -> float | None:
    return (row.get("patterns") or {}).get(PRIMARY)


def bound(prior: str):
    return lambda metrics: metrics.get("bound", {}).get("overall", {}).get("mean_success", {}).get(prior)


def text_audits(audits: dict, scheme: str, neighbours: int) -> list[dict]:
    """Every export-path audit at `scheme` and N: their lookup on the pseudonymized text and
    their bound are the pseudonymized-text baseline's too."""
    return [metrics for found in audits.values() for entries in found.values() for metrics in entries
            if metrics["path"] == EXPORT_PATH and metrics["neighbours"] == neighbours
            and metrics["pseudonymization"] == scheme and "shared text" in metrics["lookup"]]


def summarise(gathered: Gathered) -> list[dict]:
    """One dict per configuration: its numbers, each as the list it is averaged from."""
    rows = []
    for name, found in gathered.baselines.items():
        pseudonymized = "scheme" in found[0]
        audits = text_audits(gathered.audits, found[0]["scheme"], found[0]["neighbours"]) if pseudonymized else []
        rows.append({"configuration": name, "representers": 0, "audits": len(audits), "taggers": len(found),
                     "f1": [r[PRIMARY] for r in found], "f1_patterns": [p for p in map(f1_patterns, found) if p],
                     "attack": [m["lookup"]["shared text"]["rate"] for m in audits] if pseudonymized else [RAW_TEXT],
                     "verdicts": {}, "lookup": [], "inversion": [], "frequency_guess": [],
                     "bound": {prior: [v for v in map(bound(prior), audits) if v is not None] for prior in PRIORS},
                     "train_minutes": [r["train_seconds"] / 60 for r in found]})
    for name in sorted(set(gathered.audits) | set(gathered.taggers)):
        audits, taggers = gathered.audits.get(name, {}), gathered.taggers.get(name, {})
        runs = sorted(set(audits) | set(taggers))
        verdicts = defaultdict(int)
        for entries in audits.values():
            for metrics in entries:
                verdicts[metrics["verdict"]] += 1
        rows.append({"configuration": name, "representers": len(runs),
                     "audits": sum(map(len, audits.values())), "taggers": sum(map(len, taggers.values())),
                     "f1": per_run(taggers, f1_alone), "f1_patterns": per_run(taggers, f1_patterns),
                     "attack": per_run(audits, strongest_attack),
                     "verdicts": dict(verdicts),
                     "lookup": per_run(audits, lambda m: m["lookup"]["target"]["rate"]),
                     "inversion": per_run(audits, lambda m: m["inversion"]["target"]["top1"]),
                     "frequency_guess": per_run(audits, lambda m: m.get("inversion_baselines", {})
                                                .get("frequency", {}).get("top1")),
                     "bound": {prior: per_run(audits, bound(prior)) for prior in PRIORS},
                     "train_minutes": [gathered.train_minutes[run] for run in runs if run in gathered.train_minutes]})
    return rows


def chance_maximum(outputs: int, trials: int) -> float:
    """The expected largest of `outputs` independent rates exactly at chance on `trials` pairs
    each (normal approximation): what the strongest attack reads when nothing can be found."""
    x = np.linspace(-8, 8, 4001)
    density = np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    below = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    expected = np.trapezoid(x * outputs * density * below ** (outputs - 1), x)
    return 0.5 + expected * 0.5 / math.sqrt(trials)


def table(rows: list[dict], sources: dict, design: tuple[int, int] | None = None) -> str:
    """The Markdown table; `design` = (target rates, held-out pairs) when every audit shares them."""
    at_chance = (f" With nothing to find, the largest of {design[0]} target rates on {design[1]} held-out pairs "
                 f"each is itself expected at {chance_maximum(*design):.3f}, not 0.5." if design else "")
    lines = ["# Privacy and utility of each export (PhysioNet, all training splits)", "",
             f"Gathered by `python experiments/privacy_table.py` at commit {git_commit()} from "
             + "; ".join(f"{kind}: {', '.join(f'`{name}`' for name in names)}" for kind, names in sources.items())
             + ". Mean ± sd over representer seeds (each representer's audits and retrained taggers averaged "
             "first); baselines over their tagger seeds. F1: the tagger retrained on the exports (as the pooling "
             f"server trains), {COLUMN_TITLES[PRIMARY]} on `test`. Strongest attack: the best held-out rate of any "
             "adversary output or the lookup on the target (chance 0.5; shared raw text counted as 1.0; the "
             "pseudonymized text's is the lookup on that text, handed the original's export: under groups it "
             "prefers the real word whatever the export, and both directions together sit at chance, "
             f"shared_text_lookup.md).{at_chance} Bound: the best attacker's mean success at "
             "recovering a hidden PHI token from its surrogate read exactly (uniform / wordfreq / the export's own "
             "PHI as prior); inversion: the audit's inverter, top-1 of hidden PHI tokens, beside the frequency guess.",
             "",
             "| configuration | representers / audits / taggers | F1 alone | F1 + patterns | strongest attack | "
             "verdicts | lookup | inversion top-1 (frequency guess) | bound uniform / frequency / empirical | "
             "train min (representer; tagger for baselines) |", "|---|---|---:|---:|---:|---|---:|---|---|---:|"]
    for row in rows:
        verdicts = ", ".join(f"{count} {verdict}" for verdict, count in sorted(row["verdicts"].items())) or "-"
        inversion = spread(row["inversion"])
        if row["frequency_guess"]:
            inversion += f" ({spread(row['frequency_guess'])})"
        bounds = " / ".join(spread(row["bound"][prior]) for prior in PRIORS)
        lines.append(f"| {row['configuration']} | {row['representers']} / {row['audits']} / {row['taggers']} | "
                     f"{spread(row['f1'], 4)} | {spread(row['f1_patterns'], 4)} | {spread(row['attack'])} | "
                     f"{verdicts} | {spread(row['lookup'])} | {inversion} | "
                     f"{'-' if bounds == '- / - / -' else bounds} | {spread(row['train_minutes'], 1)} |")
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    """Tagger F1 against the strongest attack, one colour per configuration with both spreads:
    filled the tagger alone, hollow merged with the pattern layer."""
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for row in rows:
        if not row["f1"] or not row["attack"]:
            continue
        x, xerr = statistics.mean(row["attack"]), _sd(row["attack"])
        alone = axes.errorbar(x, statistics.mean(row["f1"]), xerr=xerr, yerr=_sd(row["f1"]), fmt="o", capsize=3,
                              label=row["configuration"])
        if row["f1_patterns"]:
            axes.errorbar(x, statistics.mean(row["f1_patterns"]), xerr=xerr, yerr=_sd(row["f1_patterns"]), fmt="o",
                          capsize=3, mfc="none", color=alone.lines[0].get_color())
    axes.axvline(0.5, color="grey", linestyle="--", label="chance")
    axes.set(xlabel="strongest attack on what is shared (held-out rate)",
             ylabel=f"{COLUMN_TITLES[PRIMARY]},\ntagger trained on what is shared\n(filled: alone, hollow: + patterns)",
             xlim=(0.45, 1.02), title="Utility vs privacy (left and high is better)")
    axes.legend(fontsize="x-small")
    save_figure(figure, path)


def _sd(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def read(name: str):
    path = results_file(name, ".json")
    if not path.exists():
        raise SystemExit(f"{path}: no such results file")
    return json.loads(path.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--representers", nargs="+", default=["adversarial_reference"])
    parser.add_argument("--audits", nargs="+",
                        default=["audit_pooled_reference_groups", "audit_pooled_reference_groups_N500_seeds",
                                 "audit_pooled_reference1_groups", "audit_pooled_reference2_groups",
                                 "audit_pooled_reference2_groups_N10"])
    parser.add_argument("--taggers", nargs="+",
                        default=["export_schemes_f1_stopping", "export_schemes_f1_stopping_rep1",
                                 "export_schemes_f1_stopping_raw", "export_schemes_f1_stopping_rep1_raw",
                                 "export_schemes_f1_stopping_N500", "export_schemes_f1_stopping_rep1_N500",
                                 "export_schemes_f1_stopping_rep2", "export_schemes_f1_stopping_rep2_N10",
                                 "export_schemes_f1_stopping_rep2_raw", "export_schemes_f1_stopping_dann_raw"])
    parser.add_argument("--baselines", default="baselines_f1_stopping")
    parser.add_argument("--results-name", default="privacy_table")
    args = parser.parse_args()
    gathered = Gathered()
    for name in args.representers:
        gathered.add_representers(name, read(name))
    for name in args.audits:
        gathered.add_audits(read(name))
    for name in args.taggers:
        gathered.add_taggers(read(name))
    gathered.add_baselines(read(args.baselines))
    rows = summarise(gathered)
    sources = {"representers": args.representers, "audits": args.audits, "taggers": args.taggers,
               "baselines": [args.baselines]}
    designs = {(len(target_rates(metrics)), metrics["held_out_pairs"]) for found in gathered.audits.values()
               for entries in found.values() for metrics in entries}
    write_results(args.results_name, table(rows, sources, designs.pop() if len(designs) == 1 else None),
                  {"sources": sources, "rows": rows})
    plot(rows, results_file(args.results_name, "_pareto.png"))


if __name__ == "__main__":
    main()
