"""Frozen models applied to prepared sentences: a representer (vectors for export), a whole
pipeline (Viterbi tag ids for de-identification, or its tagger's unary scores) or a raw-text
tagger (unary scores), each compiled once for every batch shape.
Batches are padded in NumPy and fed to the compiled function directly, so a call costs no
pipeline set-up or tracing (one note at a time, as the Presidio and spaCy wrappers call).

Two runtimes give the same outputs (within float32 rounding): ONNX Runtime
(`deidpool.representer.onnx_inference`, about twice as fast on the CPU) and a compiled TensorFlow
function (any model; on a GPU when one is present). `DEIDPOOL_RUNTIME` picks one
("onnxruntime" or "tensorflow"); unset, ONNX Runtime serves the models it can convert unless
TensorFlow sees a GPU."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from weakref import WeakKeyDictionary

import numpy as np
import tensorflow as tf

from deidpool.representer.characters import CHAR_WIDTH
from deidpool.representer.dataset import INFERENCE_BATCH_SIZE, SentenceData, padded_batches
from deidpool.representer.onnx_inference import PipelineSession, RepresenterSession, UnsupportedModel
from deidpool.representer.representation import reads_chars, representer_inputs

BatchFunction = Callable[[dict], np.ndarray]
RUNTIMES = ("onnxruntime", "tensorflow")
log = logging.getLogger(__name__)
_BUILT: WeakKeyDictionary = WeakKeyDictionary()  # bundle -> {(purpose, runtime): BatchFunction}


def built_once(bundle, purpose: str, build: Callable[[], BatchFunction]) -> BatchFunction:
    """`build()`'s function for `bundle` and `purpose` under the current runtime, built on the
    first call and kept while the bundle lives (loading and compiling its models costs up to a
    second a call)."""
    functions, key = _BUILT.setdefault(bundle, {}), (purpose, runtime())
    if key not in functions:
        functions[key] = build()
    return functions[key]


def runtime() -> str:
    """The runtime `DEIDPOOL_RUNTIME` names, else ONNX Runtime on a machine without a GPU."""
    chosen = os.environ.get("DEIDPOOL_RUNTIME")
    if chosen is None:
        return "tensorflow" if tf.config.list_physical_devices("GPU") else "onnxruntime"
    if chosen not in RUNTIMES:
        raise ValueError(f"DEIDPOOL_RUNTIME must be one of {', '.join(RUNTIMES)}, got {chosen!r}")
    return chosen


def _onnx_session(build: Callable):
    """`build()` when ONNX Runtime is the runtime and converts the models, else None (TensorFlow)."""
    if runtime() != "onnxruntime":
        return None
    try:
        return build()
    except UnsupportedModel as error:
        if "DEIDPOOL_RUNTIME" in os.environ:
            raise
        log.info("TensorFlow runs this model: %s", error)
        return None


_CHARS = tf.TensorSpec((None, None, CHAR_WIDTH), tf.uint16)


def compile_representer(representer, embedding_dim: int) -> BatchFunction:
    """Batch -> (B, T, d) representation vectors (noise as the model is set); a representer that
    reads characters reads the batch's `chars`."""
    chars_of = _chars_reader(representer)
    session = _onnx_session(lambda: RepresenterSession(representer, embedding_dim))
    if session is not None:
        return lambda batch: session(batch["features"], batch["length"], chars_of(batch))

    @tf.function(input_signature=[tf.TensorSpec((None, None, embedding_dim), tf.float32),
                                  tf.TensorSpec((None, None), tf.bool), _CHARS], autograph=False)
    def run(features, mask, chars):
        return representer(representer_inputs(representer, features, mask, chars))

    return lambda batch: run(batch["features"], batch["mask"], chars_of(batch)).numpy()


def compile_pipeline(representer, tagger, embedding_dim: int) -> BatchFunction:
    """Batch -> (B, T) Viterbi tag ids of the tagger over the representer's vectors."""
    return _compiled_pipeline(representer, tagger, embedding_dim, scores=False)


def compile_pipeline_scores(representer, tagger, embedding_dim: int) -> BatchFunction:
    """Batch -> (B, T, tags) the tagger's unary scores over the representer's vectors (the CRF's
    input: `deidpool.representer.marginals.crf_marginals` turns them into tag probabilities)."""
    return _compiled_pipeline(representer, tagger, embedding_dim, scores=True)


def _compiled_pipeline(representer, tagger, embedding_dim: int, scores: bool) -> BatchFunction:
    chars_of = _chars_reader(representer)
    session = _onnx_session(lambda: PipelineSession(representer, tagger, embedding_dim))
    if session is not None:
        output = session.scores if scores else session
        return lambda batch: output(batch["features"], batch["casing"], batch["length"], chars_of(batch))
    output = tagger if scores else tagger.predict_tags

    @tf.function(input_signature=[tf.TensorSpec((None, None, embedding_dim), tf.float32),
                                  tf.TensorSpec((None, None), tf.int8),
                                  tf.TensorSpec((None, None), tf.bool), _CHARS], autograph=False)
    def run(features, casing, mask, chars):
        # tf.identity drops the Keras mask
        vectors = tf.identity(representer(representer_inputs(representer, features, mask, chars)))
        return output({"features": vectors, "casing": casing, "mask": mask})

    return lambda batch: run(batch["features"], batch["casing"], batch["mask"], chars_of(batch)).numpy()


def compile_tagger_scores(tagger, embedding_dim: int) -> BatchFunction:
    """Batch -> (B, T, tags) unary scores of a raw-text tagger (`deidpool.representer.tagger.Tagger`
    on word embeddings; one that reads characters reads the batch's `chars`), with TensorFlow."""

    @tf.function(input_signature=[tf.TensorSpec((None, None, embedding_dim), tf.float32),
                                  tf.TensorSpec((None, None), tf.int8),
                                  tf.TensorSpec((None, None), tf.bool), _CHARS], autograph=False)
    def run(features, casing, mask, chars):
        return tagger({"features": features, "casing": casing, "mask": mask, "chars": chars}, training=False)

    def scores(batch: dict) -> np.ndarray:
        chars = batch.get("chars", np.zeros((len(batch["mask"]), 0, CHAR_WIDTH), np.uint16))
        return run(batch["features"], batch["casing"], batch["mask"], chars).numpy()

    return scores


def _chars_reader(representer) -> Callable[[dict], np.ndarray]:
    """Batch -> its character ids for a representer that reads them, else an empty placeholder (one
    compiled signature for both); decided once per compiled model, not per batch."""
    if not reads_chars(representer):
        return lambda batch: np.zeros((len(batch["mask"]), 0, CHAR_WIDTH), np.uint16)

    def read(batch: dict) -> np.ndarray:
        if "chars" not in batch:
            raise ValueError(f"{representer.name!r} reads characters: build its sentences with chars=True")
        return batch["chars"]

    return read


def apply_to_sentences(function: BatchFunction, data: SentenceData,
                       batch_size: int = INFERENCE_BATCH_SIZE) -> list[np.ndarray]:
    """`function`'s output for every sentence of `data`, in order, cut to its length."""
    result: list[np.ndarray] = [None] * len(data)
    for batch in padded_batches(data, batch_size):
        outputs = function(batch)
        for output, index, length in zip(outputs, batch["index"], batch["length"]):
            result[index] = output[:length]
    return result

