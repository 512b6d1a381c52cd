"""One process of the distributed-training tests: trains the pooled tagger (`train_pooled`) on
tiny synthetic streamed data, alone or as the worker of the cluster that TF_CONFIG describes,
and prints a JSON line per epoch that it checkpointed (the chief, through `on_epoch`) and one
with its final metrics.

    python tests/representer/distributed_worker.py RUN_DIR [--epochs 3] [--crash-after EPOCH] [--mirrored]

The tagger has no dropout: each replica draws its own dropout masks for its part of a batch,
which one process would draw otherwise, so with dropout two workers and one differ as two seeds
do; without it they differ only by the order of floating-point sums. --crash-after kills the
process (SIGKILL) once the chief has checkpointed that epoch. --mirrored trains under
MirroredStrategy on two logical CPU devices of this process, as on a machine with two GPUs.
"""

import argparse
import functools
import json
import os
import signal

import numpy as np
import tensorflow as tf

from deidpool.representer.threads import configure_threads

configure_threads()

from deidpool.representer.dataset import SentenceStream  # noqa: E402
from deidpool.representer.tagger import build_tagger  # noqa: E402
from deidpool.server import pooled  # noqa: E402

DIM, TAGS = 6, ["O", "B-NAME", "I-NAME"]
BATCH_SIZE = 8  # sentences per step in all: small batches, so that three short epochs learn the tags


def sentences(seed: int, count: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Sentences of 1-9 tokens whose tag (0-2) the first three vector components spell out."""
    rng = np.random.default_rng(seed)
    result = []
    for length in rng.integers(1, 10, count):
        tags = rng.choice(3, size=length, p=[0.7, 0.2, 0.1]).astype(np.int32)
        vectors = (3 * np.eye(3, DIM)[tags] + rng.normal(0, 0.5, (length, DIM))).astype(np.float32)
        result.append((vectors, rng.integers(0, 5, length).astype(np.int8), tags))
    return result


def stream(seed: int, shards: int, per_shard: int) -> SentenceStream:
    parts = [sentences(seed * 100 + number, per_shard) for number in range(shards)]
    return SentenceStream(tuple(functools.partial(iter, part) for part in parts), shards * per_shard, DIM,
                          max(len(s[2]) for part in parts for s in part))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--crash-after", type=int)
    parser.add_argument("--mirrored", action="store_true")
    args = parser.parse_args()
    pooled.build_tagger = functools.partial(build_tagger, input_dropout=0.0, recurrent_dropout=0.0,
                                                   dropout=0.0)
    if args.mirrored:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        pooled.training_strategy = lambda: tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    train, valid = stream(1, 3, 100), stream(2, 1, 60)
    tag_counts = np.bincount(np.concatenate([s[2] for shard in train.shards for s in shard()]), minlength=len(TAGS))
    data = pooled.PooledData(train, valid, {"site": {"train": len(train), "valid": len(valid)}}, tag_counts)

    def on_epoch(record: dict) -> None:
        print(json.dumps({"epoch": record}), flush=True)
        if record["epoch"] == args.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)

    metrics = pooled.train_pooled(data, args.run_dir, tags=TAGS, representer_id="rep-test",
                                         contributions=["synthetic"], max_epochs=args.epochs, patience=args.epochs,
                                         seed=5, lstm_units=8, batch_size=BATCH_SIZE, on_epoch=on_epoch)
    print(json.dumps({"metrics": metrics}), flush=True)


if __name__ == "__main__":
    main()
