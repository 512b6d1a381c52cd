"""Sentences as model input (per-token features, casing ids, tag ids and, for raw-text taggers,
character ids, stored flat in memory, or streamed from shards too large to hold together), the
length-bucketed `tf.data` pipelines that batch them, and predicted tags back to documents."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from deidpool.corpus.document import Document, Span
from deidpool.corpus.tagging import decode
from deidpool.representer.characters import char_ids

BATCH_SIZE = 32
INFERENCE_BATCH_SIZE = 128
BUCKET_GROWTH = 1.2
SHUFFLE_SENTENCES = 2048  # a stream's shuffle buffer, in sentences
SHARDS_AT_ONCE = 4  # shards a shuffled stream reads in turn, one sentence from each


@dataclass(frozen=True, eq=False)
class SentenceData:
    """Sentences stored flat: token rows of all sentences one after another.

    `features` (tokens, dim) float32 are the tagger's inputs (word embeddings, or
    representation vectors from a contribution), `casing` (tokens,) casing ids, `tags`
    (tokens,) tag ids or None for unlabeled text, `lengths` (sentences,) tokens per
    sentence, each at least 1, `chars` (tokens, width) character ids for a tagger that reads
    them (`deidpool.representer.characters`) or None.
    """

    features: np.ndarray
    casing: np.ndarray
    lengths: np.ndarray
    tags: np.ndarray | None = None
    chars: np.ndarray | None = None

    def __post_init__(self):
        tokens = int(np.sum(self.lengths))
        if self.features.ndim != 2 or len(self.features) != tokens or len(self.casing) != tokens:
            raise ValueError(f"features {self.features.shape} and casing {self.casing.shape} must have one row "
                             f"per token ({tokens})")
        if self.tags is not None and len(self.tags) != tokens:
            raise ValueError(f"tags {self.tags.shape} must have one entry per token ({tokens})")
        if self.chars is not None and (self.chars.ndim != 2 or len(self.chars) != tokens):
            raise ValueError(f"chars {self.chars.shape} must have one row per token ({tokens})")
        if np.any(self.lengths < 1):
            raise ValueError("every sentence needs at least one token")

    def __len__(self):
        return len(self.lengths)

    @property
    def dim(self) -> int:
        return self.features.shape[1]

    def tag_counts(self, num_tags: int) -> np.ndarray:
        """How often each tag id occurs, (num_tags,) int64 (input of `compute_class_weights`)."""
        return np.bincount(self.tags, minlength=num_tags)

    @classmethod
    def from_arrays(cls, features: Sequence[np.ndarray], casing: Sequence[np.ndarray],
                    tags: Sequence[np.ndarray] | None = None) -> SentenceData:
        """From per-sentence arrays: (n_i, dim) features, (n_i,) casing ids and tag ids."""
        return cls(np.concatenate(features).astype(np.float32, copy=False),
                   np.concatenate(casing).astype(np.int8, copy=False),
                   np.array([len(f) for f in features], dtype=np.int64),
                   None if tags is None else np.concatenate(tags).astype(np.int32, copy=False))

    @classmethod
    def from_sentences(cls, sentences: Sequence, embeddings, vocabulary: Sequence[str] | None = None,
                       chars: bool = False) -> SentenceData:
        """From `deidpool.corpus.prepare` sentences: features by `embeddings.sentence_matrix` (one lookup
        for all tokens), tag ids in `vocabulary` when given (labeled sentences) and, with `chars`,
        the tokens' character ids."""
        tokens = [token for sentence in sentences for token in sentence.tokens]
        tags = None
        if vocabulary is not None:
            ids = {tag: i for i, tag in enumerate(vocabulary)}
            gold = [tag for sentence in sentences for tag in sentence.tags]
            unknown = sorted(set(gold) - ids.keys())
            if unknown:
                raise ValueError(f"tags not in the tag vocabulary: {', '.join(unknown)}")
            tags = np.fromiter((ids[tag] for tag in gold), dtype=np.int32, count=len(gold))
        return cls(embeddings.sentence_matrix(tokens),
                   np.concatenate([s.casing for s in sentences]).astype(np.int8, copy=False),
                   np.array([len(s.tokens) for s in sentences], dtype=np.int64), tags,
                   char_ids([token.text for token in tokens]) if chars else None)


