"""The de-identification tagger: a BiLSTM-CRF over per-token features (raw embeddings or a
representer's output) plus the casing feature (docs/method.md, Components: Tagger), and its loss."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from deidpool.corpus.casing import CASING
from deidpool.representer.characters import CHAR_WIDTH, CharacterFeatures
from deidpool.representer.crf import CRF, crf_nll
from deidpool.representer.dataset import INFERENCE_BATCH_SIZE, inference_batches

CASING_CLASSES = len(CASING)
MAX_CLASS_WEIGHT = 10.0


@keras.saving.register_keras_serializable(package="deidpool")
class VariationalLSTMCell(keras.layers.LSTMCell):
    """An LSTM cell with variational recurrent dropout through one mask shared by the four gates.

    The mask on the previous output is drawn once per sequence (Gal & Ghahramani 2016), as
    in `keras.layers.LSTM`; but Keras 3 keeps one mask per gate and then computes a step in
    eight matrix products: a tagger epoch took four times as long on 2 CPU cores. One shared mask
    (Keras 2's `implementation=2`) keeps a step at two products.
    """

    def __init__(self, units, recurrent_dropout=0.0, **kwargs):
        super().__init__(units, **kwargs)
        # Set after the parent, which would switch to its slow per-gate path for a nonzero rate.
        self.recurrent_dropout = recurrent_dropout

    def call(self, inputs, states, training=False):
        output, carry = states
        if training and self.recurrent_dropout > 0:
            output = output * self.get_recurrent_dropout_mask(output)
        return super().call(inputs, [output, carry], training=training)


@keras.saving.register_keras_serializable(package="deidpool")
class Tagger(keras.Model):
    """BiLSTM-CRF tagger.

    Inputs (a dict): `features` float32 (batch, time, dim), `casing` int (batch, time) casing
    ids, one-hot encoded inside, and `mask` bool (batch, time), True at real tokens; with
    `use_chars` also `chars` int (batch, time, width) character ids (raw-text taggers only,
    `deidpool.representer.characters`); other keys (e.g. `tags`) are ignored. Word dropout (a
    token's whole feature vector zeroed, with probability `word_dropout`, in training only: the
    tagger learns to read a PHI token from its context too, not only from the token's own
    vector, which in pooled exports is a surrogate's), the character features appended, input
    dropout, the casing one-hot appended, two BiLSTM layers (`VariationalLSTMCell`) each
    followed by dropout, a linear layer to per-tag scores and a CRF. `call` returns the unary
    scores (batch, time, num_tags) for `tagger_loss`; `predict_tags` returns the Viterbi paths.
    """

    def __init__(self, num_tags, casing_classes=CASING_CLASSES, use_casing=True, lstm_units=128,
                 input_dropout=0.1, recurrent_dropout=0.5, dropout=0.5, word_dropout=0.0, use_chars=False, **kwargs):
        super().__init__(**kwargs)
        self.num_tags = num_tags
        self.casing_classes = casing_classes
        self.use_casing = use_casing
        self.lstm_units = lstm_units
        self.input_dropout = input_dropout
        self.recurrent_dropout = recurrent_dropout
        self.dropout = dropout
        self.word_dropout = word_dropout
        self.use_chars = use_chars
        # Made only when used: a layer's seed generator takes a draw from the global seed, which
        # would change every later layer's random stream (and so the runs of taggers without it).
        self.token_dropout = keras.layers.Dropout(word_dropout, noise_shape=(None, None, 1), name="word_dropout") \
            if word_dropout > 0 else None
        self.characters = CharacterFeatures(name="characters") if use_chars else None
        self.feature_dropout = keras.layers.Dropout(input_dropout, name="input_dropout")
        # Both RNNs exist before either wrapper. Keras 3 builds a Bidirectional's two directions by
        # serializing the wrapped layer twice, keyed by id(layer) inside load_model; if the first
        # RNN were freed and the second got its address, the second wrapper would be handed the
        # first one's backward layer as its forward one, and loading would fail at random
        # ("Forward layer and backward layer should have different `go_backwards` value").
        rnns = [keras.layers.RNN(VariationalLSTMCell(lstm_units, recurrent_dropout=recurrent_dropout),
                                 return_sequences=True) for _ in (1, 2)]
        self.bilstms = [keras.layers.Bidirectional(rnn, name=f"bilstm_{i}") for i, rnn in enumerate(rnns, 1)]
        self.dropouts = [keras.layers.Dropout(dropout, name=f"dropout_{i}") for i in (1, 2)]
        self.scores = keras.layers.Dense(num_tags, name="tag_scores")
        self.crf = CRF(num_tags, name="crf")

    def build(self, input_shape):
        features = tuple(input_shape["features"])
        width = features[-1] + (self.casing_classes if self.use_casing else 0)
        if self.characters is not None:
            self.characters.build(tuple(input_shape["chars"]))
            width += self.characters.filters
        shape = features[:-1] + (width,)
        for bilstm in self.bilstms:
            bilstm.build(shape)
            shape = bilstm.compute_output_shape(shape)
        self.scores.build(shape)
        self.crf.build(shape[:-1] + (self.num_tags,))

    def call(self, inputs, training=None):
        x = ops.cast(inputs["features"], "float32")
        if self.token_dropout is not None:
            x = self.token_dropout(x, training=training)
        if self.characters is not None:
            x = ops.concatenate([x, self.characters(inputs["chars"])], axis=-1)
        x = self.feature_dropout(x, training=training)
        if self.use_casing:
            casing = ops.one_hot(ops.cast(inputs["casing"], "int32"), self.casing_classes)
            x = ops.concatenate([x, casing], axis=-1)
        mask = ops.cast(inputs["mask"], "bool")
        for bilstm, dropout in zip(self.bilstms, self.dropouts):
            x = dropout(bilstm(x, mask=mask, training=training), training=training)
        return self.scores(x)

    def predict_tags(self, inputs):
        """Viterbi tag ids (batch, time) int32, 0 at padded positions."""
        return self.crf(self(inputs, training=False), mask=inputs["mask"])

    def get_config(self):
        return {**super().get_config(), "num_tags": self.num_tags, "casing_classes": self.casing_classes,
                "use_casing": self.use_casing, "lstm_units": self.lstm_units,
                "input_dropout": self.input_dropout, "recurrent_dropout": self.recurrent_dropout,
                "dropout": self.dropout, "word_dropout": self.word_dropout,
                **({"use_chars": True} if self.use_chars else {})}  # runs saved before it stay resumable


def build_tagger(input_dim, num_tags, casing_classes=CASING_CLASSES, use_casing=True, lstm_units=128,
                 input_dropout=0.1, recurrent_dropout=0.5, dropout=0.5, word_dropout=0.0, use_chars=False,
                 name="tagger"):
    """A built `Tagger` for features of size `input_dim` (weights exist, ready to checkpoint)."""
    tagger = Tagger(num_tags, casing_classes, use_casing, lstm_units, input_dropout, recurrent_dropout, dropout,
                    word_dropout, use_chars, name=name)
    tagger.build({"features": (None, None, input_dim), "casing": (None, None), "mask": (None, None),
                  "chars": (None, None, CHAR_WIDTH)})
    return tagger


def compute_class_weights(tag_counts, max_weight=MAX_CLASS_WEIGHT):
    """Per-tag weights from tag frequencies: count("O") / count(tag), clipped to [1, max_weight].

    `tag_counts` has one count per tag id, "O" (id 0) first. "O" and unseen tags weigh 1,
    rare PHI tags up to `max_weight`. Returns float32 (num_tags,).
    """
    counts = np.asarray(tag_counts, dtype=np.float64)
    ratios = np.divide(counts[0], counts, out=np.ones_like(counts), where=counts > 0)
    return np.clip(ratios, 1.0, max_weight).astype(np.float32)


def sentence_weights(tags, mask, class_weights):
    """(batch,) weight of each sentence: the largest class weight among its gold tags.

    The CRF likelihood is one number per sentence, so class weights act through whole
    sentences: those with rare PHI tags count more.
    """
    weights = ops.take(ops.convert_to_tensor(class_weights, "float32"), ops.cast(tags, "int32"))
    return ops.max(ops.where(ops.cast(mask, "bool"), weights, 0.0), axis=1)


def tagger_loss(tagger, batch, class_weights=None, training=False):
    """Mean CRF negative log-likelihood of the gold `tags` of `batch`, sentences weighted by
    `sentence_weights` when `class_weights` is given."""
    unaries = tagger(batch, training=training)
    weights = None if class_weights is None else sentence_weights(batch["tags"], batch["mask"], class_weights)
    return crf_nll(tagger.crf, unaries, batch["tags"], batch["mask"], weights)


def tag_sentences(tagger, data, batch_size=INFERENCE_BATCH_SIZE):
    """Viterbi tag ids of every sentence of `data` (a `SentenceData`), one array per sentence, in order."""
    batches = inference_batches(data, batch_size)
    decode = tf.function(tagger.predict_tags, input_signature=[batches.element_spec])
    result = [None] * len(data)
    for batch in batches:
        paths = decode(batch).numpy()
        for path, index, length in zip(paths, batch["index"].numpy(), batch["length"].numpy()):
            result[index] = path[:length]
    return result
