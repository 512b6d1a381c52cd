"""Cross-validation folds by group: a seeded assignment of every group (for PhysioNet, every
patient, `deidpool.corpus.formats.physionet.patient`) to one of k folds, balanced by note count,
so that every note is tested once by a model that never saw its patient.

    train, test = fold_split(read_corpus(path, "physionet"), fold=3, group=patient)

The folds depend only on the groups' note counts and the seed: the same documents and seed give
the same folds, another seed other folds.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from deidpool.corpus.document import Document

FOLDS = 5


def assign_folds(sizes: Mapping[str, int], k: int = FOLDS, seed: int = 0) -> dict[str, int]:
    """The fold (0 to k - 1) of each group, given its size (its number of notes): the groups,
    shuffled by `seed` then stably sorted largest first, each go to the fold with the smallest
    total so far (the lowest-numbered on ties). Any two folds' totals differ by at most the
    largest size; the seed decides among groups of equal size."""
    if k < 2 or k > len(sizes):
        raise ValueError(f"need 2 <= k <= the number of groups ({len(sizes)}), got k={k}")
    groups = sorted(sizes)
    random.Random(seed).shuffle(groups)
    groups.sort(key=lambda group: -sizes[group])
    totals = [0] * k
    folds = {}
    for group in groups:
        fold = totals.index(min(totals))
        folds[group] = fold
        totals[fold] += sizes[group]
    return folds


def fold_split(documents: Sequence[Document], fold: int, k: int = FOLDS, seed: int = 0,
               group: Callable[[Document], str] = lambda d: d.id) -> tuple[list[Document], list[Document]]:
    """(train, test): the documents of the groups outside and inside fold `fold` of
    `assign_folds` over the groups' document counts; the documents keep their order."""
    if not 0 <= fold < k:
        raise ValueError(f"fold must be in 0 .. {k - 1}, got {fold}")
    folds = assign_folds(Counter(group(d) for d in documents), k, seed)
    return ([d for d in documents if folds[group(d)] != fold], [d for d in documents if folds[group(d)] == fold])
