"""The two sequence-pair adversaries of docs/method.md (T1: the original's embeddings vs. the partner's
representation, T2: two representations), their averaged output, the partner-only probe that
audits use as a floor, and the adversary loss L_adv on a batch of pairs.

Each adversary comes in two designs. PAPER, the one training uses: the final states of the
BiLSTM's two directions, T2 reading [r, r', cos(r, r')] per token (docs/method.md). POOLED, the one
audits attack with: the max and the mean over time of the BiLSTM's outputs, T2 also reading
|r - r'| and r * r'. A fake pair differs in one token; the max over time sees that token's
outputs wherever it sits, and the element-wise features hand T2 the difference itself. On the
demo's P1 control, 12 epochs x 4 draws: T2 0.665 (PAPER) against 0.864 (POOLED), at about the
same cost."""

import math

import keras
import tensorflow as tf
from keras import ops

from deidpool.representer.representation import representer_inputs

LOG_2 = math.log(2.0)  # the binary cross-entropy of a coin flip

# Units per LSTM direction. The reference uses 300; the cost of an LSTM step grows with
# units * (units + input size), so with representation size 50 and 50-d GloVe 300 units
# cost about 11 times as much as 64, and the adversaries run on every batch of P2, P3a and
# P3b on a 2-core CPU. Telling a one-token replacement from a real pair is a narrow task
# that 64 units learn on raw embeddings; audits prove their attackers strong with positive
# controls anyway, and can pass units=300.
DEFAULT_UNITS = 64
PAPER, POOLED = "paper", "pooled"
DESIGNS = (PAPER, POOLED)


class _ReadsMask(keras.Model):
    """A model that reads the mask of its inputs from `inputs["mask"]` (which a representer's
    output also carries attached, the same mask) and returns one value per pair, with no time
    axis left to mask: the mask ends here, and Keras is told so."""

    def compute_mask(self, inputs, previous_mask=None):
        return None


class _PairAdversary(_ReadsMask):
    """BiLSTM over per-token features of a sequence pair, reduced (respecting `mask`) to the final
    states of both directions (`design` PAPER) or to the max and the mean over time of its
    outputs (POOLED), then one sigmoid unit: P(same original sentence), (B,).

    Every adversary reads the same input dict: `embeddings` (B, T, D) and `representation`
    (B, T, d) of the original sentence, `partner_representation` (B, T, d) of the other
    sentence of the pair, and `mask` (B, T) bool; each uses the parts its task names.
    """

    def __init__(self, units=DEFAULT_UNITS, design=PAPER, **kwargs):
        super().__init__(**kwargs)
        if design not in DESIGNS:
            raise ValueError(f"adversary design must be one of {', '.join(DESIGNS)}, not {design!r}")
        self.units, self.design = int(units), design
        self.encoder = keras.layers.Bidirectional(keras.layers.LSTM(self.units, return_sequences=design == POOLED),
                                                  name="bilstm")
        self.classifier = keras.layers.Dense(1, activation="sigmoid", name="probability")

    def pair_features(self, inputs):
        raise NotImplementedError

    def call(self, inputs, training=None):
        mask = inputs["mask"]
        encoded = self.encoder(self.pair_features(inputs), mask=mask, training=training)
        if self.design == POOLED:
            encoded = max_and_mean_over_time(encoded, mask)
        return ops.squeeze(self.classifier(encoded), axis=-1)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "design": self.design}


def max_and_mean_over_time(sequence, mask):
    """(B, T, F) -> (B, 2F): the max and the mean over the positions `mask` (B, T) keeps."""
    kept = ops.expand_dims(mask, -1)
    largest = ops.max(ops.where(kept, sequence, ops.full_like(sequence, -1e9)), axis=1)
    count = ops.maximum(ops.sum(ops.cast(kept, sequence.dtype), axis=1), 1.0)
    mean = ops.sum(ops.where(kept, sequence, ops.zeros_like(sequence)), axis=1) / count
    return ops.concatenate([largest, mean], axis=-1)


