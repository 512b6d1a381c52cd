"""Tests of applying compiled models to sentences: NumPy batches give the outputs of the tf.data
batches, and calls of any size reuse one trace of the compiled function."""

import numpy as np

from client.inference import apply_to_sentences, compile_pipeline, compile_representer
from corpus.prepare import prepare_text
from representer.dataset import SentenceData, inference_batches, padded_batches


def sentence_data(documents, embeddings, notes: slice) -> SentenceData:
    return SentenceData.from_sentences([sentence for document in documents[notes]
                                        for sentence in prepare_text(document.text)], embeddings)


def through_tf_data(function, data: SentenceData, batch_size: int) -> list[np.ndarray]:
    """The outputs as `apply_to_sentences` computed them before NumPy batching."""
    result = [None] * len(data)
    for batch in inference_batches(data, batch_size):
        for output, index, length in zip(function(batch).numpy(), batch["index"].numpy(), batch["length"].numpy()):
            result[index] = output[:length]
    return result


def test_padded_batches_are_the_tf_data_batches(documents, embeddings):
    data = sentence_data(documents, embeddings, slice(0, 3))
    for ours, theirs in zip(padded_batches(data, 16), inference_batches(data, 16).as_numpy_iterator(), strict=True):
        assert ours.keys() <= theirs.keys()
        for name, values in ours.items():
            assert values.dtype == theirs[name].dtype or name in ("index", "length")
            np.testing.assert_array_equal(values, theirs[name])


def test_outputs_equal_the_tf_data_path_and_calls_of_any_size_trace_once(documents, pipeline, embeddings):
    representer, traces = pipeline.load_representer(deterministic=True), []

    def counted(inputs):  # runs only while the compiled function is traced
        traces.append(1)
        return representer(inputs)

    tag = compile_pipeline(counted, pipeline.load_tagger(), embeddings.dim)
    one_note, notes = (sentence_data(documents, embeddings, part) for part in (slice(0, 1), slice(1, 6)))
    for data, batch_size in ((one_note, 128), (notes, 128), (notes, 7), (one_note, 3)):
        for ours, theirs in zip(apply_to_sentences(tag, data, batch_size), through_tf_data(tag, data, batch_size),
                                strict=True):
            np.testing.assert_array_equal(ours, theirs)
    assert len(traces) == 1


def test_representer_vectors_equal_the_tf_data_path(documents, pipeline, embeddings):
    represent = compile_representer(pipeline.load_representer(deterministic=True), embeddings.dim)
    data = sentence_data(documents, embeddings, slice(0, 2))
    for ours, theirs in zip(apply_to_sentences(represent, data, 8), through_tf_data(represent, data, 8), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_no_sentences_give_no_outputs(pipeline, embeddings):
    empty = SentenceData(np.zeros((0, embeddings.dim), np.float32), np.zeros(0, np.int8), np.zeros(0, np.int64))
    assert apply_to_sentences(lambda batch: None, empty) == []


def test_a_call_builds_no_tf_data_pipeline(documents, pipeline, embeddings, monkeypatch):
    import tensorflow as tf

    represent = compile_representer(pipeline.load_representer(deterministic=True), embeddings.dim)
    monkeypatch.setattr(tf.data.Dataset, "from_tensor_slices", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert len(apply_to_sentences(represent, sentence_data(documents, embeddings, slice(0, 1)))) > 0
