"""Frozen representers and taggers run by ONNX Runtime on the CPU (issue: speed).

Each model becomes an ONNX graph built from its weights, with one fused ONNX `LSTM` operator per
BiLSTM (sequence lengths given, so padding is skipped as the Keras mask skips it): on 2 CPU cores
the representer's vectors come about twice as fast as from the compiled TensorFlow function.
The graphs hold no randomness: the representer's two noise layers, when on, are applied in NumPy
around the graph's noise-free core (input noise on the embeddings; output noise between the two
normalisations), from a generator seeded by the operating system. The Viterbi decoding of the
tagger's scores runs in NumPy too.

Only the layers these models are built from are converted (`build_representer`, `Tagger`,
`TaggerEnsemble`); anything else raises `UnsupportedModel`, and callers use TensorFlow instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import keras
import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from deidpool.representer.characters import CHAR_WIDTH, CharacterFeatures
from deidpool.representer.noise import TrainableGaussianNoise
from deidpool.representer.representation import reads_chars

OPSET = 17
NORM_EPSILON = 1e-12  # keras.ops.normalize's floor on the squared norm


class UnsupportedModel(ValueError):
    """The model holds layers this module cannot convert."""


class _Graph:
    """An ONNX graph under construction: named initializers and nodes with generated names."""

    def __init__(self):
        self.nodes, self.initializers = [], []

    def constant(self, values: np.ndarray) -> str:
        name = f"c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(np.asarray(values), name))
        return name

    def node(self, op: str, inputs: Sequence[str], **attributes) -> str:
        output = f"t{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, list(inputs), [output], **attributes))
        return output

    def model(self, inputs: list, output: str, width: int) -> onnx.ModelProto:
        outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", "time", width])]
        graph = helper.make_graph(self.nodes, "deidpool", inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        onnx.checker.check_model(model)
        return model


def _onnx_gates(weights: np.ndarray) -> np.ndarray:
    """Keras orders an LSTM's four gates (input, forget, cell, output) along the last axis;
    ONNX orders them (input, output, forget, cell)."""
    i, f, c, o = np.split(weights, 4, axis=-1)
    return np.concatenate([i, o, f, c], axis=-1)


def _lstm_cell(direction) -> keras.layers.LSTMCell:
    cell = direction.cell if isinstance(direction, keras.layers.RNN) else None
    if not isinstance(cell, keras.layers.LSTMCell):
        raise UnsupportedModel(f"{direction.name} is not an LSTM")
    if cell.activation is not keras.activations.tanh or cell.recurrent_activation is not keras.activations.sigmoid:
        raise UnsupportedModel(f"{direction.name} has activations other than tanh and sigmoid")
    return cell


def _bilstm(graph: _Graph, bilstm, x: str, lengths: str) -> str:
    """(batch, time, features) -> (batch, time, 2 x units) of a Keras `Bidirectional` LSTM."""
    if not isinstance(bilstm, keras.layers.Bidirectional) or bilstm.merge_mode != "concat":
        raise UnsupportedModel(f"{bilstm.name} is not a concatenating Bidirectional layer")
    kernels, recurrent, biases = [], [], []
    for direction in (bilstm.forward_layer, bilstm.backward_layer):
        cell = _lstm_cell(direction)
        kernels.append(_onnx_gates(keras.ops.convert_to_numpy(cell.kernel)).T)
        recurrent.append(_onnx_gates(keras.ops.convert_to_numpy(cell.recurrent_kernel)).T)
        bias = _onnx_gates(keras.ops.convert_to_numpy(cell.bias)) if cell.use_bias else np.zeros(4 * cell.units)
        biases.append(np.concatenate([bias, np.zeros_like(bias)]))  # ONNX adds a second, recurrent bias
    units = recurrent[0].shape[1]
    time_major = graph.node("Transpose", [x], perm=[1, 0, 2])
    y = graph.node("LSTM", [time_major, *(graph.constant(np.stack(w).astype(np.float32))
                                          for w in (kernels, recurrent, biases)), lengths],
                   direction="bidirectional", hidden_size=units)  # (time, 2, batch, units)
    y = graph.node("Transpose", [y], perm=[2, 0, 1, 3])
    return graph.node("Reshape", [y, graph.constant(np.array([0, 0, 2 * units], np.int64))])


def _dense(graph: _Graph, layer: keras.layers.Dense, x: str) -> str:
    if layer.activation is not keras.activations.linear:
        raise UnsupportedModel(f"{layer.name} has an activation")
    y = graph.node("MatMul", [x, graph.constant(keras.ops.convert_to_numpy(layer.kernel))])
    return graph.node("Add", [y, graph.constant(keras.ops.convert_to_numpy(layer.bias))]) if layer.use_bias else y


def _normalize(graph: _Graph, x: str) -> str:
    """Unit L2 norm along the last axis, as `keras.layers.UnitNormalization`."""
    squares = graph.node("ReduceSum", [graph.node("Mul", [x, x]), graph.constant(np.array([-1], np.int64))],
                         keepdims=1)
    norm = graph.node("Sqrt", [graph.node("Max", [squares, graph.constant(np.array(NORM_EPSILON, np.float32))])])
    return graph.node("Div", [x, norm])


def _check_representer(representer) -> None:
    names = {layer.name for layer in getattr(representer, "layers", [])}
    if not {"input_noise", "bilstm", "projection", "output_noise"} <= names:
        raise UnsupportedModel(f"{getattr(representer, 'name', representer)!r} is not a representer of "
                               "build_representer")


def _characters(graph: _Graph, layer: CharacterFeatures, chars: str) -> str:
    """(batch, time, width) int32 character ids -> (batch, time, filters), as `CharacterFeatures`:
    the ids embedded, the ReLU convolution over each token's characters, zero at padding, maximum."""
    table = keras.ops.convert_to_numpy(layer.embedding.embeddings)
    kernel = keras.ops.convert_to_numpy(layer.convolution.kernel)  # (size, embedding_dim, filters)
    size, embedding_dim, filters = kernel.shape
    flat = graph.node("Reshape", [chars, graph.constant(np.array([-1, CHAR_WIDTH], np.int64))])
    embedded = graph.node("Transpose", [graph.node("Gather", [graph.constant(table), flat])], perm=[0, 2, 1])
    left = (size - 1) // 2  # padding "same", as Keras pads
    convolved = graph.node("Conv", [embedded, graph.constant(kernel.transpose(2, 1, 0)),
                                    graph.constant(keras.ops.convert_to_numpy(layer.convolution.bias))],
                           kernel_shape=[size], pads=[left, size - 1 - left])
    real = graph.node("Cast", [graph.node("Greater", [flat, graph.constant(np.array(0, np.int32))])],
                      to=TensorProto.FLOAT)
    masked = graph.node("Mul", [graph.node("Relu", [convolved]), graph.node("Unsqueeze", [real, graph.constant(
        np.array([1], np.int64))])])
    longest = graph.node("ReduceMax", [masked], axes=[2], keepdims=0)  # (batch x time, filters)
    batch_time = graph.node("Slice", [graph.node("Shape", [chars]), graph.constant(np.array([0], np.int64)),
                                      graph.constant(np.array([2], np.int64))])
    shape = graph.node("Concat", [batch_time, graph.constant(np.array([filters], np.int64))], axis=0)
    return graph.node("Reshape", [longest, shape])