@keras.saving.register_keras_serializable(package="deidpool")
class AdversaryT1(_PairAdversary):
    """T1: were the original's embedding sequence and the partner's representation sequence
    obtained from the same sentence? Reads [embeddings, partner_representation] per token.

    The original's embeddings are the same in a real and a fake pair, so everything T1 can
    learn passes through the representer (the other wiring, the original's representation
    with the partner's raw embeddings, lets T1 win on the partner's embeddings alone)."""

    def pair_features(self, inputs):
        return ops.concatenate([inputs["embeddings"], inputs["partner_representation"]], axis=-1)


@keras.saving.register_keras_serializable(package="deidpool")
class AdversaryT2(_PairAdversary):
    """T2: were two representation sequences obtained from the same sentence? Reads
    [representation, partner_representation, their cosine similarity] per token, and in the
    POOLED design also their absolute difference and product."""

    def pair_features(self, inputs):
        first, second = inputs["representation"], inputs["partner_representation"]
        cosine = ops.sum(ops.normalize(first, axis=-1) * ops.normalize(second, axis=-1), axis=-1, keepdims=True)
        features = [first, second, cosine]
        if self.design == POOLED:
            features += [ops.abs(first - second), first * second]
        return ops.concatenate(features, axis=-1)


@keras.saving.register_keras_serializable(package="deidpool")
class PartnerOnlyProbe(_PairAdversary):
    """The audits' floor: real or fake from the partner alone, no representer involved. Run with
    the identity in place of a representer, it reads the embeddings of the partner text the
    target shares (the pseudonymized copy on the export path). Above chance, fake partners are
    recognisable by themselves (implausible pseudonyms) and every attack gets that for free.
    Returns {"combined": p}, (B,)."""

    def pair_features(self, inputs):
        return inputs["partner_representation"]

    def call(self, inputs, training=None):
        return {"combined": super().call(inputs, training=training)}


@keras.saving.register_keras_serializable(package="deidpool")
class CombinedAdversary(_ReadsMask):
    """T1 and T2 side by side, both of `design`; returns {"t1": p1, "t2": p2, "combined": (p1 + p2) / 2},
    each (B,)."""

    def __init__(self, units=DEFAULT_UNITS, design=PAPER, **kwargs):
        super().__init__(**kwargs)
        self.units, self.design = int(units), design
        self.t1 = AdversaryT1(self.units, design, name="t1")
        self.t2 = AdversaryT2(self.units, design, name="t2")

    def call(self, inputs, training=None):
        t1, t2 = self.t1(inputs, training=training), self.t2(inputs, training=training)
        return {"t1": t1, "t2": t2, "combined": (t1 + t2) / 2}

    def get_config(self):
        return {**super().get_config(), "units": self.units, "design": self.design}


def adversary_outputs(adversary, representer, batch, training=False, reference=None):
    """`adversary` applied to a batch of pairs from `deidpool.adversary.pairs` ({original, partner,
    shared_original, shared_partner, mask}): the representer reads the shared_ sentences (the
    pseudonymized copies on the export path), T1 the original's embeddings.

    `representer` maps {"embeddings", "mask"} to (B, T, d): a representer model, or
    `lambda inputs, training=False: inputs["embeddings"]` to attack raw embeddings. Both
    sentences of every pair go through it in one call, each with its own noise draw, so for
    a real pair T2 compares two independent noisy passes over the same sentence, and for a
    fake pair the original's representation with the pseudonymized copy's. T1 compares the
    original's embeddings with the partner's representation.

    `reference`, when given, computes the original's representation instead: the attacker
    computes that side itself, and with the public representer it can switch the noise off
    (audits pass a noise-free copy); only the partner's, the shared one, is then noisy.
    """
    mask = batch["mask"]
    if reference is None:
        both = representer(representer_inputs(
            representer, ops.concatenate([batch["shared_original"], batch["shared_partner"]], axis=0),
            ops.concatenate([mask, mask], axis=0),
            None if "shared_original_chars" not in batch
            else ops.concatenate([batch["shared_original_chars"], batch["shared_partner_chars"]], axis=0)),
            training=training)
        representation, partner_representation = ops.split(both, 2, axis=0)
    else:
        representation = reference(representer_inputs(reference, batch["shared_original"], mask,
                                                      batch.get("shared_original_chars")), training=training)
        partner_representation = representer(representer_inputs(representer, batch["shared_partner"], mask,
                                                                 batch.get("shared_partner_chars")), training=training)
    return adversary({"embeddings": batch["original"], "representation": representation,
                      "partner_representation": partner_representation,
                      "mask": mask}, training=training)


