"""Linear-chain CRF for the de-id tagger (docs/method.md, Components: Tagger): log-likelihood by the
forward algorithm in log space, Viterbi decoding, and the mean negative log-likelihood loss."""

import keras
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="deidpool")
class CRF(keras.layers.Layer):
    """Linear-chain CRF over per-token unary scores (batch, time, num_tags).

    A tag sequence y of a sentence of length n scores
    start[y_0] + sum_t unaries[t, y_t] + sum_t transitions[y_{t-1}, y_t] + end[y_{n-1}].
    The mask (batch, time) marks real tokens; sentences are left-aligned and at least one
    token long. Training and inference are split: `call` returns the Viterbi path (the
    model's prediction), while training feeds the unaries and gold tags to `crf_nll`
    (e.g. in a custom `train_step` or `compute_loss`).
    """

    def __init__(self, num_tags, **kwargs):
        super().__init__(**kwargs)
        self.num_tags = num_tags
        self.supports_masking = True

    def build(self, input_shape):
        if input_shape[-1] is not None and input_shape[-1] != self.num_tags:
            raise ValueError(f"CRF expects {self.num_tags} unary scores per token, got {input_shape[-1]}")
        tags = self.num_tags
        self.transitions = self.add_weight(shape=(tags, tags), initializer="glorot_uniform", name="transitions")
        self.start_transitions = self.add_weight(shape=(tags,), initializer="zeros", name="start_transitions")
        self.end_transitions = self.add_weight(shape=(tags,), initializer="zeros", name="end_transitions")

    def call(self, unaries, mask=None):
        return self.decode(unaries, mask)[0]

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags}

    def numpy_weights(self):
        """(transitions, start_transitions, end_transitions) as NumPy arrays, for a decoder outside
        the graph (`deidpool.representer.onnx_inference.viterbi`)."""
        return tuple(ops.convert_to_numpy(weight)
                     for weight in (self.transitions, self.start_transitions, self.end_transitions))

    def log_likelihood(self, unaries, tags, mask=None):
        """Per-sentence log p(tags | unaries), shape (batch,)."""
        return self.sequence_score(unaries, tags, mask) - self.log_partition(unaries, mask)

    def sequence_score(self, unaries, tags, mask=None):
        """Per-sentence unnormalized score of the given tag sequences, shape (batch,)."""
        unaries, mask = _prepare(unaries, mask)
        tags = ops.cast(tags, "int32")
        maskf = ops.cast(mask, unaries.dtype)
        unary = ops.sum(ops.squeeze(ops.take_along_axis(unaries, tags[..., None], axis=2), -1) * maskf, axis=1)
        pairs = tags[:, :-1] * self.num_tags + tags[:, 1:]
        transition = ops.sum(ops.take(ops.reshape(self.transitions, (-1,)), pairs) * maskf[:, 1:], axis=1)
        last = ops.maximum(ops.sum(ops.cast(mask, "int32"), axis=1) - 1, 0)
        last_tags = ops.squeeze(ops.take_along_axis(tags, last[:, None], axis=1), -1)
        start = ops.take(self.start_transitions, tags[:, 0])
        end = ops.take(self.end_transitions, last_tags)
        return unary + transition + start + end

    def log_partition(self, unaries, mask=None):
        """Per-sentence log of the summed exponentiated scores of all tag sequences, shape (batch,)."""
        unaries, mask = _prepare(unaries, mask)
        transitions = ops.convert_to_tensor(self.transitions)

        def step(alpha, inputs):
            unary, real = inputs
            scores = ops.logsumexp(alpha[:, :, None] + transitions[None], axis=1) + unary
            return ops.where(real[:, None], scores, alpha)

        alpha = self.start_transitions[None] + unaries[:, 0]
        alpha = tf.foldl(step, _next_tokens(unaries, mask), initializer=alpha)
        return ops.logsumexp(alpha + self.end_transitions[None], axis=1)

    def decode(self, unaries, mask=None):
        """Viterbi: the best tag paths (batch, time) int32, tag 0 where masked, and their scores (batch,)."""
        unaries, mask = _prepare(unaries, mask)
        transitions = ops.convert_to_tensor(self.transitions)
        stay = ops.broadcast_to(ops.arange(self.num_tags, dtype="int32")[None], ops.shape(unaries[:, 0]))

        def step(state, inputs):
            alpha, _ = state
            unary, real = inputs
            scores = alpha[:, :, None] + transitions[None]
            best = ops.max(scores, axis=1) + unary
            back = ops.cast(ops.argmax(scores, axis=1), "int32")
            # Padding keeps alpha and points every tag back to itself, so the path stays put.
            return ops.where(real[:, None], best, alpha), ops.where(real[:, None], back, stay)

        alpha = self.start_transitions[None] + unaries[:, 0]
        alphas, backs = tf.scan(step, _next_tokens(unaries, mask), initializer=(alpha, stay))
        final = alphas[-1] + self.end_transitions[None]
        last = ops.cast(ops.argmax(final, axis=1), "int32")

        def back_step(tag, back):
            return ops.squeeze(ops.take_along_axis(back, tag[:, None], axis=1), -1)

        path = ops.transpose(tf.scan(back_step, backs, initializer=last, reverse=True))
        return ops.where(mask, path, 0), ops.max(final, axis=1)


def crf_nll(crf_layer, unaries, tags, mask=None, sample_weight=None):
    """Mean negative log-likelihood of the gold tags over the batch.

    `sample_weight` (batch,) scales each sentence's NLL (Keras convention: mean of weighted
    losses). The CRF likelihood is a whole-sequence quantity, so per-token class weights do
    not factor into it; weighting whole sentences, e.g. by the largest class weight among
    their gold tags, upweights the rare sentences with PHI while keeping a proper objective.
    """
    nll = -crf_layer.log_likelihood(unaries, tags, mask)
    if sample_weight is not None:
        nll = nll * ops.cast(sample_weight, nll.dtype)
    return ops.mean(nll)


def _prepare(unaries, mask):
    unaries = ops.cast(unaries, "float32")
    if mask is None:
        return unaries, ops.ones(ops.shape(unaries)[:2], dtype="bool")
    return unaries, ops.cast(mask, "bool")


def _next_tokens(unaries, mask):
    """Time-major unaries and mask of the token after each position, padding after the last.

    Scanning over these takes one step per token (the last a no-op), so the scan is never
    empty, which graph mode cannot stack when the batch size is unknown.
    """
    unaries = ops.pad(unaries[:, 1:], ((0, 0), (0, 1), (0, 0)))
    mask = ops.pad(mask[:, 1:], ((0, 0), (0, 1)), constant_values=False)
    return ops.transpose(unaries, (1, 0, 2)), ops.transpose(mask)
