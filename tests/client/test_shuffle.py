"""Tests of the external shuffle: every record exactly once, in a random order, in memory or
through (recursively split) spill files that are removed afterwards."""

import os

import numpy as np
import pytest

from deidpool.client.shuffle import ExternalShuffle

RECORDS = [f"record {i:05d}".encode() * (1 + i % 5) for i in range(3000)]


def _shuffled(folder, memory_bytes, seed=0):
    with ExternalShuffle(folder, memory_bytes=memory_bytes, fanout=4, rng=np.random.default_rng(seed)) as shuffle:
        for record in RECORDS:
            shuffle.add(record)
        return list(shuffle)


@pytest.mark.parametrize("memory_bytes", [1 << 30, 20_000, 2_000], ids=["in memory", "spilled", "split again"])
def test_every_record_comes_back_once_in_a_new_order(tmp_path, memory_bytes):
    result = _shuffled(tmp_path, memory_bytes)
    assert sorted(result) == sorted(RECORDS)
    assert result != RECORDS
    assert os.listdir(tmp_path) == []


def test_orders_differ_between_runs(tmp_path):
    assert _shuffled(tmp_path, 20_000, seed=1) != _shuffled(tmp_path, 20_000, seed=2)


def test_positions_are_spread_over_the_whole_output(tmp_path):
    """Records added first are not stuck at the start (as with shuffling within chunks)."""
    result = _shuffled(tmp_path, 20_000)
    positions = [result.index(record) for record in RECORDS[:300]]
    assert np.mean(positions) == pytest.approx(len(RECORDS) / 2, rel=0.15)


def test_spill_files_are_removed_when_iteration_stops_early(tmp_path):
    with ExternalShuffle(tmp_path, memory_bytes=2_000, fanout=4) as shuffle:
        for record in RECORDS:
            shuffle.add(record)
        assert os.listdir(tmp_path)
        next(iter(shuffle))
    assert os.listdir(tmp_path) == []


def test_a_record_larger_than_the_memory_budget_is_refused(tmp_path):
    with ExternalShuffle(tmp_path, memory_bytes=100) as shuffle, pytest.raises(ValueError, match="does not fit"):
        shuffle.add(b"x" * 200)
