"""experiments/bench_distributed.py's report on hand-made runs (nothing is trained): speed-ups
against one worker on the same cores, the crossover, the target and a reading whose numbers come
from the runs."""

import bench_distributed


def run(workers: int, batch: int, cores: int | None, epoch_seconds: list[float], sentences: int,
        round_index: int = 0) -> dict:
    return {"round": round_index, "workers": workers, "batch_size": batch, "cores_per_worker": cores,
            "epoch_seconds": epoch_seconds,
            "sentences_per_s": sentences / min(epoch_seconds[1:]), "val_loss": 1.0, "val_f1": 0.9,
            "busy_cores_before": 0.1 * workers}


def result(pinned_cluster_seconds: float) -> dict:
    sizes = []
    for sentences in (1000, 4000):
        scale = sentences / 1000
        sizes.append({"sentences": sentences, "runs": [
            run(1, 32, None, [9.0, 2.0 * scale, 2.0 * scale], sentences),
            run(2, 64, None, [9.0, 3.0 * scale, 3.0 * scale], sentences),
            run(1, 32, 1, [9.0, 4.0 * scale, 8.0 * scale], sentences),  # epochs 2x apart
            run(2, 64, 1, [9.0, pinned_cluster_seconds * scale, 4.0 * scale], sentences)]})
    return {"date": "2026-11-25", "commit": "abc1234", "machine": "2 CPU cores", "workers": 2, "cores": 2,
            "gradient_mb": 2.2, "parameters": {"epochs": 3, "lstm_units": 8, "seed": 0, "repeats": 1}, "sizes": sizes}


def test_the_report_judges_the_pinned_cluster_against_one_pinned_worker():
    text = bench_distributed.report(result(pinned_cluster_seconds=2.0))
    assert "| 4,000 | 1 | 2 x 32 | 1 each | 64 | 9.0, 8.0, 16.0 | 500 | 2.00x |" in text
    assert "| 4,000 | 1 | 2 x 32 | all 2 shared | 64 | 9.0, 12.0, 12.0 | 333 | 0.67x |" in text
    assert "2 workers each pinned to cores of its own, best set-up: 2.00x at 1,000, 2.00x at 4,000" in text
    assert "Target (2 workers >= 1.6x one worker's throughput): met; best 2.00x" in text
    assert "kept 0.1 to 0.2 of the 2 cores busy" in text
    assert "differ by up to 2.0x (in the pool of 4,000 sentences)" in text
    assert "the best shared set-up reaches 0.67x" in text
    assert "(1 core(s) take 128 ms per 32-sentence step in the largest pool), 2 workers reach 2.00x" in text
    slow = bench_distributed.report(result(pinned_cluster_seconds=3.0))
    assert "Target (2 workers >= 1.6x one worker's throughput): missed; best 1.33x" in slow


def test_rounds_compare_within_a_round_and_the_target_reads_the_median():
    # The machine runs twice as fast in round 2: each cluster run is judged against the one
    # worker of its own round (2.0x, 1.0x, 1.5x), and the target against the median, 1.5x.
    runs = []
    for round_index, (alone, cluster) in enumerate([(4.0, 2.0), (2.0, 2.0), (3.0, 2.0)]):
        runs += [run(1, 32, 1, [9.0, alone], 1000, round_index), run(1, 32, None, [9.0, alone], 1000, round_index),
                 run(2, 64, 1, [9.0, cluster], 1000, round_index), run(2, 64, None, [9.0, 9.0], 1000, round_index)]
    text = bench_distributed.report({**result(2.0), "sizes": [{"sentences": 1000, "runs": runs}],
                                     "parameters": {"epochs": 2, "lstm_units": 8, "seed": 0, "repeats": 3}})
    assert "| 1,000 | 2 | 2 x 32 | 1 each | 64 | 9.0, 2.0 | 500 | 1.00x |" in text
    assert "| 1,000 | 2 x 32 | 1 each | 1.50x | 1.00x - 2.00x |" in text
    assert "Target (2 workers >= 1.6x one worker's throughput): missed; best 1.50x (2 x 32, 1,000 sentences)" in text
    assert "3 round(s)" in text


def test_a_pinned_only_report_has_no_shared_reading():
    runs = [run(1, 32, 1, [9.0, 4.0], 1000), run(2, 64, 1, [9.0, 2.5], 1000)]
    text = bench_distributed.report({**result(2.0), "sizes": [{"sentences": 1000, "runs": runs}]})
    assert "Target (2 workers >= 1.6x one worker's throughput): met; best 1.60x" in text
    assert "shared" not in text.split("Reading.")[1]
