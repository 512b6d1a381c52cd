"""Tests of applying compiled models to sentences: NumPy batches give the outputs of the tf.data
batches, calls of any size reuse one trace of the compiled function, and both runtimes give the
same vectors and tags."""

import numpy as np
import pytest

from deidpool.client.inference import apply_to_sentences, compile_pipeline, compile_representer, runtime
from deidpool.corpus.prepare import prepare_text
from deidpool.representer.dataset import SentenceData, inference_batches, padded_batches


def sentence_data(documents, embeddings, notes: slice) -> SentenceData:
    return SentenceData.from_sentences([sentence for document in documents[notes]
                                        for sentence in prepare_text(document.text)], embeddings)


def through_tf_data(function, data: SentenceData, batch_size: int) -> list[np.ndarray]:
    """The outputs as `apply_to_sentences` computed them before NumPy batching."""
    result = [None] * len(data)
    for batch in inference_batches(data, batch_size):
        for output, index, length in zip(function(batch), batch["index"].numpy(), batch["length"].numpy()):
            result[index] = output[:length]
    return result


def test_padded_batches_are_the_tf_data_batches(documents, embeddings):
    data = sentence_data(documents, embeddings, slice(0, 3))
    for ours, theirs in zip(padded_batches(data, 16), inference_batches(data, 16).as_numpy_iterator(), strict=True):
        assert ours.keys() <= theirs.keys()
        for name, values in ours.items():
            assert values.dtype == theirs[name].dtype or name in ("index", "length")
            np.testing.assert_array_equal(values, theirs[name])


@pytest.fixture
def tensorflow_runtime(monkeypatch):
    monkeypatch.setenv("DEIDPOOL_RUNTIME", "tensorflow")


def test_outputs_equal_the_tf_data_path_and_calls_of_any_size_trace_once(documents, pipeline, embeddings,
                                                                         tensorflow_runtime):
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


def test_representer_vectors_equal_the_tf_data_path(documents, pipeline, embeddings, tensorflow_runtime):
    represent = compile_representer(pipeline.load_representer(deterministic=True), embeddings.dim)
    data = sentence_data(documents, embeddings, slice(0, 2))
    for ours, theirs in zip(apply_to_sentences(represent, data, 8), through_tf_data(represent, data, 8), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_no_sentences_give_no_outputs(pipeline, embeddings):
    empty = SentenceData(np.zeros((0, embeddings.dim), np.float32), np.zeros(0, np.int8), np.zeros(0, np.int64))
    assert apply_to_sentences(lambda batch: None, empty) == []


def test_a_call_builds_no_tf_data_pipeline(documents, pipeline, embeddings, monkeypatch, tensorflow_runtime):
    import tensorflow as tf

    represent = compile_representer(pipeline.load_representer(deterministic=True), embeddings.dim)
    monkeypatch.setattr(tf.data.Dataset, "from_tensor_slices", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert len(apply_to_sentences(represent, sentence_data(documents, embeddings, slice(0, 1)))) > 0


@pytest.mark.parametrize("bundle", ["pipeline", "chars_pipeline"])
def test_both_runtimes_give_the_same_vectors_and_tags(documents, bundle, embeddings, monkeypatch, request):
    """Also for a representer that reads characters (ONNX Runtime builds their convolution)."""
    pipeline = request.getfixturevalue(bundle)
    data = SentenceData.from_sentences([sentence for document in documents[:4]
                                        for sentence in prepare_text(document.text)], embeddings,
                                       chars=pipeline.reads_chars)
    outputs = {}
    for name in ("onnxruntime", "tensorflow"):
        monkeypatch.setenv("DEIDPOOL_RUNTIME", name)
        representer, tagger = pipeline.load_representer(deterministic=True), pipeline.load_tagger()
        outputs[name] = (apply_to_sentences(compile_representer(representer, embeddings.dim), data),
                         apply_to_sentences(compile_pipeline(representer, tagger, embeddings.dim), data))
    for onnx_vectors, tf_vectors in zip(outputs["onnxruntime"][0], outputs["tensorflow"][0], strict=True):
        np.testing.assert_allclose(onnx_vectors, tf_vectors, atol=1e-5)
    for onnx_tags, tf_tags in zip(outputs["onnxruntime"][1], outputs["tensorflow"][1], strict=True):
        np.testing.assert_array_equal(onnx_tags, tf_tags)


def test_the_runtime_is_onnxruntime_on_a_cpu_unless_named(monkeypatch):
    monkeypatch.delenv("DEIDPOOL_RUNTIME", raising=False)
    assert runtime() == "onnxruntime"  # CI has no GPU
    monkeypatch.setenv("DEIDPOOL_RUNTIME", "tensorflow")
    assert runtime() == "tensorflow"
    monkeypatch.setenv("DEIDPOOL_RUNTIME", "torch")
    with pytest.raises(ValueError, match="DEIDPOOL_RUNTIME must be one of onnxruntime, tensorflow, got 'torch'"):
        runtime()


def test_a_model_onnx_cannot_run_falls_back_to_tensorflow_unless_onnxruntime_was_named(pipeline, embeddings,
                                                                                        monkeypatch):
    representer = pipeline.load_representer(deterministic=True)
    wrapped = lambda inputs: representer(inputs)  # noqa: E731 - not a Keras model: nothing to convert
    data = SentenceData(np.ones((3, embeddings.dim), np.float32), np.zeros(3, np.int8), np.array([3]))
    monkeypatch.delenv("DEIDPOOL_RUNTIME", raising=False)
    assert apply_to_sentences(compile_representer(wrapped, embeddings.dim), data)[0].shape == (3, pipeline.repr_size)
    monkeypatch.setenv("DEIDPOOL_RUNTIME", "onnxruntime")
    with pytest.raises(ValueError, match="not a representer"):
        compile_representer(wrapped, embeddings.dim)


def test_a_representer_that_reads_characters_reads_them_under_either_runtime(documents, chars_pipeline, pipeline,
                                                                            embeddings, monkeypatch):
    """The bundle says it reads characters; the vectors of a sentence change when only a token's
    spelling does; sentences built without character ids are refused; de-identification builds them."""
    from deidpool.client.deidentify import find_phi

    assert chars_pipeline.reads_chars and not pipeline.reads_chars
    note, respelled = (prepare_text(text) for text in ("Ana Lopez lives here.", "Eva Lopez lives here."))
    assert embeddings.vector("ana").tolist() == embeddings.vector("eva").tolist()  # neither is a known word
    for name in ("onnxruntime", "tensorflow"):
        monkeypatch.setenv("DEIDPOOL_RUNTIME", name)
        represent = compile_representer(chars_pipeline.load_representer(deterministic=True), embeddings.dim)
        first, second = (apply_to_sentences(represent, SentenceData.from_sentences(text, embeddings, chars=True))[0]
                         for text in (note, respelled))
        assert not np.allclose(first[0], second[0])
        with pytest.raises(ValueError, match="reads characters: build its sentences with chars=True"):
            apply_to_sentences(represent, SentenceData.from_sentences(note, embeddings))
        found = list(find_phi(documents[:2], chars_pipeline, embeddings))
        assert [document.id for document in found] == [document.id for document in documents[:2]]