def _representer_core(graph: _Graph, representer, x: str, lengths: str, chars: str = "chars") -> str:
    """The representer's noise-free vectors: BiLSTM (over the embeddings and, for a representer
    that reads them, the features of `chars`), projection, unit norm."""
    _check_representer(representer)
    if reads_chars(representer):
        x = graph.node("Concat", [x, _characters(graph, representer.get_layer("characters"), chars)], axis=-1)
    x = _bilstm(graph, representer.get_layer("bilstm"), x, lengths)
    return _normalize(graph, _dense(graph, representer.get_layer("projection"), x))


def _tagger_scores(graph: _Graph, tagger, x: str, casing: str, lengths: str) -> str:
    """A `Tagger`'s unary scores (batch, time, num_tags) at inference (no dropout)."""
    if tagger.use_chars:
        raise UnsupportedModel(f"{tagger.name!r} reads characters: only a raw-text tagger can, not one behind a "
                               "representer")
    if tagger.use_casing:
        one_hot = graph.node("Gather", [graph.constant(np.eye(tagger.casing_classes, dtype=np.float32)), casing])
        x = graph.node("Concat", [x, one_hot], axis=-1)
    for bilstm in tagger.bilstms:
        x = _bilstm(graph, bilstm, x, lengths)
    return _dense(graph, tagger.scores, x)


def _inputs(dim: int, casing: bool = False, chars: bool = False) -> list:
    inputs = [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", "time", dim]),
              helper.make_tensor_value_info("lengths", TensorProto.INT32, ["batch"])]
    if casing:
        inputs.append(helper.make_tensor_value_info("casing", TensorProto.INT32, ["batch", "time"]))
    if chars:
        inputs.append(helper.make_tensor_value_info("chars", TensorProto.INT32, ["batch", "time", CHAR_WIDTH]))
    return inputs


def representer_graph(representer, dim: int) -> onnx.ModelProto:
    """features (batch, time, dim) float32, lengths (batch,) int32 -> the noise-free unit
    vectors (batch, time, repr_size), zero-padded past each length before normalising."""
    graph = _Graph()
    output = _representer_core(graph, representer, "features", "lengths")
    return graph.model(_inputs(dim, chars=reads_chars(representer)), output, representer.output_shape[-1])


def pipeline_graph(representer, taggers: Sequence, dim: int) -> onnx.ModelProto:
    """features, lengths and casing (batch, time) int32 -> the taggers' mean unary scores over
    the noise-free representer's vectors (the noise is off when de-identifying)."""
    graph = _Graph()
    vectors = _representer_core(graph, representer, "features", "lengths")
    scores = [_tagger_scores(graph, tagger, vectors, "casing", "lengths") for tagger in taggers]
    mean = scores[0] if len(scores) == 1 else graph.node(
        "Div", [graph.node("Sum", scores), graph.constant(np.array(len(scores), np.float32))])
    return graph.model(_inputs(dim, casing=True, chars=reads_chars(representer)), mean, taggers[0].num_tags)


