"""The pooled tagger's training, without the database: decrypt the contributions of a run into
training and validation sentences (each institution gives `valid_fraction` of its own
sentences to validation), then train the BiLSTM-CRF tagger on them in a resumable run directory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import keras
import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from client.contribution import ContributionError, ContributionSentence, iter_sentences, read_header
from representer.dataset import SentenceData
from representer.tagger import build_tagger, compute_class_weights
from representer.training import TaggerTraining, run_training


class PooledDataError(ValueError):
    """Contributions that cannot make a pooled training set; the message says why."""


@dataclass(frozen=True)
class PooledContribution:
    """A stored contribution: its SHA-256 (its name in the payload store), file and sender."""

    sha256: str
    path: Path
    institution: str
    public_key: Ed25519PublicKey


@dataclass(frozen=True)
class PooledData:
    train: SentenceData
    valid: SentenceData
    split: dict[str, dict[str, int]]  # institution -> {"train": sentences, "valid": sentences}


def load_pooled_data(contributions: Sequence[PooledContribution], server_key: X25519PrivateKey, *,
                     representer_id: str, num_tags: int, valid_fraction: float, seed: int = 0) -> PooledData:
    """Decrypt and verify every contribution and split the sentences: per institution (in
    id order), a seeded shuffle and the first round(`valid_fraction` x its sentences) for
    validation, always leaving it at least one training sentence."""
    if not 0 < valid_fraction < 1:
        raise PooledDataError(f"valid_fraction must be between 0 and 1, got {valid_fraction}")
    if not contributions:
        raise PooledDataError(f"there are no contributions for representer {representer_id} to train on")
    by_institution: dict[str, list] = {}
    dims = set()
    for contribution in contributions:
        dim, sentences = _read(contribution, server_key, representer_id, num_tags)
        dims.add(dim)
        by_institution.setdefault(contribution.institution, []).extend(sentences)
    if len(dims) > 1:
        raise PooledDataError(f"the contributions have vectors of different sizes: {sorted(dims)}")
    rng = np.random.default_rng(seed)
    train, valid, split = [], [], {}
    for institution in sorted(by_institution):
        sentences = by_institution[institution]
        order = rng.permutation(len(sentences))
        held = min(len(sentences) - 1, round(valid_fraction * len(sentences)))
        valid += [sentences[i] for i in order[:held]]
        train += [sentences[i] for i in order[held:]]
        split[institution] = {"train": len(sentences) - held, "valid": held}
    if not valid:
        raise PooledDataError(f"a validation fraction of {valid_fraction} leaves no validation sentence "
                              f"among {len(train)}; raise valid_fraction or pool more sentences")
    if not any(np.any(sentence.tags != 0) for sentence in valid):
        raise PooledDataError("the validation sentences hold no PHI: early stopping would have nothing to measure")
    return PooledData(_sentence_data(train), _sentence_data(valid), split)


def _read(contribution: PooledContribution, server_key: X25519PrivateKey, representer_id: str,
          num_tags: int) -> tuple[int, list[ContributionSentence]]:
    """(vector size, sentences) of a contribution, verified and decrypted."""
    try:
        sentences = list(iter_sentences(contribution.path, server_key, contribution.public_key))
        header = read_header(contribution.path)
    except ContributionError as error:
        raise PooledDataError(f"contribution {contribution.sha256}: {error}") from None
    if header.institution != contribution.institution or header.representer_id != representer_id:
        raise PooledDataError(f"contribution {contribution.sha256} is from {header.institution} for "
                              f"{header.representer_id}, not from {contribution.institution} for {representer_id}")
    if any(sentence.tags.max() >= num_tags for sentence in sentences):
        raise PooledDataError(f"contribution {contribution.sha256} has tag ids outside the tag vocabulary "
                              f"of {num_tags} tags")
    return header.dim, sentences


def _sentence_data(sentences) -> SentenceData:
    return SentenceData.from_arrays([s.vectors for s in sentences], [s.casing for s in sentences],
                                    [s.tags for s in sentences])


def train_pooled(data: PooledData, run_dir: str | Path, *, tags: Sequence[str], representer_id: str,
                 contributions: Sequence[str], max_epochs: int, patience: int, seed: int = 0,
                 lstm_units: int = 128, on_epoch: Callable[[dict], None] | None = None) -> dict:
    """Train the pooled tagger on `data` with `run_training` in `run_dir` (resuming from its
    checkpoint if there is one) and return the best epoch's metrics. Class weights and
    optimizer settings are the tagger runs' defaults. config.json records the tag
    vocabulary, the representer id, the contributions (SHA-256) and the split, so the run
    directory says what it was trained on (and a resume on other data is refused)."""
    keras.utils.set_random_seed(seed)
    tagger = build_tagger(data.train.dim, len(tags), lstm_units=lstm_units)
    procedure = TaggerTraining(tagger, compute_class_weights(data.train.tag_counts(len(tags))))
    setup = {"tags": list(tags), "representer_id": representer_id, "contributions": sorted(contributions),
             "split": data.split, "train_sentences": len(data.train), "valid_sentences": len(data.valid)}
    return run_training(procedure, data.train, data.valid, run_dir, max_epochs=max_epochs, patience=patience,
                        seed=seed, config=setup, progress=False, on_epoch=on_epoch)
