"""The family-wise intervals an audit's verdict reads, on trials clustered by held-out sentence
(adversary.verdicts)."""

import numpy as np
import pytest

from deidpool.adversary.verdicts import (
    BROKEN,
    CHANCE,
    FAMILY_ERROR,
    INCONCLUSIVE,
    Z_95,
    chance_verdict,
    cluster_design_effect,
    family_z,
    worst_verdict,
)


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


def test_the_design_effect_is_one_for_independent_answers_and_the_cluster_size_for_repeated_ones():
    rng = np.random.default_rng(0)
    asked = np.full(2000, 5)
    assert cluster_design_effect(rng.binomial(5, 0.5, size=2000), asked) == pytest.approx(1.0, abs=0.1)
    repeated = 5 * rng.binomial(1, 0.3, size=2000)  # every answer about a sentence the same
    assert cluster_design_effect(repeated, asked) == pytest.approx(5.0, rel=0.05)
    assert cluster_design_effect([0, 0, 0], [5, 5, 5]) == cluster_design_effect([5, 2, 1], [5, 2, 1]) == 1.0
    assert cluster_design_effect([2, 3, 2, 3], [5, 5, 5, 5]) == 1.0  # less spread than binomial: never narrower
    assert cluster_design_effect([3], [5]) == 1.0  # one cluster: no spread between clusters to measure
    for successes, trials, message in (([1, 2], [5], "one count per cluster"),
                                       ([1, 6], [5, 5], "0 <= successes <= trials"),
                                       ([0, 0], [0, 5], "at least one trial")):
        with pytest.raises(ValueError, match=message):
            cluster_design_effect(successes, trials)


def test_a_verdict_is_read_on_the_effective_trials():
    plain, clustered = chance_verdict(0.53, 3000, tests=8), chance_verdict(0.53, 3000, tests=8, design_effect=2.0)
    assert plain["effective_trials"] == 3000 and plain["design_effect"] == 1.0
    assert clustered["trials"] == 3000 and clustered["effective_trials"] == 1500 and clustered["design_effect"] == 2.0
    assert clustered["ci"] == pytest.approx(chance_verdict(0.53, 1500, tests=8)["ci"])
    assert plain["verdict"] == BROKEN and clustered["verdict"] == INCONCLUSIVE  # [0.495, 0.565]
    with pytest.raises(ValueError, match="at least 1"):
        chance_verdict(0.5, 100, design_effect=0.5)


def test_answers_that_share_a_sentence_read_broken_too_often_unless_clustered():
    """Audits of eight outputs on 600 held-out sentences x 5 draws, every output at chance overall
    but each sentence's answers right with a probability of its own, 0.5 + u, u uniform in
    [-0.4, 0.4] (a design effect of about 1.85)."""
    rng = np.random.default_rng(0)
    audits, tests, sentences, draws = 2000, 8, 600, 5
    right = rng.binomial(draws, rng.uniform(0.1, 0.9, size=(audits, tests, sentences)))
    asked, trials = np.full(sentences, draws), sentences * draws

    def broken_share(clustered: bool) -> float:
        return np.mean([any(chance_verdict(output.sum() / trials, trials, tests,
                                           cluster_design_effect(output, asked) if clustered else 1.0)["verdict"]
                            == BROKEN for output in audit) for audit in right])

    simulation_error = 3 * np.sqrt(FAMILY_ERROR * (1 - FAMILY_ERROR) / audits)
    assert broken_share(clustered=False) > 0.25  # 0.317 at this seed
    assert broken_share(clustered=True) <= FAMILY_ERROR + simulation_error  # 0.059 at this seed


def test_chance_is_read_only_where_the_answers_rule_out_an_attacker_at_the_bound():
    """Eight outputs; "consistent with chance" needs every interval within [0.45, 0.55]."""
    rng = np.random.default_rng(0)
    # 0.51 on PhysioNet test's 176 sentences x 5 draws: the interval, [0.464, 0.556], reaches past 0.55
    assert chance_verdict(0.51, 880, tests=8)["verdict"] == INCONCLUSIVE
    assert chance_verdict(0.51, 176 * 25, tests=8)["verdict"] == CHANCE  # 25 draws of them: ruled out
    # a real leak at the bound, on 880 answers, almost never reads chance
    leaks = rng.binomial(880, 0.55, size=5000) / 880
    assert np.mean([chance_verdict(rate, 880, tests=8)["verdict"] == CHANCE for rate in leaks]) < 0.01
    # the demo's held-out set (617 sentences x 5 draws): a representer at chance reads chance on all
    # eight outputs in most audits
    rates = rng.binomial(3085, 0.5, size=(2000, 8)) / 3085
    assert np.mean([all(chance_verdict(rate, 3085, tests=8)["verdict"] == CHANCE for rate in audit)
                    for audit in rates]) > 0.9


def test_the_worst_verdict_decides():
    assert worst_verdict([CHANCE, INCONCLUSIVE, BROKEN]) == BROKEN
    assert worst_verdict([CHANCE, INCONCLUSIVE]) == INCONCLUSIVE
    assert worst_verdict([CHANCE, CHANCE]) == worst_verdict([]) == CHANCE