def _session(model: onnx.ModelProto) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = len(os.sched_getaffinity(0))
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _noise_stddevs(representer) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The per-feature stds of the input and output noise of a representer `_representer_core`
    has checked, None where that noise is off."""
    stddevs = []
    for name in ("input_noise", "output_noise"):
        layer = representer.get_layer(name)
        if not isinstance(layer, TrainableGaussianNoise):
            raise UnsupportedModel(f"{name} is not a TrainableGaussianNoise layer")
        stddevs.append(None if layer.deterministic else keras.ops.convert_to_numpy(layer.stddev).astype(np.float32))
    return tuple(stddevs)


def _feed(features: np.ndarray, lengths: np.ndarray, chars: np.ndarray | None, reads_chars: bool, **more) -> dict:
    """A session's inputs: `chars` (batch, time, width) only for a representer that reads them."""
    return {"features": features, "lengths": lengths.astype(np.int32), **more,
            **({"chars": chars.astype(np.int32)} if reads_chars else {})}


class RepresenterSession:
    """A representer under ONNX Runtime: `(features, lengths[, chars]) -> vectors`, with its noise
    (as the model was set when this was built) drawn in NumPy."""

    def __init__(self, representer, dim: int):
        self._session = _session(representer_graph(representer, dim))
        self._input_noise, self._output_noise = _noise_stddevs(representer)
        self._reads_chars = reads_chars(representer)
        self._rng = np.random.default_rng()

    def __call__(self, features: np.ndarray, lengths: np.ndarray, chars: np.ndarray | None = None) -> np.ndarray:
        if self._input_noise is not None:
            features = self._noise(features.shape, self._input_noise) + features
        vectors = self._session.run(None, _feed(features, lengths, chars, self._reads_chars))[0]
        if self._output_noise is None:
            return vectors
        vectors += self._noise(vectors.shape, self._output_noise)
        vectors /= np.sqrt(np.maximum(np.einsum("...i,...i->...", vectors, vectors), NORM_EPSILON))[..., None]
        return vectors

    def _noise(self, shape: tuple, stddev: np.ndarray) -> np.ndarray:
        noise = self._rng.standard_normal(shape, np.float32)
        noise *= stddev
        return noise


class PipelineSession:
    """A noise-free representer and its tagger (or `TaggerEnsemble`) under ONNX Runtime:
    `(features, casing, lengths[, chars]) -> Viterbi tag ids (batch, time)`, 0 past each length."""

    def __init__(self, representer, tagger, dim: int):
        self._session = _session(pipeline_graph(representer, getattr(tagger, "taggers", [tagger]), dim))
        if any(stddev is not None for stddev in _noise_stddevs(representer)):
            raise UnsupportedModel("a pipeline's representer runs without noise (load it deterministic)")
        self._transitions, self._start, self._end = tagger.crf.numpy_weights()
        self._reads_chars = reads_chars(representer)

    def __call__(self, features: np.ndarray, casing: np.ndarray, lengths: np.ndarray,
                 chars: np.ndarray | None = None) -> np.ndarray:
        return viterbi(self.scores(features, casing, lengths, chars), lengths, self._transitions, self._start,
                       self._end)

    def scores(self, features: np.ndarray, casing: np.ndarray, lengths: np.ndarray,
               chars: np.ndarray | None = None) -> np.ndarray:
        """The tagger's unary scores (batch, time, tags), the mean of an ensemble's members'."""
        return self._session.run(None, _feed(features, lengths, chars, self._reads_chars,
                                             casing=casing.astype(np.int32)))[0]


def viterbi(scores: np.ndarray, lengths: np.ndarray, transitions: np.ndarray, start: np.ndarray,
            end: np.ndarray) -> np.ndarray:
    """The best tag paths (batch, time) int32 under a CRF (`deidpool.representer.crf.CRF.decode` in
    NumPy): unary `scores` (batch, time, tags), `transitions[i, j]` from tag i to tag j."""
    batch, time, _ = scores.shape
    alpha = start[None] + scores[:, 0]
    backs = np.zeros((time, batch, scores.shape[2]), np.int32)
    for t in range(1, time):
        candidates = alpha[:, :, None] + transitions[None]
        backs[t] = candidates.argmax(axis=1)
        alpha = np.where((t < lengths)[:, None], candidates.max(axis=1) + scores[:, t], alpha)
    tag = (alpha + end[None]).argmax(axis=1).astype(np.int32)
    paths = np.zeros((batch, time), np.int32)
    rows = np.arange(batch)
    for t in range(time - 1, -1, -1):
        real = t < lengths
        paths[real, t] = tag[real]
        if t:
            tag = np.where(real, backs[t, rows, tag], tag)
    return paths
