"""The family-wise intervals an audit's verdict reads (adversary.verdicts)."""

import numpy as np
import pytest

from deidpool.adversary.verdicts import BROKEN, CHANCE, FAMILY_ERROR, Z_95, chance_verdict, family_z


def test_one_output_keeps_the_95_percent_interval():
    assert family_z(1) == pytest.approx(Z_95)
    assert chance_verdict(0.5, 100) == chance_verdict(0.5, 100, tests=1)
    assert chance_verdict(0.5, 100)["confidence"] == pytest.approx(0.95)


def test_more_outputs_widen_every_interval():
    assert family_z(8) == pytest.approx(2.7344, abs=1e-4)
    narrow, wide = chance_verdict(0.4872, 6170), chance_verdict(0.4872, 6170, tests=8)
    assert wide["ci"][0] < narrow["ci"][0] and wide["ci"][1] > narrow["ci"][1]
    assert wide["confidence"] == pytest.approx(1 - FAMILY_ERROR / 8)
    # the demo's lookup of 2026-11-26 (surrogates): 3.9 standard deviations of chance would be a leak,
    # 2.0 of them among eight outputs is what chance gives one audit in three
    assert narrow["verdict"] == BROKEN and wide["verdict"] == CHANCE
    assert chance_verdict(0.53, 3085, tests=8)["verdict"] == BROKEN
    assert chance_verdict(0.56, 100_000, tests=8)["verdict"] == BROKEN  # above the 0.55 bound, however sure
    with pytest.raises(ValueError, match="at least one output"):
        family_z(0)


def test_a_representer_at_chance_reads_broken_in_at_most_five_percent_of_audits():
    """Audits of eight outputs, each an attacker that guesses, on 3,000 held-out pairs."""
    rng = np.random.default_rng(0)
    audits, tests, trials = 2000, 8, 3000
    rates = rng.binomial(trials, 0.5, size=(audits, tests)) / trials

    def broken_share(family: int) -> float:
        return np.mean([any(chance_verdict(rate, trials, family)["verdict"] == BROKEN for rate in audit)
                        for audit in rates])

    simulation_error = 3 * np.sqrt(FAMILY_ERROR * (1 - FAMILY_ERROR) / audits)
    assert broken_share(tests) <= FAMILY_ERROR + simulation_error
    assert broken_share(1) > 0.3  # 95% intervals on each output: 1 - 0.95 ** 8 = 0.34
