"""Privacy audits of a frozen representer (METHOD.md, Evaluation): fresh and continued
adversaries, inversion (A1) and lookup (A2) attacks, each also run on the positive controls
(raw embeddings, the representer after P1), with a verdict and a JSON/Markdown/PNG report."""

from __future__ import annotations

import json
import math
from pathlib import Path

from adversary.inversion import inversion_attack
from adversary.lookup import lookup_attack
from adversary.models import DEFAULT_UNITS
from adversary.pairs import PairSource
from adversary.procedures import AdversaryTraining, build_adversary
from representer.dataset import BATCH_SIZE
from representer.training import _write_config, _write_json, run_training

Z_95 = 1.959963984540054
CHANCE_BOUND = 0.55  # highest accuracy still read as chance
CONTROL_THRESHOLD = 0.8  # accuracy an attack must reach on a positive control
# Optimizer steps per attack epoch when the draws are chosen automatically. On PhysioNet's
# provider split (375 PHI sentences, 12 batches a draw) the raw-embedding control reached
# 0.85 only after 20 epochs of 15 draws (3,600 steps), and stayed at 0.50-0.59 with 1 draw.
MIN_EPOCH_STEPS = 180
HEADS = {"combined": "", "t1": "_t1", "t2": "_t2"}  # adversary output -> metric suffix
CHANCE, BROKEN, INCONCLUSIVE = "consistent with chance", "broken", "inconclusive"


def automatic_passes(train_pairs: int, batch_size: int = BATCH_SIZE, min_steps: int = MIN_EPOCH_STEPS) -> int:
    """Draws of `train_pairs` pairs per attack epoch for at least `min_steps` optimizer steps."""
    return max(1, math.ceil(min_steps / max(1, math.ceil(train_pairs / batch_size))))


def raw_embeddings(inputs, training=False):
    """The identity representer: the attack on raw embeddings (a positive control)."""
    return inputs["embeddings"]