@dataclass(frozen=True, eq=False)
class SentenceStream:
    """Labeled sentences read afresh on every pass from `shards` (e.g. the contribution files
    of a pooled run), never all in memory.

    Each shard is a callable returning an iterable of (features (n_i, dim) float32, casing
    (n_i,) int8, tags (n_i,) int32) per sentence; `count` sentences in all, `longest` tokens
    in the longest (the length buckets need it before the first pass).
    """

    shards: tuple[Callable[[], Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]], ...]
    count: int
    dim: int
    longest: int

    def __len__(self):
        return self.count


def training_batches(data: SentenceData | SentenceStream, seed: int | np.random.Generator,
                     batch_size: int = BATCH_SIZE) -> tf.data.Dataset:
    """One epoch of length-bucketed batches in an order shuffled by `seed` (or a generator).

    Sentences are shuffled, grouped into buckets of similar length and cut into batches
    within each bucket; the batches are shuffled too. A `SentenceStream` is shuffled as it
    streams, in bounded memory: its shards in a shuffled order, SHARDS_AT_ONCE of them read
    in turn, through a buffer of SHUFFLE_SENTENCES sentences; a bucket's batch leaves when it
    is full (the partial ones at the end).
    """
    rng = np.random.default_rng(seed)
    if isinstance(data, SentenceStream):
        return _streamed(data, batch_size, rng)
    order = rng.permutation(len(data))
    buckets = np.digitize(data.lengths[order], _bucket_boundaries(data.lengths.max()))
    batches = [batch for bucket in np.unique(buckets) for batch in _chunks(order[buckets == bucket], batch_size)]
    return _batched(data, [batches[i] for i in rng.permutation(len(batches))])


def inference_batches(data: SentenceData | SentenceStream, batch_size: int = INFERENCE_BATCH_SIZE) -> tf.data.Dataset:
    """Batches of sentences sorted by length (least padding); `index` restores the order. A
    `SentenceStream` is read shard after shard and batched by length bucket."""
    if isinstance(data, SentenceStream):
        return _streamed(data, batch_size)
    return _batched(data, _by_length(data, batch_size))


def padded_batches(data: SentenceData, batch_size: int = INFERENCE_BATCH_SIZE) -> Iterator[dict]:
    """The batches of `inference_batches` for in-memory sentences, built in NumPy (no tf.data
    set-up per call: a compiled model fed one note at a time): `features` (B, T, dim), `casing`
    (B, T), `mask` (B, T) bool, `index` (B,) sentence numbers, `length` (B,) and, when kept,
    `chars` (B, T, width)."""
    starts = np.cumsum(data.lengths) - data.lengths
    for index in _by_length(data, batch_size):
        length = data.lengths[index]
        mask = np.arange(length.max()) < length[:, None]
        rows = (starts[index][:, None] + np.arange(mask.shape[1]))[mask]  # token rows in mask order
        features = np.zeros(mask.shape + (data.dim,), np.float32)
        features[mask] = data.features[rows]
        casing = np.zeros(mask.shape, np.int8)
        casing[mask] = data.casing[rows]
        batch = {"features": features, "casing": casing, "mask": mask, "index": index, "length": length}
        if data.chars is not None:
            batch["chars"] = np.zeros(mask.shape + data.chars.shape[1:], data.chars.dtype)
            batch["chars"][mask] = data.chars[rows]
        yield batch


def _by_length(data: SentenceData, batch_size: int) -> list[np.ndarray]:
    """Sentence numbers sorted by length (least padding), cut into batches."""
    return _chunks(np.argsort(data.lengths, kind="stable"), batch_size)


def _bucket_boundaries(longest: int, growth: float = BUCKET_GROWTH) -> list[int]:
    """Bucket bounds 2, 3, ... that grow by `growth` from one to the next, up past `longest`, so
    that padding a batch to its longest sentence wastes little."""
    bounds = [2]
    while bounds[-1] <= longest:
        bounds.append(max(bounds[-1] + 1, int(bounds[-1] * growth)))
    return bounds


