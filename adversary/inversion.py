"""Attack A1 by inversion: a BiLSTM learns to map representation sequences back to the word
embeddings they came from; it succeeds when the nearest vocabulary word of its output for a
held-out PHI token is that token."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import ops
from tqdm import tqdm

from adversary.pairs import PairSource
from representer.dataset import BATCH_SIZE, SentenceData, inference_batches, training_batches
from adversary.procedures import represent

QUERY_CHUNK = 64  # PHI tokens ranked against the vocabulary at once (64 x 400k floats for GloVe)


class Inverter(keras.Model):
    """Representation sequence (B, T, d) and mask -> embedding estimates (B, T, D): a linear map
    of each vector beside a BiLSTM over the sequence, so both the identity and context help."""

    def __init__(self, embedding_dim, units, **kwargs):
        super().__init__(**kwargs)
        self.encoder = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True), name="bilstm")
        self.estimate = keras.layers.Dense(embedding_dim, name="estimate")

    def call(self, inputs, training=None):
        representation = inputs["representation"]
        context = self.encoder(representation, mask=inputs["mask"], training=training)
        return self.estimate(ops.concatenate([representation, context], axis=-1))


def _as_sentences(pairs: PairSource) -> SentenceData:
    """The embeddings of the sentences of `pairs`, as unlabeled `SentenceData`."""
    return SentenceData(pairs.features, np.zeros(len(pairs.features), np.int8), pairs.lengths)


def _cosine_loss(inverter, representer, batch):
    """Mean cosine distance between estimates and embeddings over real in-vocabulary tokens."""
    embeddings, mask = batch["features"], batch["mask"]
    estimate = inverter({"representation": represent(representer, embeddings, mask), "mask": mask})
    cosine = ops.sum(ops.normalize(estimate, axis=-1) * ops.normalize(embeddings, axis=-1), axis=-1)
    weight = ops.cast(mask, "float32") * ops.cast(ops.any(ops.not_equal(embeddings, 0), axis=-1), "float32")
    return ops.sum((1 - cosine) * weight) / ops.maximum(ops.sum(weight), 1.0)


def vocabulary_ranks(estimates: np.ndarray, true_rows: np.ndarray, unit_vectors: np.ndarray) -> np.ndarray:
    """Per estimate, how many vocabulary rows are more cosine-similar to it than its true row."""
    ranks = []
    for start in range(0, len(estimates), QUERY_CHUNK):
        query = estimates[start:start + QUERY_CHUNK]
        query = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-12)
        similarity = query @ unit_vectors.T
        own = similarity[np.arange(len(query)), true_rows[start:start + QUERY_CHUNK]]
        ranks.append(np.sum(similarity > own[:, None], axis=1))
    return np.concatenate(ranks) if ranks else np.zeros(0, np.int64)


def inversion_attack(representer, train: PairSource, test: PairSource, *, epochs: int, units: int,
                     seed: int = 0, learning_rate: float = 0.002, clipnorm: float = 1.0,
                     batch_size: int = BATCH_SIZE, progress: bool = True, label: str = "") -> dict:
    """Train an `Inverter` on the sentences of `train` for `epochs` epochs, then rank the
    vocabulary (all of it) for every in-vocabulary PHI token of `test` by its estimate.

    Returns `tokens` (PHI tokens ranked), `top1` and `top10` (share whose true word is the
    nearest, or among the 10 nearest, vocabulary words)."""
    embeddings = test.pseudonymizer.embeddings
    inverter = Inverter(embeddings.dim, units)
    train_data, test_data = _as_sentences(train), _as_sentences(test)
    batches = inference_batches(test_data, batch_size)
    first = next(iter(batches))
    inverter({"representation": represent(representer, first["features"], first["mask"]), "mask": first["mask"]})
    optimizer = keras.optimizers.Nadam(learning_rate, clipnorm=clipnorm)
    optimizer.build(inverter.trainable_variables)

    @tf.function(input_signature=[batches.element_spec], autograph=False)
    def train_step(batch):
        with tf.GradientTape() as tape:
            loss = _cosine_loss(inverter, representer, batch)
        optimizer.apply(tape.gradient(loss, inverter.trainable_variables), inverter.trainable_variables)

    @tf.function(input_signature=[batches.element_spec], autograph=False)
    def estimate(batch):
        return inverter({"representation": represent(representer, batch["features"], batch["mask"]),
                         "mask": batch["mask"]})

    for epoch in tqdm(range(epochs), desc=f"inversion {label}".strip(), unit="epoch", disable=not progress):
        for batch in training_batches(train_data, np.random.default_rng([seed, epoch]), batch_size):
            train_step(batch)
    estimates = np.zeros_like(test.features)
    for batch in batches:
        values = estimate(batch).numpy()
        for row, index, length in zip(values, batch["index"].numpy(), batch["length"].numpy()):
            estimates[test.offsets[index]:test.offsets[index] + length] = row[:length]
    tokens = [token for sentence in test.sentences for token in sentence.tokens]
    phi = np.array([tag != "O" for sentence in test.sentences for tag in sentence.tags])
    rows = embeddings.lookup_ids(tokens)
    keep = phi & (rows >= 0)
    ranks = vocabulary_ranks(estimates[keep], rows[keep], embeddings.kv.get_normed_vectors())
    count = len(ranks)
    return {"tokens": count, "top1": float(np.mean(ranks < 1)) if count else None,
            "top10": float(np.mean(ranks < 10)) if count else None}
