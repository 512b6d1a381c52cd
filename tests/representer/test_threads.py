"""TensorFlow's thread pools: sized before the first operation, left alone after it or when the
environment sets them."""

import os
import subprocess
import sys

from deidpool.representer.threads import CONCURRENT_OPERATIONS

POOLS = ("import tensorflow as tf; from deidpool.representer.threads import configure_threads; "
         "print(configure_threads(), tf.config.threading.get_inter_op_parallelism_threads(), "
         "tf.config.threading.get_intra_op_parallelism_threads())")


def _pools_in_a_fresh_process(**environment) -> list[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TF_NUM_")}
    result = subprocess.run([sys.executable, "-c", POOLS], env={**env, **environment}, capture_output=True,
                            text=True, check=True)
    return result.stdout.split()


def test_a_fresh_process_runs_both_directions_at_once_on_half_the_cores_each():
    cores = len(os.sched_getaffinity(0))
    assert _pools_in_a_fresh_process() == ["True", str(CONCURRENT_OPERATIONS),
                                           str(max(1, cores // CONCURRENT_OPERATIONS))]


def test_sizes_from_the_environment_are_kept():
    assert _pools_in_a_fresh_process(TF_NUM_INTEROP_THREADS="3")[0] == "False"


def test_a_running_tensorflow_is_left_alone():
    """Pools are fixed by TensorFlow's first operation (in a fresh process: in this one an earlier
    test may already have sized them the same way, which TensorFlow then accepts)."""
    code = ("import tensorflow as tf; tf.constant(1.0) + 1.0; "
            "from deidpool.representer.threads import configure_threads; print(configure_threads())")
    env = {key: value for key, value in os.environ.items() if not key.startswith("TF_NUM_")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False"]