def _chunks(indices: np.ndarray, size: int) -> list[np.ndarray]:
    return [indices[start:start + size] for start in range(0, len(indices), size)]


def _batched(data: SentenceData, batches: list[np.ndarray]) -> tf.data.Dataset:
    """Dicts per batch: `features` (B, T, dim), `casing` (B, T), `mask` (B, T) bool, `tags`
    (B, T) when labeled, `chars` (B, T, width) when kept, `index` (B,) sentence numbers and
    `length` (B,), where T is the longest sentence of the batch. Rows are gathered from ragged
    tensors inside TensorFlow."""
    columns = {"features": data.features, "casing": data.casing}
    if data.tags is not None:
        columns["tags"] = data.tags
    if data.chars is not None:
        columns["chars"] = data.chars
    sentences = {name: tf.RaggedTensor.from_row_lengths(values, data.lengths) for name, values in columns.items()}
    lengths = tf.constant(data.lengths, tf.int32)

    def gather(indices):
        batch = {name: tf.gather(values, indices).to_tensor() for name, values in sentences.items()}
        length = tf.gather(lengths, indices)
        return {**batch, "index": indices, "length": length,
                "mask": tf.sequence_mask(length, tf.shape(batch["casing"])[1])}

    indices = tf.RaggedTensor.from_row_lengths(np.concatenate(batches), [len(batch) for batch in batches])
    return tf.data.Dataset.from_tensor_slices(indices).map(gather).prefetch(tf.data.AUTOTUNE)


def _streamed(data: SentenceStream, batch_size: int, rng: np.random.Generator | None = None) -> tf.data.Dataset:
    """The batches of `_batched` from a stream, read in order (`rng` None) or shuffled as
    `training_batches` says; `index` numbers the sentences in the order they were read."""
    signature = (tf.TensorSpec((None, data.dim), tf.float32), tf.TensorSpec((None,), tf.int8),
                 tf.TensorSpec((None,), tf.int32))
    order = np.arange(len(data.shards)) if rng is None else rng.permutation(len(data.shards))
    sentences = tf.data.Dataset.from_tensor_slices(order).interleave(
        lambda shard: tf.data.Dataset.from_generator(lambda i: data.shards[i](), args=(shard,),
                                                     output_signature=signature),
        cycle_length=1 if rng is None else SHARDS_AT_ONCE, block_length=1)
    if rng is not None:
        sentences = sentences.shuffle(SHUFFLE_SENTENCES, seed=int(rng.integers(2 ** 31)))

    def named(index, sentence):
        features, casing, tags = sentence
        return {"features": features, "casing": casing, "tags": tags, "index": index, "length": tf.shape(tags)[0]}

    def masked(batch):
        return {**batch, "mask": tf.sequence_mask(batch["length"], tf.shape(batch["casing"])[1])}

    bounds = _bucket_boundaries(data.longest)
    batches = sentences.enumerate().map(named).bucket_by_sequence_length(
        lambda sentence: sentence["length"], bounds, [batch_size] * (len(bounds) + 1))
    return batches.map(masked).prefetch(tf.data.AUTOTUNE)


def predicted_documents(documents: Sequence[Document], sentences: Sequence[Sequence], predictions: Sequence,
                        vocabulary: Sequence[str], scheme: str = "BIO") -> list[Document]:
    """Documents with the predicted spans, for `deidpool.corpus.metrics.evaluate_corpus`.

    `sentences[i]` are the prepared sentences of `documents[i]`; `predictions` holds tag id
    arrays for all of them in the same order (as flattened into `SentenceData`).
    """
    if len(predictions) != sum(map(len, sentences)):
        raise ValueError(f"{len(predictions)} predictions for {sum(map(len, sentences))} sentences")
    predicted = iter(predictions)
    result = []
    for document, doc_sentences in zip(documents, sentences, strict=True):
        spans = [Span(start, end, label, document.text[start:end])
                 for sentence in doc_sentences
                 for start, end, label in decode(sentence.tokens, [vocabulary[i] for i in next(predicted)], scheme)]
        result.append(Document(document.id, document.text, tuple(spans)))
    return result
