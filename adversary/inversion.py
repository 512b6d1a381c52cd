"""Attack A1 by inversion: a BiLSTM learns to map representation sequences back to the word
embeddings they came from; it succeeds when the nearest vocabulary word of its output for a
held-out hidden PHI token is that token.

Only the PHI tokens the method hides are scored: the replaceable PHI tokens that have a
pseudonym with another vector (`PairSource.positions`), not punctuation or words without a
vector of their own (no vocabulary row to rank). Two guesses that never look at a
representation are the level to beat: the most frequent hidden training PHI words of the
token's category (`frequency_baseline`) and an inverter that reads the context alone, the
hidden tokens zeroed (`context_only_inversion`). 1/N is no such level: PHI words are far from
uniform, and their context tells a lot about them.

On the export path (`PairSource.export_path`) the inverter reads what an export shares, the
representation of a freshly pseudonymized copy of each sentence (a new draw every training
epoch), and is scored against the ORIGINAL token."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from deidpool.adversary.pairs import PairSource
from deidpool.adversary.procedures import represent
from deidpool.pseudonymization.pseudonymize import tag_category
from deidpool.representer.dataset import BATCH_SIZE, SentenceData, inference_batches, training_batches
from deidpool.representer.progress import progress_bar
from deidpool.representer.training import _load_checkpoint, _save_checkpoint, stop_if_over_budget

QUERY_CHUNK = 64  # PHI tokens ranked against the vocabulary at once (64 x 400k floats for GloVe)
TOP = 10  # the wider score: the true word among the TOP best guesses


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


def hidden_mask(pairs: PairSource) -> np.ndarray:
    """(tokens,) bool over the flat tokens of `pairs`: the PHI tokens the method hides."""
    hidden = np.zeros(len(pairs.features), bool)
    for offset, positions in zip(pairs.offsets, pairs.positions):
        hidden[offset + np.asarray(positions)] = True
    return hidden


def hidden_tokens(pairs: PairSource) -> tuple[np.ndarray, list[str]]:
    """Vocabulary row (`Embeddings.lookup_ids`, so "Smith" and "smith" are one word) and category
    ("B-NAME" -> "NAME") of every hidden PHI token of `pairs`, in token order. All have a row:
    only in-vocabulary tokens give fake pairs."""
    tagged = [(token, tag) for sentence in pairs.sentences for token, tag in zip(sentence.tokens, sentence.tags)]
    hidden = [pair for pair, keep in zip(tagged, hidden_mask(pairs)) if keep]
    return (pairs.pseudonymizer.embeddings.lookup_ids([token for token, _ in hidden]),
            [tag_category(tag) for _, tag in hidden])


def rank_scores(ranks: np.ndarray) -> dict:
    """`tokens` scored, `top1` and `top10`: the share whose true word was the best guess, or
    among the TOP best (None without tokens)."""
    count = len(ranks)
    return {"tokens": count, "top1": float(np.mean(ranks < 1)) if count else None,
            "top10": float(np.mean(ranks < TOP)) if count else None}


def frequency_baseline(train: PairSource, test: PairSource) -> dict:
    """Guesses that look at no representation: for every hidden PHI token of `test`, the hidden
    PHI words of `train` of its category ranked by frequency (ties in order of first
    occurrence; a category `train` lacks guesses nothing). Scored like `inversion_attack`."""
    counts = defaultdict(Counter)
    for row, name in zip(*hidden_tokens(train)):
        counts[name][row] += 1
    guesses = {name: {row: rank for rank, (row, _) in enumerate(count.most_common(TOP))}
               for name, count in counts.items()}
    rows, categories = hidden_tokens(test)
    return rank_scores(np.array([guesses.get(name, {}).get(row, TOP) for row, name in zip(rows, categories)], np.int64))


def _as_sentences(pairs: PairSource, draw: int = 0) -> SentenceData:
    """The sentences of `pairs` as `SentenceData`, tagged 1 at the hidden PHI tokens: features
    are the embeddings (D wide), on the export path followed by those of pseudonymized copies
    (draw `draw`) the representer reads (2 D wide; see `_with_shared`); `chars` those the
    representer reads, when the pairs carry them."""
    features, chars = pairs.features, pairs.chars
    if pairs.export_path:
        shared = pairs.draw(seed=draw)
        features, chars = np.concatenate([features, shared.shared_original], axis=1), shared.shared_original_chars
    return SentenceData(features, np.zeros(len(features), np.int8), pairs.lengths, hidden_mask(pairs).astype(np.int32),
                        chars if pairs.char_width else None)


def _with_shared(batch, dim: int) -> dict:
    """A batch of `_as_sentences` with `features` the embeddings and `shared` what the
    representer reads (the same on the bare path)."""
    return {**batch, "features": batch["features"][..., :dim], "shared": batch["features"][..., -dim:]}


def in_vocabulary(batch):
    """Loss weights (B, T): 1 at real in-vocabulary tokens (non-zero embeddings)."""
    known = ops.any(ops.not_equal(batch["features"], 0), axis=-1)
    return ops.cast(batch["mask"], "float32") * ops.cast(known, "float32")


def _hidden(batch):
    """Loss weights (B, T): 1 at the hidden PHI tokens."""
    return ops.cast(batch["tags"], "float32")


def inverter_estimates(inputs, weights, train: PairSource, test: PairSource, *, epochs: int, units: int,
                       seed: int = 0, learning_rate: float = 0.002, clipnorm: float = 1.0,
                       batch_size: int = BATCH_SIZE, progress: bool = True, label: str = "",
                       checkpoint: Path | None = None) -> np.ndarray:
    """Train an `Inverter` for `epochs` epochs over the sentences of `train` to map `inputs(batch)`
    back to the batch's embeddings, on the mean cosine distance weighted by `weights(batch)`;
    return its estimates for the tokens of `test`, (tokens, D) in token order. On the export
    path every epoch trains on a fresh pseudonymization of `train`.

    With `checkpoint`, the inverter and its optimizer are saved there after every epoch and a
    rerun continues from the last one (the same result as an uninterrupted run); inside a
    `deidpool.representer.training.time_budget` training stops after the last epoch that fits."""
    dim = test.pseudonymizer.embeddings.dim
    inverter = Inverter(dim, units)
    test_data = _as_sentences(test)
    batches = inference_batches(test_data)  # the estimates, in batches of INFERENCE_BATCH_SIZE (no gradient)

    def forward(batch):
        return inverter({"representation": inputs(_with_shared(batch, dim)), "mask": batch["mask"]})

    forward(next(iter(batches)))
    optimizer = keras.optimizers.Nadam(learning_rate, clipnorm=clipnorm)
    optimizer.build(inverter.trainable_variables)
    estimate = tf.function(forward, input_signature=[batches.element_spec], autograph=False)

    @tf.function(input_signature=[batches.element_spec], autograph=False)
    def train_step(batch):
        with tf.GradientTape() as tape:
            split = _with_shared(batch, dim)
            estimated, weight = ops.normalize(forward(batch), axis=-1), weights(split)
            cosine = ops.sum(estimated * ops.normalize(split["features"], axis=-1), axis=-1)
            loss = ops.sum((1 - cosine) * weight) / ops.maximum(ops.sum(weight), 1.0)
        optimizer.apply(tape.gradient(loss, inverter.trainable_variables), inverter.trainable_variables)

    models, optimizers = {"inverter": inverter}, {"inverter": optimizer}
    state = {"epochs": 0, "longest": 0.0}
    if checkpoint is not None and checkpoint.exists():
        state, _ = _load_checkpoint(checkpoint, models, optimizers)
    fixed = None if train.export_path else _as_sentences(train)
    for epoch in progress_bar(range(state["epochs"], epochs), initial=state["epochs"], total=epochs,
                              desc=f"inversion {label}".strip(), unit="epoch", disable=not progress):
        stop_if_over_budget(state["longest"], f"inversion {label}: stopped after epoch {epoch} of {epochs} to stay "
                                              "within the time budget; rerun to resume")
        started = time.perf_counter()
        train_data = fixed if fixed is not None else _as_sentences(train, draw=epoch)
        for batch in training_batches(train_data, np.random.default_rng([seed, epoch]), batch_size):
            train_step(batch)
        state = {"epochs": epoch + 1, "longest": max(state["longest"], time.perf_counter() - started)}
        if checkpoint is not None:
            _save_checkpoint(checkpoint, state, models, optimizers, {"inverter": []})
    estimates = np.zeros_like(test.features)
    for batch in batches:
        values = estimate(batch).numpy()
        for row, index, length in zip(values, batch["index"].numpy(), batch["length"].numpy()):
            estimates[test.offsets[index]:test.offsets[index] + length] = row[:length]
    return estimates


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


def _ranked(estimates: np.ndarray, test: PairSource) -> dict:
    """Scores of the estimates (tokens, D) of the tokens of `test`: the whole vocabulary ranked
    for every hidden PHI token."""
    rows, _ = hidden_tokens(test)
    vocabulary = test.pseudonymizer.embeddings.kv.get_normed_vectors()
    return rank_scores(vocabulary_ranks(estimates[hidden_mask(test)], rows, vocabulary))


def inversion_attack(representer, train: PairSource, test: PairSource, **options) -> dict:
    """Train an `Inverter` on `representer`'s output for the sentences of `train` (loss on every
    in-vocabulary token), then rank the whole vocabulary for every hidden PHI token of `test`
    by its estimate. `options`: `epochs` and `units`
    (required), `seed`, `learning_rate`, `clipnorm`, `batch_size`, `progress` (a tqdm bar) and
    its `label`.

    Returns `tokens` (hidden PHI tokens ranked), `top1` and `top10` (share whose true word is the
    nearest, or among the 10 nearest, vocabulary words)."""
    def represented(batch):
        return represent(representer, batch["shared"], batch["mask"], chars=batch.get("chars"))

    return _ranked(inverter_estimates(represented, in_vocabulary, train, test, **options), test)


def context_only_inversion(train: PairSource, test: PairSource, **options) -> dict:
    """The context-only baseline: the `Inverter` of `inversion_attack` on raw embeddings with the
    hidden PHI tokens zeroed, its loss on those tokens alone, scored the same way; it sees only
    what surrounds a hidden token. `options` as for `inversion_attack`."""
    def context(batch):
        return batch["features"] * (1 - _hidden(batch))[..., None]

    return _ranked(inverter_estimates(context, _hidden, train, test, **options), test)
