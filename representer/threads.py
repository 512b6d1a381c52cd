"""TensorFlow's thread pools sized for this project's models.

Every model here is a stack of BiLSTMs, whose two directions are independent loops of small
matrix products (a batch of 32 by 128 units). A small product gains little from being split over
cores, but the two directions can run side by side. So two operations run at once (one per
direction) on half the cores each, which trains faster than TensorFlow's default pools
(measured by experiments/bench_speed.py; see its results page).
"""

import os

import tensorflow as tf

CONCURRENT_OPERATIONS = 2  # the two directions of a BiLSTM


def configure_threads() -> bool:
    """Size TensorFlow's pools (see the module docstring): True when they have these sizes now;
    False, and nothing changed, when TensorFlow already runs with other sizes (pools are fixed at
    its first operation) or the sizes were set by the environment (`TF_NUM_INTRAOP_THREADS`,
    `TF_NUM_INTEROP_THREADS`)."""
    if {"TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"} & os.environ.keys():
        return False
    try:
        tf.config.threading.set_inter_op_parallelism_threads(CONCURRENT_OPERATIONS)
        tf.config.threading.set_intra_op_parallelism_threads(
            max(1, len(os.sched_getaffinity(0)) // CONCURRENT_OPERATIONS))
    except RuntimeError:  # "... cannot be modified after initialization"
        return False
    return True
