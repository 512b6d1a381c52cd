"""Reading an audit (METHOD.md, Evaluation): an attack's held-out success rate with its Wilson
interval and whether it is consistent with chance, the thresholds and verdicts every audit uses,
and what a report's path names. No ML framework: the server and result tables read these."""

from __future__ import annotations

import math

Z_95 = 1.959963984540054
CHANCE_BOUND = 0.55  # highest accuracy still read as chance
CONTROL_THRESHOLD = 0.8  # accuracy an attack must reach on a positive control
HELD_OUT_DRAWS = 5  # draws of the held-out pairs every target output is judged on (adversary.audit.run_audit)
CHANCE, BROKEN, INCONCLUSIVE = "consistent with chance", "broken", "inconclusive"
EXPORT_PATH, BARE_PATH = "export", "representer"  # a report's "path": what its target attacks read


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
