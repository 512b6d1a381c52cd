"""Distributed training: the strategy choice, batches split between replicas, and the pooled
tagger trained (tests/representer/distributed_worker.py, CPU only) by two worker processes
(MultiWorkerMirroredStrategy over loopback), killed and resumed, and by two replicas in one
process (MirroredStrategy, as on two GPUs), against one process."""

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from deidpool.representer.dataset import SentenceData, training_batches
from deidpool.representer.distribution import gathered, loopback_cluster, replica_batches, training_strategy

WORKER = Path(__file__).with_name("distributed_worker.py")
TIMEOUT = 300  # seconds a cluster may take on a busy machine (about 20 s on a quiet one)


def test_a_single_worker_trains_under_the_default_strategy(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["127.0.0.1:1"]},
                                                "task": {"type": "worker", "index": 0}}))
    training_strategy.cache_clear()
    try:
        strategy = training_strategy()
    finally:
        training_strategy.cache_clear()
    assert strategy is tf.distribute.get_strategy() and strategy.num_replicas_in_sync == 1
    assert strategy.extended.should_checkpoint
    np.testing.assert_array_equal(gathered(strategy, [1.0, 2.0]), [[1.0, 2.0]])


def test_one_replica_gets_the_batches_as_they_are():
    data = SentenceData.from_arrays([np.ones((n, 2), np.float32) for n in (1, 2, 3)], [np.zeros(n) for n in (1, 2, 3)],
                                    [np.zeros(n) for n in (1, 2, 3)])
    batches = training_batches(data, 0, batch_size=2)
    assert replica_batches(tf.distribute.get_strategy(), batches) is batches


def launch(run_dir: Path, workers: int, *options: str) -> list[tuple[subprocess.Popen, Path]]:
    """`workers` processes of the worker script training in `run_dir` (one: no TF_CONFIG), each
    with the file that gets its output."""
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    env.update(CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    launched = []
    for index, config in enumerate(loopback_cluster(workers) if workers > 1 else [None]):
        with tempfile.NamedTemporaryFile("w", dir=run_dir.parent, prefix=f"{run_dir.name}-{index}-", suffix=".log",
                                         delete=False) as file:
            launched.append((subprocess.Popen([sys.executable, str(WORKER), str(run_dir), *options],
                                              env=env if config is None else {**env, "TF_CONFIG": config},
                                              stdout=file, stderr=subprocess.STDOUT), Path(file.name)))
    return launched


def finish(launched: list[tuple[subprocess.Popen, Path]]) -> list[dict]:
    """Each process's JSON lines once it exited successfully: {"epochs": [records], "metrics": {...}}."""
    results = []
    for process, output in launched:
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for other, _ in launched:
                other.kill()
            raise
        assert process.returncode == 0, output.read_text()[-3000:]
        lines = [json.loads(line) for line in output.read_text().splitlines() if line.startswith("{")]
        results.append({"epochs": [line["epoch"] for line in lines if "epoch" in line],
                        "metrics": next(line["metrics"] for line in lines if "metrics" in line)})
    return results


def epochs(path: Path) -> list[int]:
    return [record["epoch"] for record in json.loads(path.read_text())]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The worker script's run as one process and, beside it, with two replicas in one process
    (MirroredStrategy) and as a cluster of two workers that is killed once the chief
    checkpointed epoch 1 and then restarted."""
    folder = tmp_path_factory.mktemp("distributed")
    one, mirrored = launch(folder / "one", 1), launch(folder / "mirrored", 1, "--mirrored")
    (chief, _), (other, _) = launch(folder / "two", 2, "--crash-after", "1")
    try:
        chief.wait(timeout=TIMEOUT)  # it kills itself once epoch 1 is checkpointed
    finally:
        other.kill()  # it waits in a collective operation for the dead chief
        other.wait()
    crashed = {"chief_status": chief.returncode, "epochs": epochs(folder / "two" / "history.json")}
    return {"one": finish(one)[0], "mirrored": finish(mirrored)[0], "crashed": crashed,
            "two": finish(launch(folder / "two", 2)), "run_dir": folder / "two"}


def assert_trains_alike(history: list[dict], alone: list[dict]) -> None:
    """No dropout and the same global batch (8 sentences: 4 per replica): two replicas' steps
    are one process's steps with floating-point sums in another order (gradients summed over
    the replicas, the loss in parts of a batch), which moves the metrics by about 1e-7
    relative. The tolerances leave room for such differences to grow over 3 epochs of 38
    steps: the losses within 1e-4 relative, the validation PHI F1 within 0.025 (2 of the 85
    PHI tokens)."""
    assert alone[-1]["val_f1"] > 0.9  # the tags were learned
    for record, expected in zip(history, alone, strict=True):
        for key in ("loss", "val_loss"):
            assert record[key] == pytest.approx(expected[key], rel=1e-4)
        assert record["val_f1"] == pytest.approx(expected["val_f1"], abs=0.025)


def test_two_workers_train_as_one_process_does(trained):
    chief, other = trained["two"]
    assert {**chief["metrics"], "seconds": 0} == {**other["metrics"], "seconds": 0}  # the workers agree
    assert_trains_alike(json.loads((trained["run_dir"] / "history.json").read_text()), trained["one"]["epochs"])
    config = json.loads((trained["run_dir"] / "config.json").read_text())
    assert config["batch_size"] == 8 and (trained["run_dir"] / "models" / "tagger.keras").is_file()


def test_a_killed_cluster_resumes_from_the_chiefs_last_checkpoint(trained):
    assert trained["crashed"] == {"chief_status": -signal.SIGKILL, "epochs": [1]}
    chief, other = trained["two"]
    assert [r["epoch"] for r in chief["epochs"]] == [2, 3]  # epoch 1 came from the checkpoint
    assert other["epochs"] == []  # on_epoch: the chief's only
    assert epochs(trained["run_dir"] / "history.json") == [1, 2, 3]


def test_two_replicas_in_one_process_train_as_one_device_does(trained):
    assert_trains_alike(trained["mirrored"]["epochs"], trained["one"]["epochs"])
