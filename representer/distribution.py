"""Training on several devices or machines with `tf.distribute`: which strategy a training
process uses, how a batch is split between the replicas, and the values that every worker of a
cluster must see alike (docs/worker-fleet.md)."""

from __future__ import annotations

import functools
import json
import os
import socket
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

PACK_BYTES = 64 * 2 ** 20  # gradients all-reduced as one collective operation (the pooled tagger's: 2.2 MB)


@functools.cache
def training_strategy() -> tf.distribute.Strategy:
    """`MultiWorkerMirroredStrategy` when TF_CONFIG names more than one worker (chief
    included), else `MirroredStrategy` on several local GPUs, else the default strategy (one
    device, no distribution). Decided once per process: a multi-worker strategy sets up
    TensorFlow's collective ops, which must happen before TensorFlow starts and only once."""
    cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
    if len(cluster.get("chief", [])) + len(cluster.get("worker", [])) > 1:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(bytes_per_pack=PACK_BYTES))
        # Every worker gets a part of every batch (`replica_batches`), so all reach the end of an
        # epoch together: no need for the workers to agree on it at every step (an eager
        # collective operation per batch, which made the tests' epochs five times slower).
        strategy.extended.experimental_enable_get_next_as_optional = False
        return strategy
    if len(tf.config.list_logical_devices("GPU")) > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def replica_batches(strategy: tf.distribute.Strategy, batches: tf.data.Dataset):
    """`batches` (dicts of batch-major tensors) split between the replicas of `strategy`: of a
    batch of B rows, replica r of R gets rows [r B / R, (r + 1) B / R), so a step over all
    replicas sees the batch that one device would (a part may be empty when B < R). Every
    worker reads the whole input and keeps its replicas' parts. One replica: `batches` as
    they are."""

    def parts(context: tf.distribute.InputContext) -> tf.data.Dataset:
        replicas = context.num_replicas_in_sync
        if replicas == 1:
            return batches
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local

        def split(batch):
            size = tf.shape(next(iter(batch.values())), out_type=tf.int64)[0]
            bounds = size * tf.range(replicas + 1, dtype=tf.int64) // replicas
            return tf.data.Dataset.range(first, first + local).map(
                lambda r: {key: value[bounds[r]:bounds[r + 1]] for key, value in batch.items()})

        return batches.flat_map(split)

    return strategy.distribute_datasets_from_function(parts)


def gathered(strategy: tf.distribute.Strategy, values: Sequence[float]) -> np.ndarray:
    """(replicas, len(values)) float64: `values` as every replica of `strategy` gave them, the
    same array on every worker, so that decisions taken on it agree. A collective operation in
    a multi-worker cluster: every worker must call it at the same point."""
    local = tf.constant([values], tf.float64)
    if strategy.num_replicas_in_sync == 1:
        return local.numpy()
    return run_alike(strategy, lambda: tf.distribute.get_replica_context().all_gather(local, axis=0)).numpy()


def run_alike(strategy: tf.distribute.Strategy, fn, *args):
    """`fn(*args)` run on every replica of `strategy`; returns the first local replica's
    results, for results that are the same on every replica (all-reduced or gathered in `fn`)."""
    results = strategy.run(fn, args=args)
    return tf.nest.map_structure(lambda value: strategy.experimental_local_results(value)[0], results)


def loopback_cluster(workers: int) -> list[str]:
    """The TF_CONFIG of each of `workers` processes training together on this machine, on free
    loopback ports (tests, benchmarks); worker 0 is the chief."""
    sockets = [socket.socket() for _ in range(workers)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    addresses = [f"127.0.0.1:{sock.getsockname()[1]}" for sock in sockets]
    for sock in sockets:
        sock.close()
    return [json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}})
            for index in range(workers)]
