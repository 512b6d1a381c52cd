"""The rule that combines two taggers' beliefs about each token (a site's stack: the published
pipeline and the site's own raw-text tagger, `deidpool.client.stack`).

Each tagger gives, per token, its CRF marginals over its tag vocabulary ("O" first;
`deidpool.representer.marginals.crf_marginals`). A token's PHI score is the weighted mean of the
two taggers' P(token is PHI) = 1 - P(O): `weight` on the pipeline, 1 - `weight` on the local
tagger (1: the pipeline alone, 0: the local tagger alone). Its candidate tag is the most probable
PHI tag of the tagger more sure that it is PHI. At a threshold, the tokens whose score reaches it
carry their candidate tag, the others "O"; spans are decoded from those tags (BIO and BIOES
alike), so a span of either tagger stands when the two together are confident enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The pipeline's weights a stack chooses among on its validation notes."""
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class CombinedSentence:
    """One sentence's PHI `scores` (tokens,) and candidate tag ids (tokens,) in the union
    vocabulary of the two taggers (`union_vocabulary`)."""

    scores: np.ndarray
    candidates: np.ndarray

    def tag_ids(self, threshold: float) -> np.ndarray:
        """Tag ids at `threshold`: the candidate where the score reaches it, else "O" (id 0)."""
        return np.where(self.scores >= threshold, self.candidates, 0)


def union_vocabulary(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """The tags of both vocabularies, "O" first, each once, in the order they come."""
    if first[0] != "O" or second[0] != "O":
        raise ValueError("a tag vocabulary starts with 'O'")
    return list(dict.fromkeys([*first, *second]))


def combine(pipeline: np.ndarray, pipeline_tags: Sequence[str], local: np.ndarray, local_tags: Sequence[str],
            weight: float) -> CombinedSentence:
    """The combination (module doc) of one sentence's marginals (tokens, tags) of the pipeline and
    the local tagger, each over its own tag vocabulary."""
    vocabulary = {tag: index for index, tag in enumerate(union_vocabulary(pipeline_tags, local_tags))}
    phi_pipeline, phi_local = 1.0 - pipeline[:, 0], 1.0 - local[:, 0]
    best_pipeline = np.array([vocabulary[tag] for tag in pipeline_tags])[1 + pipeline[:, 1:].argmax(axis=1)]
    best_local = np.array([vocabulary[tag] for tag in local_tags])[1 + local[:, 1:].argmax(axis=1)]
    return CombinedSentence(weight * phi_pipeline + (1.0 - weight) * phi_local,
                            np.where(phi_pipeline >= phi_local, best_pipeline, best_local))
