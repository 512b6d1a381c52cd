"""Cross-validation folds by group (corpus/folds.py): every group in exactly one fold, folds
balanced by note count, deterministic from the seed; on hand-made groups and on PhysioNet's
patients."""

import json
import warnings
from collections import Counter

import pytest

from deidpool.corpus.document import Document
from deidpool.corpus.errors import CorpusWarning
from deidpool.corpus.folds import assign_folds, fold_split
from deidpool.corpus.formats import read_corpus
from deidpool.corpus.formats.physionet import patient

# 40 patients of 1 to 8 notes: many of equal size, so that the seed has choices to make
SIZES = {f"p{number}": 1 + number % 8 for number in range(40)}
DOCUMENTS = [Document(f"{group}-{note}", "text") for group, size in SIZES.items() for note in range(size)]


def totals(folds: dict[str, int], sizes, k: int = 5) -> list[int]:
    return [sum(sizes[group] for group, fold in folds.items() if fold == index) for index in range(k)]


def test_every_group_is_in_exactly_one_fold_and_every_fold_is_used():
    folds = assign_folds(SIZES, 5, seed=0)
    assert folds.keys() == SIZES.keys() and set(folds.values()) == set(range(5))


def test_folds_are_balanced_within_the_largest_group():
    for seed in range(5):
        counts = totals(assign_folds(SIZES, 5, seed), SIZES)
        assert max(counts) - min(counts) <= max(SIZES.values())
        assert max(counts) - min(counts) <= 1  # many small groups: as even as the total allows (180 / 5)


def test_the_same_seed_gives_the_same_folds_another_seed_others():
    assert assign_folds(SIZES, 5, seed=3) == assign_folds(dict(reversed(SIZES.items())), 5, seed=3)
    assert assign_folds(SIZES, 5, seed=3) != assign_folds(SIZES, 5, seed=4)


def test_too_few_groups_or_folds_are_refused():
    with pytest.raises(ValueError, match="k <= the number of groups"):
        assign_folds({"a": 1, "b": 2}, 3)
    with pytest.raises(ValueError, match="2 <= k"):
        assign_folds(SIZES, 1)


def test_fold_split_tests_each_group_once_and_trains_on_the_others():
    tested = []
    for fold in range(5):
        train, test = fold_split(DOCUMENTS, fold, seed=1, group=patient)
        assert not {patient(d) for d in train} & {patient(d) for d in test}
        assert sorted(d.id for d in train + test) == sorted(d.id for d in DOCUMENTS)
        tested += test
    assert sorted(d.id for d in tested) == sorted(d.id for d in DOCUMENTS)
    with pytest.raises(ValueError, match="fold must be in 0 .. 4"):
        fold_split(DOCUMENTS, 5)


def test_physionet_patients_fall_in_five_folds_of_equal_note_counts(physionet_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CorpusWarning)
        documents = read_corpus(physionet_dir, "physionet")
    listed = {str(member) for members in json.loads((physionet_dir / "splits.json").read_text()).values()
              for member in members}
    sizes = Counter(patient(d) for d in documents)
    folds = assign_folds(sizes)
    assert folds.keys() == listed  # every patient of every split, in one fold each
    counts = totals(folds, sizes)
    assert sum(counts) == len(documents) == 2123
    assert max(counts) - min(counts) <= 1  # 424 or 425 notes each
