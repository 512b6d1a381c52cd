"""Per-token tag marginals of a linear-chain CRF (`deidpool.representer.crf.CRF`) in NumPy: the
forward-backward algorithm in log space over the tagger's unary scores and the CRF's weights
(`CRF.numpy_weights`), where Viterbi (`deidpool.representer.onnx_inference.viterbi`) gives the one
best path. A token's marginal P(tag = k | sentence) sums the probability of every path through k."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp


def crf_marginals(scores: np.ndarray, lengths: np.ndarray, transitions: np.ndarray, start: np.ndarray,
                  end: np.ndarray) -> np.ndarray:
    """(batch, time, tags) marginal probability of each tag at each token (rows sum to 1; 0 past
    each sentence's length) under unary `scores` (batch, time, tags) and the CRF's
    `transitions[i, j]` (tag i to tag j), `start` and `end` scores; every length at least 1."""
    scores = np.asarray(scores, np.float64)
    batch, time, _ = scores.shape
    real = np.arange(time)[None] < np.asarray(lengths)[:, None]
    alpha, beta = np.empty_like(scores), np.empty_like(scores)
    alpha[:, 0] = start[None] + scores[:, 0]
    for t in range(1, time):
        alpha[:, t] = logsumexp(alpha[:, t - 1, :, None] + transitions[None], axis=1) + scores[:, t]
    beta[:, time - 1] = end[None]
    for t in range(time - 2, -1, -1):
        following = logsumexp(transitions[None] + (scores[:, t + 1] + beta[:, t + 1])[:, None, :], axis=2)
        beta[:, t] = np.where(real[:, t + 1, None], following, end[None])  # a sentence's last token ends it
    last = np.asarray(lengths) - 1
    log_partition = logsumexp(alpha[np.arange(batch), last] + end[None], axis=1)
    marginals = np.exp(alpha + beta - log_partition[:, None, None])
    return np.where(real[..., None], marginals, 0.0)
