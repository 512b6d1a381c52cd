"""The rule that combines two taggers' beliefs about each token (a site's stack: the published
pipeline and the site's own raw-text tagger, `deidpool.client.stack`).

Each tagger gives, per token, its CRF marginals over its tag vocabulary ("O" first;
`deidpool.representer.marginals.crf_marginals`). Mapped onto the union of the two vocabularies,
they are mixed token by token: `weight` on the pipeline's, 1 - `weight` on the local tagger's
(1: the pipeline alone, 0: the local tagger alone). A token's PHI score is the mixture's
1 - P(O). The tags are the most probable sequence under the mixture that the tag scheme allows
(an I- or E- tag only after a B- or I- tag of its label; under BIOES every span closed), decoded by Viterbi
over the log of the mixture, with "O" weighed by the odds of a threshold: at 0.5 as it is, below
0.5 made less likely (more recall), above more likely. Decoding whole sequences gives every span a
beginning and one label, where taking each token's own best tag could leave an I- tag without its
B- tag or mix two labels in one span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The pipeline's weights a stack chooses among on its validation notes."""
DEFAULT_THRESHOLD = 0.5
_FLOOR = 1e-12  # below it, a probability counts as this (log of zero)


@dataclass(frozen=True)
class CombinedSentence:
    """One sentence's mixture of the two taggers' marginals (tokens, tags) in the union
    vocabulary `vocabulary` (`union_vocabulary`)."""

    mixture: np.ndarray
    vocabulary: tuple[str, ...]

    @property
    def scores(self) -> np.ndarray:
        """Each token's PHI score: 1 - the mixture's P(O)."""
        return 1.0 - self.mixture[:, 0]

    def tag_ids(self, threshold: float) -> np.ndarray:
        """The valid tag ids (`vocabulary` order) of the most probable sequence, "O" weighed
        by the odds of `threshold` (module doc)."""
        scores = np.log(np.maximum(self.mixture, _FLOOR))
        scores[:, 0] += np.log(threshold) - np.log1p(-threshold)
        return span_viterbi(scores, self.vocabulary)


def union_vocabulary(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """The tags of both vocabularies, "O" first, each once, in the order they come."""
    if first[0] != "O" or second[0] != "O":
        raise ValueError("a tag vocabulary starts with 'O'")
    return list(dict.fromkeys([*first, *second]))


def _in_union(marginals: np.ndarray, tags: Sequence[str], vocabulary: dict[str, int]) -> np.ndarray:
    mapped = np.zeros((marginals.shape[0], len(vocabulary)))
    mapped[:, [vocabulary[tag] for tag in tags]] = marginals
    return mapped


def combine(pipeline: np.ndarray, pipeline_tags: Sequence[str], local: np.ndarray, local_tags: Sequence[str],
            weight: float) -> CombinedSentence:
    """The combination (module doc) of one sentence's marginals (tokens, tags) of the pipeline and
    the local tagger, each over its own tag vocabulary."""
    vocabulary = union_vocabulary(pipeline_tags, local_tags)
    index = {tag: position for position, tag in enumerate(vocabulary)}
    mixture = weight * _in_union(pipeline, pipeline_tags, index) + (1.0 - weight) * _in_union(local, local_tags, index)
    return CombinedSentence(mixture, tuple(vocabulary))


def _allowed(vocabulary: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(transitions (from, to), may start, may end) of the vocabulary's tags, BIO or BIOES: an
    "I-x" (and "E-x") follows only a "B-x" or an "I-x"; under BIOES nothing else follows those two,
    so a span is closed before the sentence ends."""
    prefix = [tag.split("-", 1)[0] for tag in vocabulary]
    label = [tag.split("-", 1)[1] if "-" in tag else None for tag in vocabulary]
    continues = np.array([p in ("B", "I") for p in prefix])
    opens = continues & any(p in ("E", "S") for p in prefix)  # BIOES: a span must go on or end
    inside = np.array([p in ("I", "E") for p in prefix])
    same = np.array([[a == b for b in label] for a in label])
    onward = continues[:, None] & inside[None, :] & same
    transitions = np.where(opens[:, None], onward, ~inside[None, :] | onward)
    return transitions, ~inside, ~opens


def span_viterbi(scores: np.ndarray, vocabulary: Sequence[str]) -> np.ndarray:
    """The tag ids of the highest-scoring valid tag sequence (`_allowed`) under per-token `scores`
    (tokens, tags)."""
    if not len(scores):
        return np.zeros(0, dtype=int)
    transitions, starts, ends = _allowed(vocabulary)
    penalty = np.where(transitions, 0.0, -np.inf)
    best = np.where(starts, scores[0], -np.inf)
    back = np.zeros(scores.shape, dtype=int)
    for position in range(1, len(scores)):
        candidates = best[:, None] + penalty
        back[position] = candidates.argmax(axis=0)
        best = candidates.max(axis=0) + scores[position]
    path = [int(np.where(ends, best, -np.inf).argmax())]
    for position in range(len(scores) - 1, 0, -1):
        path.append(int(back[position, path[-1]]))
    return np.array(path[::-1])
