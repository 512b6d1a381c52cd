"""Frozen models applied to prepared sentences: a representer (vectors for export) or a whole
pipeline (Viterbi tag ids for de-identification), each compiled once for every batch shape.
Batches are padded in NumPy and fed to the compiled function directly, so a call costs no
pipeline set-up or tracing (one note at a time, as the Presidio and spaCy wrappers call)."""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

import numpy as np
import tensorflow as tf

from representer.dataset import INFERENCE_BATCH_SIZE, SentenceData, padded_batches

BatchFunction = Callable[[dict], tf.Tensor]
_BUILT: WeakKeyDictionary = WeakKeyDictionary()  # bundle -> {purpose: BatchFunction}


def built_once(bundle, purpose: str, build: Callable[[], BatchFunction]) -> BatchFunction:
    """`build()`'s function for `bundle` and `purpose`, built on the first call and kept while
    the bundle lives (loading and compiling its models costs up to a second a call)."""
    functions = _BUILT.setdefault(bundle, {})
    if purpose not in functions:
        functions[purpose] = build()
    return functions[purpose]


def compile_representer(representer, embedding_dim: int) -> BatchFunction:
    """Batch -> (B, T, d) representation vectors (noise as the model is set)."""
    @tf.function(input_signature=[tf.TensorSpec((None, None, embedding_dim), tf.float32),
                                  tf.TensorSpec((None, None), tf.bool)], autograph=False)
    def run(features, mask):
        return representer({"embeddings": features, "mask": mask})

    return lambda batch: run(batch["features"], batch["mask"])


def compile_pipeline(representer, tagger, embedding_dim: int) -> BatchFunction:
    """Batch -> (B, T) Viterbi tag ids of the tagger over the representer's vectors."""
    @tf.function(input_signature=[tf.TensorSpec((None, None, embedding_dim), tf.float32),
                                  tf.TensorSpec((None, None), tf.int8),
                                  tf.TensorSpec((None, None), tf.bool)], autograph=False)
    def run(features, casing, mask):
        vectors = tf.identity(representer({"embeddings": features, "mask": mask}))  # drop the Keras mask
        return tagger.predict_tags({"features": vectors, "casing": casing, "mask": mask})

    return lambda batch: run(batch["features"], batch["casing"], batch["mask"])


def apply_to_sentences(function: BatchFunction, data: SentenceData,
                       batch_size: int = INFERENCE_BATCH_SIZE) -> list[np.ndarray]:
    """`function`'s output for every sentence of `data`, in order, cut to its length."""
    result: list[np.ndarray] = [None] * len(data)
    for batch in padded_batches(data, batch_size):
        outputs = function(batch).numpy()
        for output, index, length in zip(outputs, batch["index"], batch["length"]):
            result[index] = output[:length]
    return result

