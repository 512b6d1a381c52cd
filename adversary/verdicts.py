"""Reading an audit (docs/method.md, Evaluation): an attack's held-out success rate with its Wilson
interval (on the effective trials when its answers cluster by sentence) and whether it is
consistent with chance, the thresholds and verdicts every audit uses, and what a report's path
names. No ML framework: the server and result tables read these."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

Z_95 = 1.959963984540054
CHANCE_BOUND = 0.55  # an output reads as chance once its interval rules out this accuracy (and 0.45)
FAMILY_ERROR = 0.05  # how often an audit may read a representer at chance as broken, over all the outputs it judges
CONTROL_THRESHOLD = 0.8  # accuracy an attack must reach on a positive control
HELD_OUT_DRAWS = 5  # draws of the held-out pairs every target output is judged on (adversary.audit.run_audit)
CHANCE, BROKEN, INCONCLUSIVE = "consistent with chance", "broken", "inconclusive"
EXPORT_PATH, BARE_PATH = "export", "representer"  # a report's "path": what its target attacks read


def wilson_interval(successes: float, trials: float, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if trials <= 0:
        raise ValueError("a proportion needs at least one trial")
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    # At p = 0 or 1 the bound is exactly 0 or 1 (rounding would put it a hair inside).
    return (0.0 if p == 0 else centre - half), (1.0 if p == 1 else centre + half)


def family_z(tests: int) -> float:
    """The z of the two-sided interval at confidence 1 - FAMILY_ERROR / `tests` (Bonferroni): an audit
    that judges `tests` outputs on such intervals reads a representer at chance as beating it in at
    most FAMILY_ERROR of audits, however the outputs correlate (as long as each interval holds its
    level). With a 95% interval for each of 8 independent outputs it would in about one audit of three."""
    if tests < 1:
        raise ValueError("a verdict judges at least one output")
    return NormalDist().inv_cdf(1 - FAMILY_ERROR / (2 * tests))


def cluster_design_effect(successes, trials) -> float:
    """The design effect of the rate p = sum(successes) / sum(trials) = S / N pooled over clusters
    (`successes` and `trials` per cluster; in an audit per held-out sentence, whose answers over
    the draws are not independent): its cluster-robust variance, the ratio estimator's
    K / (K - 1) * sum_i (s_i - p n_i)^2 / N^2 over K clusters, over the binomial p (1 - p) / N.
    At least 1 (a reading is never narrower than the binomial one), and 1 at p = 0 or 1 or with a
    single cluster (no spread between clusters to measure: a tiny validation set in training)."""
    successes, trials = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    if successes.ndim != 1 or successes.shape != trials.shape:
        raise ValueError("successes and trials need one count per cluster each")
    if np.any(trials < 1) or np.any(successes < 0) or np.any(successes > trials):
        raise ValueError("every cluster needs at least one trial and 0 <= successes <= trials")
    total = trials.sum()
    rate = successes.sum() / total
    if rate in (0.0, 1.0) or len(trials) < 2:
        return 1.0
    clusters = len(trials)
    robust = clusters / (clusters - 1) * np.sum((successes - rate * trials) ** 2) / total**2
    return max(1.0, float(robust / (rate * (1 - rate) / total)))


def chance_verdict(rate: float, trials: int, tests: int = 1, design_effect: float = 1.0) -> dict:
    """`rate` on `trials` with its Wilson interval at confidence 1 - FAMILY_ERROR / `tests` (one of
    the `tests` outputs a verdict reads, `family_z`) on the effective trials, `trials` /
    `design_effect` (`cluster_design_effect`; 1: independent trials). "broken" when the interval
    leaves out 0.5 (a rate reliably below 0.5 breaks it too: its answers flipped would be right);
    "consistent with chance" when the whole interval lies in [1 - CHANCE_BOUND, CHANCE_BOUND], so
    that the answers rule out an attacker as good as CHANCE_BOUND; else "inconclusive": too few
    effective answers to tell chance from such an attacker."""
    if design_effect < 1:
        raise ValueError(f"a design effect is at least 1, got {design_effect}")
    effective = trials / design_effect
    low, high = wilson_interval(rate * effective, effective, family_z(tests))
    if not low <= 0.5 <= high:
        verdict = BROKEN
    elif 1 - CHANCE_BOUND <= low and high <= CHANCE_BOUND:
        verdict = CHANCE
    else:
        verdict = INCONCLUSIVE
    return {"rate": rate, "trials": trials, "effective_trials": effective, "design_effect": design_effect,
            "ci": [low, high], "confidence": 1 - FAMILY_ERROR / tests, "verdict": verdict}


def worst_verdict(verdicts) -> str:
    """Broken if any of `verdicts` is, else inconclusive if any is, else consistent with chance."""
    verdicts = set(verdicts)
    return next((verdict for verdict in (BROKEN, INCONCLUSIVE) if verdict in verdicts), CHANCE)


def chance_rule(report: dict | None = None, confidence: str = "95%", effective: str = "") -> str:
    """How a report's outputs were judged (None: how they are judged today), in a sentence. Reports
    from before an interval had to rule out an attacker at the chance bound (no "chance_interval")
    read chance when it held 0.5 and the rate was at most the bound."""
    report = report or {"chance_interval": [1 - CHANCE_BOUND, CHANCE_BOUND]}
    if "chance_interval" not in report:
        return (f"A result is consistent with chance when its {confidence} Wilson interval{effective} holds 0.5 "
                f"and the rate is at most {report['chance_bound']}")
    low, high = report["chance_interval"]
    return (f"A result is broken when its {confidence} Wilson interval{effective} leaves out 0.5, consistent with "
            f"chance when it lies within [{low:.2f}, {high:.2f}] (an attacker at {high:.2f} ruled out), else "
            "inconclusive (too few answers to tell)")
