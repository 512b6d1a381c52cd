"""A stack's operating point, chosen on the site's validation notes (`deidpool.client.stack`):
the pipeline's weight in the combination (`deidpool.client.combination`) and the threshold on the
combined PHI score.

Scored as the project scores de-identification: token-level binary HIPAA recall and precision
with the official i2b2 2014 tokens (`deidpool.corpus.metrics`, "token_official_hipaa"), of the
stack's whole output (pattern layer and PHI memory merged in). The weight is the one of
`WEIGHTS` with the best F1 at the default threshold 0.5 (ties: the one nearer 0.5). With a minimum
recall R (recall first, the field's convention), the threshold is the largest of `THRESHOLDS`
whose recall reaches R, the precision there what R costs; when no threshold reaches R, the lowest
(the most recall there is), marked as not reached. Without R, the threshold stays 0.5.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from deidpool.client.combination import DEFAULT_THRESHOLD, WEIGHTS
from deidpool.corpus.document import Document
from deidpool.corpus.metrics import Counts, document_counts

MEASURE = "token_official_hipaa"
THRESHOLDS = tuple(round(0.02 * step, 2) for step in range(1, 50))  # 0.02 ... 0.98, 0.5 among them


def scored_point(gold: Sequence[Document], predicted: Sequence[Document], threshold: float) -> dict:
    """{"threshold", "precision", "recall", "f1", "tp", "fp", "fn"} of `predicted` against `gold` (`MEASURE`)."""
    return {"threshold": threshold, **sum(document_counts(gold, predicted, MEASURE), Counts()).as_dict()}


def choose_operating_point(gold: Sequence[Document], predict: Callable[[float, float], Sequence[Document]],
                           min_recall: float | None = None) -> dict:
    """The operating point (module doc) on the validation notes `gold`, `predict(weight, threshold)`
    giving the stack's output on them: {"measure", "weight", "weights" (the default point of
    every weight), "default" (the chosen weight at 0.5), "min_recall", "reached", "chosen",
    "curve" (every threshold's point at the chosen weight)}."""
    by_weight = {weight: scored_point(gold, predict(weight, DEFAULT_THRESHOLD), DEFAULT_THRESHOLD)
                 for weight in WEIGHTS}
    weight = max(WEIGHTS, key=lambda w: (by_weight[w]["f1"], -abs(w - 0.5)))
    curve = [scored_point(gold, predict(weight, threshold), threshold) for threshold in THRESHOLDS]
    chosen, reached = by_weight[weight], True
    if min_recall is not None:
        reaching = [point for point in curve if point["recall"] >= min_recall]
        reached = bool(reaching)
        chosen = reaching[-1] if reaching else curve[0]
    return {"measure": MEASURE, "weight": weight,
            "weights": [{"weight": w, **point} for w, point in by_weight.items()],
            "default": by_weight[weight], "min_recall": min_recall, "reached": reached, "chosen": chosen,
            "curve": curve}
