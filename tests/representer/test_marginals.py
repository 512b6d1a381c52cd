"""CRF marginals by forward-backward against enumerating every tag path."""

import itertools

import numpy as np

from deidpool.representer.marginals import crf_marginals

TAGS, LENGTHS, TIME = 3, [1, 4, 2, 3], 4


def test_marginals_are_the_summed_probability_of_every_path_through_each_tag():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(len(LENGTHS), TIME, TAGS)) * 2  # padding holds garbage too
    transitions, start, end = rng.normal(size=(TAGS, TAGS)), rng.normal(size=TAGS), rng.normal(size=TAGS)
    marginals = crf_marginals(scores, np.array(LENGTHS), transitions, start, end)
    for row, length in enumerate(LENGTHS):
        expected = np.zeros((TIME, TAGS))
        weights = {}
        for path in itertools.product(range(TAGS), repeat=length):
            score = start[path[0]] + end[path[-1]] + sum(scores[row, t, tag] for t, tag in enumerate(path))
            weights[path] = np.exp(score + sum(transitions[a, b] for a, b in zip(path, path[1:])))
        total = sum(weights.values())
        for path, weight in weights.items():
            for t, tag in enumerate(path):
                expected[t, tag] += weight / total
        np.testing.assert_allclose(marginals[row], expected, atol=1e-9)
        np.testing.assert_allclose(marginals[row, :length].sum(axis=1), 1.0)
