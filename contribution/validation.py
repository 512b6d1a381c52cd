"""The server's one check of a contribution's content against what it expects: the header's
representer and vector size, then every sentence (`check_sentence`). Uploads run the whole
check (`validate_contribution`); pooled training runs `check_sentence` on every sentence it
streams, so both refuse the same sentences with the same message."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deidpool.contribution.container import ContributionHeader, verified_sentences, verify_contribution
from deidpool.contribution.records import ContributionError, ContributionSentence
from deidpool.corpus.casing import CASING


def check_sentence(sentence: ContributionSentence, number: int, *, path: str | Path, num_tags: int, dim: int) -> None:
    """Refuse (ContributionError naming `path` and the sentence's `number`, counted from 1) a
    decoded sentence whose vectors are not of size `dim` or not finite, or with a tag id not
    below `num_tags` or a casing id outside CASING."""
    if sentence.vectors.shape[1] != dim:
        raise ContributionError(f"{path}: sentence {number} has vectors of size {sentence.vectors.shape[1]}; "
                                f"expected {dim}")
    if sentence.tags.max() >= num_tags:
        raise ContributionError(f"{path}: sentence {number} has a tag id >= {num_tags}, outside the tag vocabulary "
                                f"of {num_tags} tags")
    if sentence.casing.max() >= len(CASING):
        raise ContributionError(f"{path}: sentence {number} has a casing id >= {len(CASING)}")
    if not np.isfinite(sentence.vectors).all():
        raise ContributionError(f"{path}: sentence {number} has non-finite vectors")


def validate_contribution(path: str | Path, server_key: X25519PrivateKey, institution_key: Ed25519PublicKey, *,
                          representer_ids: Iterable[str], dim: int, num_tags: int) -> ContributionHeader:
    """Check a contribution the way the server must before pooling it: signature and hashes,
    decryption, a representer id among `representer_ids`, vector size `dim`, at least one
    sentence, `check_sentence` on every sentence and counts consistent with the header."""
    path = Path(path)
    header = verify_contribution(path, institution_key)
    expected = sorted(representer_ids)
    if header.representer_id not in expected:
        raise ContributionError(f"{path}: representer id {header.representer_id} is not one the server expects "
                                f"({', '.join(expected) or 'none'})")
    if header.dim != dim:
        raise ContributionError(f"{path}: vectors of size {header.dim}; expected {dim}")
    if header.sentences < 1:
        raise ContributionError(f"{path} holds no sentences")
    for number, sentence in enumerate(verified_sentences(path, server_key, header), 1):
        check_sentence(sentence, number, path=path, num_tags=num_tags, dim=dim)
    return header
