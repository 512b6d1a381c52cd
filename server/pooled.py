"""The pooled tagger's training, without the database: the sentences of a run's contributions,
decrypted, verified and checked (the uploads' `deidpool.contribution.validation.check_sentence`) chunk
by chunk on every pass (so memory does not grow with the pool), split between training and
validation (each institution gives `valid_fraction` of its own sentences to validation), and
the BiLSTM-CRF tagger trained on them in a resumable run directory, on one device or across
the workers of a `tf.distribute` cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deidpool.contribution.container import ContributionHeader, iter_sentences, verify_contribution
from deidpool.contribution.records import ContributionError, ContributionSentence
from deidpool.contribution.validation import check_sentence
from deidpool.representer.dataset import BATCH_SIZE, SentenceData, SentenceStream
from deidpool.representer.distribution import training_strategy
from deidpool.representer.tagger import build_tagger, compute_class_weights
from deidpool.representer.training import TaggerTraining, run_training


class PooledDataError(ValueError):
    """Contributions that cannot make a pooled training set; the message says why."""


@dataclass(frozen=True)
class PooledContribution:
    """A stored contribution: its SHA-256 (its name in the payload store), file and sender."""

    sha256: str
    path: Path
    institution: str
    public_key: Ed25519PublicKey


@dataclass(frozen=True, eq=False)
class PooledData:
    """The pooled sentences as streams (`SentenceData` works too), the split (institution ->
    {"train": sentences, "valid": sentences}) and how often each tag id occurs in training.
    `failures` collects the errors raised while streaming, which TensorFlow would bury in its own."""

    train: SentenceStream | SentenceData
    valid: SentenceStream | SentenceData
    split: dict[str, dict[str, int]]
    tag_counts: np.ndarray
    failures: list[PooledDataError] = field(default_factory=list)


def open_pooled_data(contributions: Sequence[PooledContribution], server_key: X25519PrivateKey, *,
                     representer_id: str, num_tags: int, valid_fraction: float, seed: int = 0) -> PooledData:
    """Verify every contribution and read it once, chunk by chunk, to check every sentence (with
    the uploads' `check_sentence`, as every later read does) and count its tags. The split: per
    institution (in id order), its contributions' sentences one after another, a seeded shuffle,
    and the first round(`valid_fraction` x its sentences) for validation, always leaving it at
    least one training sentence (counted in sentences of the notes: the draws of one sentence
    are held out together); it depends on the contributions, their order and `seed` only,
    so a resumed run gets the same. What stays in memory is a flag per sentence."""
    if not 0 < valid_fraction < 1:
        raise PooledDataError(f"valid_fraction must be between 0 and 1, got {valid_fraction}")
    if not contributions:
        raise PooledDataError(f"there are no contributions for representer {representer_id} to train on")
    headers = [_verified_header(contribution, representer_id) for contribution in contributions]
    dims = sorted({header.dim for header in headers})
    if len(dims) > 1:
        raise PooledDataError(f"the contributions have vectors of different sizes: {dims}")
    held, split = _held_out(contributions, headers, valid_fraction, seed)
    train_count, valid_count = (sum(counts[part] for counts in split.values()) for part in ("train", "valid"))
    if not valid_count:
        raise PooledDataError(f"a validation fraction of {valid_fraction} leaves no validation sentence "
                              f"among {train_count}; raise valid_fraction or pool more sentences")
    read = partial(_sentences, server_key=server_key, num_tags=num_tags, dim=dims[0])
    tag_counts, longest, valid_phi = np.zeros(num_tags, np.int64), 0, False
    for contribution, flags in zip(contributions, held):
        for in_valid, sentence in read(contribution, flags):
            longest = max(longest, len(sentence.tags))
            if in_valid:
                valid_phi = valid_phi or bool(sentence.tags.any())
            else:
                tag_counts += np.bincount(sentence.tags, minlength=num_tags)
    if not valid_phi:
        raise PooledDataError("the validation sentences hold no PHI: early stopping would have nothing to measure")
    failures: list[PooledDataError] = []

    def stream(valid: bool, count: int) -> SentenceStream:
        shards = tuple(partial(_shard, read, contribution, flags, valid, failures)
                       for contribution, flags in zip(contributions, held))
        return SentenceStream(shards, count, dims[0], longest)

    return PooledData(stream(False, train_count), stream(True, valid_count), split, tag_counts, failures)


def _verified_header(contribution: PooledContribution, representer_id: str) -> ContributionHeader:
    """The contribution's header, once its signature and body hash are checked and it is the
    contribution's institution's for `representer_id`."""
    try:
        header = verify_contribution(contribution.path, contribution.public_key)
    except ContributionError as error:
        raise PooledDataError(f"contribution {contribution.sha256}: {error}") from None
    if header.institution != contribution.institution or header.representer_id != representer_id:
        raise PooledDataError(f"contribution {contribution.sha256} is from {header.institution} for "
                              f"{header.representer_id}, not from {contribution.institution} for {representer_id}")
    return header


def _held_out(contributions: Sequence[PooledContribution], headers: Sequence[ContributionHeader],
              valid_fraction: float, seed: int) -> tuple[list[np.ndarray], dict[str, dict[str, int]]]:
    """Per contribution, a flag per sentence (true: validation), and the split's counts."""
    members: dict[str, list[int]] = {}
    for number, contribution in enumerate(contributions):
        members.setdefault(contribution.institution, []).append(number)
    rng = np.random.default_rng(seed)
    held: list[np.ndarray] = [np.zeros(0, bool)] * len(contributions)
    split = {}
    for institution in sorted(members):
        # a sentence's draws (one after another in its contribution) are held out together
        groups = [headers[number].sentences // headers[number].draws for number in members[institution]]
        total = sum(groups)
        valid = min(total - 1, round(valid_fraction * total))
        flags = np.zeros(total, bool)
        flags[rng.permutation(total)[:valid]] = True
        for number, part in zip(members[institution], np.split(flags, np.cumsum(groups)[:-1])):
            held[number] = np.repeat(part, headers[number].draws)
        valid_sentences = sum(int(held[number].sum()) for number in members[institution])
        split[institution] = {"train": sum(headers[number].sentences for number in members[institution])
                              - valid_sentences, "valid": valid_sentences}
    return held, split


def _sentences(contribution: PooledContribution, held: np.ndarray, *, server_key: X25519PrivateKey, num_tags: int,
               dim: int) -> Iterator[tuple[bool, ContributionSentence]]:
    """(held out for validation, sentence) for every sentence of the contribution, verified and
    decrypted chunk by chunk, each through `check_sentence` (and the counts checked against the
    signed header at the end); errors name the contribution."""
    try:
        for number, sentence in enumerate(iter_sentences(contribution.path, server_key, contribution.public_key)):
            check_sentence(sentence, number + 1, path=contribution.path, num_tags=num_tags, dim=dim)
            yield number < len(held) and bool(held[number]), sentence
    except ContributionError as error:
        raise PooledDataError(f"contribution {contribution.sha256}: {error}") from None


def _shard(read: Callable[..., Iterator[tuple[bool, ContributionSentence]]], contribution: PooledContribution,
           held: np.ndarray, valid: bool,
           failures: list[PooledDataError]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The contribution's validation (or training) sentences, as `read` (`_sentences`) gives
    them, as `SentenceStream` tuples; an error is also appended to `failures`."""
    try:
        for in_valid, sentence in read(contribution, held):
            if in_valid == valid:
                yield (sentence.vectors.astype(np.float32), sentence.casing.astype(np.int8),
                       sentence.tags.astype(np.int32))
    except PooledDataError as error:
        failures.append(error)
        raise


# What the pooled tagger's early stopping and kept epoch go by (representer.training.MONITORS): the
# validation loss, which keeps falling while a near-saturated validation PHI F1 only wobbles, so large
# pools train long enough. Chosen by experiments/federation.py; see its results page.
POOLED_MONITOR = "val_loss"
# LSTM units per direction of the pooled tagger's two layers: docs/method.md's 128. More units were no
# better and train and tag slower (experiments/federation.py and experiments/bench_speed.py; see their
# results pages).
POOLED_UNITS = 128


def train_pooled(data: PooledData, run_dir: str | Path, *, tags: Sequence[str], representer_id: str,
                 contributions: Sequence[str], max_epochs: int, patience: int, seed: int = 0,
                 lstm_units: int = POOLED_UNITS, word_dropout: float = 0.0, batch_size: int = BATCH_SIZE,
                 monitor: str = POOLED_MONITOR, on_epoch: Callable[[dict], None] | None = None) -> dict:
    """Train the pooled tagger on `data` with `run_training` in `run_dir` (resuming from its
    checkpoint if there is one) and return the best epoch's metrics (best by `monitor`, see
    `TaggerTraining`). `word_dropout`: the tagger's (`Tagger`). Class weights and optimizer
    settings are the tagger runs' defaults. config.json records the tag vocabulary, the
    representer id, the contributions (SHA-256) and the split, so the run directory says what
    it was trained on (and a resume on other data is refused). A contribution that fails to
    read in an epoch raises its `PooledDataError`.

    Training runs under `training_strategy()`: with a TF_CONFIG of several workers, every
    worker calls train_pooled with the same arguments and a `run_dir` the chief shares; each
    step's `batch_size` sentences are split between the workers, and only the chief writes
    `run_dir` and calls `on_epoch` (docs/worker-fleet.md)."""
    strategy = training_strategy()
    keras.utils.set_random_seed(seed)
    with strategy.scope():
        tagger = build_tagger(data.train.dim, len(tags), lstm_units=lstm_units, word_dropout=word_dropout)
        procedure = TaggerTraining(tagger, compute_class_weights(data.tag_counts), batch_size=batch_size,
                                   monitor=monitor)
    setup = {"tags": list(tags), "representer_id": representer_id, "contributions": sorted(contributions),
             "split": data.split, "train_sentences": len(data.train), "valid_sentences": len(data.valid)}
    try:
        return run_training(procedure, data.train, data.valid, run_dir, max_epochs=max_epochs, patience=patience,
                            seed=seed, config=setup, progress=False, on_epoch=on_epoch)
    except tf.errors.OpError:
        if data.failures:
            raise data.failures[0] from None
        raise