def metric_name(metric: str, output: str) -> str:
    """The name of `output`'s `metric` (`accuracy`, `loss`, ...): the combined output's plain, a
    single adversary's with its name ("accuracy_t1")."""
    return metric if output == "combined" else f"{metric}_{output}"


def adversary_answers(outputs, labels) -> dict:
    """Whether each output answered each pair right, (B,) float32 1 or 0 per output name."""
    labels = ops.cast(labels, "float32")
    return {name: ops.cast(ops.equal(ops.cast(probability, "float32") > 0.5, labels > 0.5), "float32")
            for name, probability in outputs.items()}


def adversary_metrics(outputs, labels):
    """Scalars from adversary outputs and labels (1 real, 0 fake): `loss` = L_adv, the binary
    cross-entropy of each single adversary averaged over them (of the one output of a
    single-output adversary), `accuracy` of the combined output, for a `CombinedAdversary`
    also `loss_combined`, the binary cross-entropy of the combined output, and `loss_t1`,
    `accuracy_t1`, `loss_t2`, `accuracy_t2` of the single adversaries, and `penalty`, the P3b
    term: the mean over pairs of |BCE_i - log 2|, averaged over the single adversaries.

    L_adv is not the cross-entropy of the combined output: that one has a dead point, T1
    sure of "real" and T2 sure of "fake" on every pair, where the average is 0.5, the loss
    log 2 and the gradient through the saturated outputs nil (P2 with 300-unit adversaries fell
    into it after two epochs and never left). Taken per pair, the penalty is zero only when
    every output is a coin flip; taken on the batch mean, an accurate but over-confident
    adversary (BCE well above log 2 on its few mistakes, near 0 elsewhere) can score zero."""
    labels = ops.cast(labels, "float32")
    metrics, penalties, answers = {}, [], adversary_answers(outputs, labels)
    for name in outputs:
        crossentropy = ops.binary_crossentropy(labels, ops.cast(outputs[name], "float32"))
        metrics[metric_name("loss", name)] = ops.mean(crossentropy)
        metrics[metric_name("accuracy", name)] = ops.mean(answers[name])
        if name != "combined" or len(outputs) == 1:
            penalties.append(ops.mean(ops.abs(crossentropy - LOG_2)))
    metrics["penalty"] = ops.mean(ops.stack(penalties))
    if len(outputs) > 1:
        metrics["loss_combined"] = metrics["loss"]
        metrics["loss"] = ops.mean(ops.stack([metrics[f"loss_{name}"] for name in outputs if name != "combined"]))
    return metrics


def adversary_step(adversary, representer, batch, training=False, reference=None):
    """`adversary_metrics` of a `CombinedAdversary` on one batch of pairs (see `adversary_outputs`)."""
    return adversary_metrics(adversary_outputs(adversary, representer, batch, training, reference), batch["label"])


def train_adversary_step(adversary, representer, optimizer, batch, reference=None):
    """One optimizer step of the adversary's weights on L_adv (the representer stays as it is);
    returns the batch's metrics before the step. Wrap it in `tf.function` for speed."""
    with tf.GradientTape() as tape:
        metrics = adversary_step(adversary, representer, batch, training=True, reference=reference)
    variables = adversary.trainable_variables
    optimizer.apply(tape.gradient(metrics["loss"], variables), variables)
    return metrics