def wilson_interval(successes: float, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if trials <= 0:
        raise ValueError("a proportion needs at least one trial")
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    # At p = 0 or 1 the bound is exactly 0 or 1 (rounding would put it a hair inside).
    return (0.0 if p == 0 else centre - half), (1.0 if p == 1 else centre + half)


def chance_verdict(rate: float, trials: int) -> dict:
    """`rate` on `trials` with its Wilson interval; "consistent with chance" when the interval
    holds 0.5 and the rate is at most CHANCE_BOUND, else "broken" (a rate well below 0.5
    breaks it too: its answers flipped would be right)."""
    low, high = wilson_interval(rate * trials, trials)
    verdict = CHANCE if low <= 0.5 <= high and rate <= CHANCE_BOUND else BROKEN
    return {"rate": rate, "trials": trials, "ci": [low, high], "verdict": verdict}


def attack_result(final: dict, trials: int) -> dict:
    """An adversary attack from its last epoch's validation metrics: every output (T1, T2,
    combined) judged by `chance_verdict`; the attack is broken when any output is."""
    heads = {head: chance_verdict(final[f"val_accuracy{suffix}"], trials) for head, suffix in HEADS.items()}
    return {"accuracy": max(h["rate"] for h in heads.values()), "heads": heads,
            "verdict": BROKEN if any(h["verdict"] == BROKEN for h in heads.values()) else CHANCE}


def overall_verdict(target_verdicts: list[str], controls: dict[str, bool]) -> str:
    """"broken" when any attack on the target is; otherwise "consistent with chance" only if
    every positive control was broken by the attacks (accuracy >= CONTROL_THRESHOLD)."""
    if BROKEN in target_verdicts:
        return BROKEN
    return CHANCE if controls and all(controls.values()) else INCONCLUSIVE


def run_audit(representer, train: PairSource, test: PairSource, out_dir: str | Path, *, epochs: int,
              adversary=None, p1_representer=None, units: int = DEFAULT_UNITS, seed: int = 0,
              passes: int | None = None,
              config: dict | None = None, progress: bool = True, **settings) -> dict:
    """Attack the frozen `representer` with pairs from `train`, judged on held-out pairs from
    `test` (sentences not used in attack training), and write the report to `out_dir`.

    Attacks, each for `epochs` epochs of `passes` fresh draws of pairs (None: `automatic_passes`):
    fresh T1/T2 (and the trained `adversary`, continued, when given), on the target and on the
    positive controls (raw embeddings, `p1_representer` when given); the inversion attack A1 and
    the lookup attack A2 on all of them. out_dir gets config.json, metrics.json (the report), history.json
    (held-out accuracies per epoch), report.md, accuracy.png and one run_training folder per
    adversary attack under attacks/ (checkpoints: an interrupted audit resumes).
    `settings` are `AdversaryTraining`'s optimizer settings.
    """
    out_dir = Path(out_dir)
    if passes is None:
        passes = automatic_passes(len(train), settings.get("batch_size", BATCH_SIZE))
    embedding_dim = test.pseudonymizer.embeddings.dim
    _write_config(out_dir, {"epochs": epochs, "passes": passes, "units": units, "seed": seed,
                            "neighbours": test.pseudonymizer.neighbours,
                            "train_pairs": len(train), "held_out_pairs": len(test), **settings, **(config or {})})
    subjects = {"target": representer, "raw": raw_embeddings}
    if p1_representer is not None:
        subjects["p1"] = p1_representer
    attacks = {f"{name}/fresh": (model, build_adversary(_dim(model, embedding_dim), embedding_dim, units))
               for name, model in subjects.items()}
    if adversary is not None:
        attacks["target/continued"] = (representer, adversary)
    history, results = {}, {}
    for name, (model, attacker) in attacks.items():
        run_dir = out_dir / "attacks" / name.replace("/", "-")
        run_training(AdversaryTraining(model, attacker, passes, **settings), train, test, run_dir, max_epochs=epochs,
                     patience=epochs, seed=seed, progress=progress)
        records = json.loads((run_dir / "history.json").read_text())
        history[name] = [{"epoch": r["epoch"], **{f"accuracy{s}": r[f"val_accuracy{s}"] for s in HEADS.values()}}
                         for r in records]
        results[name] = attack_result(records[-1], len(test))
    controls = {name: result["accuracy"] >= CONTROL_THRESHOLD for name, result in results.items()
                if not name.startswith("target")}
    for name, succeeded in controls.items():
        results[name]["control_succeeded"] = succeeded
    lookup = {}
    for name, model in subjects.items():
        result = lookup_attack(model, test, seed)
        lookup[name] = {**result, **chance_verdict(result["rate"], result["sentences"])}
    inversion = {name: inversion_attack(model, train, test, epochs=epochs * passes, units=units, seed=seed,
                                        progress=progress, label=name, **settings)
                 for name, model in subjects.items()}
    target_verdicts = [r["verdict"] for name, r in results.items() if name.startswith("target")]
    report = {"verdict": overall_verdict(target_verdicts + [lookup["target"]["verdict"]], controls),
              "epochs": epochs, "passes": passes, "neighbours": test.pseudonymizer.neighbours,
              "held_out_pairs": len(test),
              "chance_bound": CHANCE_BOUND, "control_threshold": CONTROL_THRESHOLD, "attacks": results,
              "lookup": lookup, "inversion": {**inversion, "chance_top1": 1 / test.pseudonymizer.neighbours}}
    _write_json(out_dir / "history.json", history)
    _write_json(out_dir / "metrics.json", report)
    (out_dir / "report.md").write_text(format_report(report))
    plot_accuracy(history, out_dir / "accuracy.png")
    return report


def _dim(representer, embedding_dim: int) -> int:
    return embedding_dim if representer is raw_embeddings else int(representer.output.shape[-1])


def format_report(report: dict) -> str:
    """The audit report as Markdown."""
    def interval(result):
        return f"[{result['ci'][0]:.3f}, {result['ci'][1]:.3f}]"

    lines = [f"# Privacy audit: {report['verdict']}", "",
             f"{report['epochs']} epochs of attack training ({report['passes']} draws of pairs each), "
             f"N = {report['neighbours']}, "
             f"{report['held_out_pairs']} held-out pairs. A result is consistent with chance when the 95% "
             f"Wilson interval holds 0.5 and the rate is at most {report['chance_bound']}; positive controls "
             f"must reach {report['control_threshold']}.", "",
             "## Adversaries (held-out accuracy after the last epoch)", "",
             "| attack | output | accuracy | 95% CI | verdict |", "|---|---|---|---|---|"]
    for name, result in report["attacks"].items():
        for head, value in result["heads"].items():
            lines.append(f"| {name} | {head} | {value['rate']:.3f} | {interval(value)} | {value['verdict']} |")
    controls = [f"{name}: {'succeeded' if r['control_succeeded'] else 'FAILED'} (best {r['accuracy']:.3f})"
                for name, r in report["attacks"].items() if "control_succeeded" in r]
    lines += ["", "Positive controls: " + "; ".join(controls) + ".", "",
              "## Lookup attack A2 (fresh representation closer to its own stored one)", "",
              "| representation | rate | 95% CI | verdict |", "|---|---|---|---|"]
    lines += [f"| {name} | {r['rate']:.3f} | {interval(r)} | {r['verdict']} |" for name, r in report["lookup"].items()]
    lines += ["", f"## Inversion attack A1 (PHI tokens recovered; 1/N = {report['inversion']['chance_top1']:.4f})", "",
              "| representation | PHI tokens | top-1 | top-10 |", "|---|---|---|---|"]
    for name, r in report["inversion"].items():
        if name != "chance_top1":
            lines.append(f"| {name} | {r['tokens']} | {_share(r['top1'])} | {_share(r['top10'])} |")
    return "\n".join(lines) + "\n"


def _share(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def plot_accuracy(history: dict, path: Path) -> None:
    """One PNG: the best output's held-out accuracy per epoch for every attack."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    for name, records in history.items():
        accuracy = [max(r[f"accuracy{s}"] for s in HEADS.values()) for r in records]
        axes.plot([r["epoch"] for r in records], accuracy, marker="o", label=name)
    axes.axhline(0.5, color="grey", linestyle="--", label="chance")
    axes.axhline(CONTROL_THRESHOLD, color="grey", linestyle=":", label="control threshold")
    axes.set(xlabel="epoch", ylabel="held-out accuracy (best output)", ylim=(0, 1))
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
