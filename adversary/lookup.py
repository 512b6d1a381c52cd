"""Attack A2, the lookup table: an attacker stores the representations of known sentences; is a
fresh representation of a sentence closer to its stored one than to the stored representation
of the same sentence with one PHI token replaced? At 0.5 the table is useless."""

from __future__ import annotations

import itertools

import numpy as np
import tensorflow as tf

from deidpool.adversary.pairs import Pairs, PairSource, concatenated, pair_batches
from deidpool.adversary.procedures import represent
from deidpool.representer.dataset import INFERENCE_BATCH_SIZE


def one_fake_per_sentence(pairs: PairSource, seed: int = 0) -> Pairs:
    """For every sentence of `pairs`, its first fake pair over the draws of `seed`, epochs 0, 1, ...;
    `shared_original` is what an export of the original gives the representer (first draw's),
    `shared_partner` what an export of the fake does (the draw's that made the fake)."""
    taken, replaced = np.zeros(len(pairs), bool), np.full(len(pairs), -1, dtype=np.int64)
    first = pairs.draw(seed, 0)
    fakes = {name: getattr(first, name).copy() for name in ("partner", "shared_partner", "partner_chars",
                                                            "shared_partner_chars")}
    for epoch in itertools.count():
        draw = first if epoch == 0 else pairs.draw(seed, epoch)
        for index in np.flatnonzero((draw.labels == 0) & ~taken):
            rows = slice(pairs.offsets[index], pairs.offsets[index] + pairs.lengths[index])
            for name, values in fakes.items():
                values[rows] = getattr(draw, name)[rows]
            replaced[index] = draw.replaced[index]
        taken |= draw.labels == 0
        if taken.all():
            return Pairs(pairs.features, fakes["partner"], pairs.lengths, np.zeros(len(pairs), np.float32), replaced,
                         np.arange(len(pairs)), first.shared_original, fakes["shared_partner"], pairs.chars,
                         fakes["partner_chars"], first.shared_original_chars, fakes["shared_partner_chars"])


def lookup_attack(representer, pairs: PairSource, seed: int = 0, batch_size: int = INFERENCE_BATCH_SIZE,
                  reference=None, draws: int = 1) -> dict:
    """The lookup attack on every sentence of `pairs` (one fake partner each), `draws` times
    (fakes and exports of seeds `seed` * `draws` + 0, 1, ...: one seed's draws overlap no other's):
    distances are summed squared Euclidean distances over the tokens; a tie counts half.

    The stored representations are of the sentences as the attacker knows them; the fresh one
    is an export's (of the pseudonymized copy on the export path). Returns `sentences`, `draws`,
    `trials` (sentences x draws), `successes` (how often the fresh representation was closer to
    the stored one of its own sentence) and `rate` = successes / trials.

    `fake_rate` is the same test handed the fake sentence's export instead, and `both_rate` the
    mean of the two: the two-candidate test with each candidate the true one half the time. An
    attacker's preference for one candidate whatever the export (a real PHI word lies nearer its
    neighbours than a drawn one) raises `rate` and lowers `fake_rate` alike; only what the
    export reveals raises `both_rate` above 0.5. `sentence_successes` are the successes of both
    directions per sentence of `pairs` (of 2 x `draws` answers each, clustered by sentence:
    `deidpool.adversary.verdicts.cluster_design_effect`). The representations are computed by one
    compiled function per call, in batches of `batch_size` (which changes nothing but the speed)."""
    successes, fake_successes = np.zeros(len(pairs)), np.zeros(len(pairs))
    tests = concatenated([one_fake_per_sentence(pairs, seed * draws + draw) for draw in range(draws)])
    batches = pair_batches(tests, batch_size)

    @tf.function(input_signature=[batches.element_spec], autograph=False)
    def represented(batch):
        """The stored representations of both sentences, then the fresh ones of their exports."""
        mask = batch["mask"]
        return ([represent(reference or representer, batch[name], mask, chars=batch[f"{name}_chars"])
                 for name in ("original", "partner")]
                + [represent(representer, batch[name], mask, chars=batch[f"{name}_chars"])
                   for name in ("shared_original", "shared_partner")])

    for batch in batches:
        stored, stored_fake, fresh, fresh_fake = (values.numpy() for values in represented(batch))
        weight, sentence = batch["mask"].numpy()[..., None], batch["sentence"].numpy()
        successes += np.bincount(sentence, _closer(fresh, stored, stored_fake, weight), len(pairs))
        fake_successes += np.bincount(sentence, _closer(fresh_fake, stored_fake, stored, weight), len(pairs))
    trials, right, fake_right = len(tests), float(successes.sum()), float(fake_successes.sum())
    return {"sentences": len(pairs), "draws": draws, "trials": trials, "successes": right, "rate": right / trials,
            "fake_rate": fake_right / trials, "both_rate": (right + fake_right) / (2 * trials),
            "sentence_successes": (successes + fake_successes).tolist()}


def _closer(fresh, own, other, weight) -> np.ndarray:
    """Per fresh representation, 1 when it lies closer to `own` than to `other`, 0.5 on a tie, else 0."""
    own, other = (np.sum((fresh - stored) ** 2 * weight, axis=(1, 2)) for stored in (own, other))
    return (own < other) + 0.5 * (own == other)
