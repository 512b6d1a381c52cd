"""Real and fake sentence pairs for the adversaries (docs/method.md, Two adversaries): a PHI
sentence with itself, or with one PHI token replaced by a pseudonym (an embedding neighbour,
or a surrogate number), drawn fresh for every epoch and served as length-bucketed, padded
`tf.data` batches."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import tensorflow as tf

from deidpool.corpus.prepare import LabeledSentence
from deidpool.pseudonymization.pseudonymize import Pseudonymizer, tag_category
from deidpool.representer.characters import CHAR_WIDTH, char_ids

BATCH_SIZE = 32
SIDES = ("original", "partner", "shared_original", "shared_partner")
# Pseudonyms drawn for a token before concluding that none has another vector: a token whose
# draws differ from it at least half the time (any word, any number with its own vector) is
# missed with probability <= 2**-64.
MAX_DRAWS = 64


@dataclass(frozen=True, eq=False)
class Pairs:
    """Pairs stored flat: token rows of all pairs one after another.

    `original` and `partner` (tokens, D) float32 are the embeddings of the two sentences of
    each pair (equal in a real pair), `lengths` (pairs,) tokens per pair, `labels` (pairs,)
    float32, 1 real and 0 fake, `replaced` (pairs,) the position of the replaced token in a fake
    pair, -1 in a real one, and `sentence` (pairs,) the number of each pair's sentence in its
    `PairSource` (in one draw pair i is sentence i's). `shared_original` and `shared_partner` are
    what the representer reads for them: the same arrays, or on the export path the embeddings
    of their pseudonymized copies (see `PairSource`). The four `..._chars` (tokens, width) uint16
    are the character ids of the same tokens, width 0 unless the source keeps them (`chars`).
    """

    original: np.ndarray
    partner: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray
    replaced: np.ndarray
    sentence: np.ndarray
    shared_original: np.ndarray
    shared_partner: np.ndarray
    original_chars: np.ndarray
    partner_chars: np.ndarray
    shared_original_chars: np.ndarray
    shared_partner_chars: np.ndarray

    def __len__(self):
        return len(self.lengths)


def concatenated(draws: Sequence[Pairs]) -> Pairs:
    """Several draws of one `PairSource` as one set of pairs: pair k * n + i is sentence i's pair
    of draw k."""
    return Pairs(*(np.concatenate([getattr(draw, field.name) for draw in draws]) for field in fields(Pairs)))


class PairSource:
    """The sentences of a labeled corpus that give pairs, and the pairs drawn from them.

    A sentence gives pairs when at least one PHI token (tag not "O") can be replaced by a
    pseudonym (of the category its tag names) with a different embedding vector; sentences
    without one are dropped (see `sentences`). Every draw makes one pair per sentence, half of
    them real and half fake (one more of either when odd, chosen at random).

    With `export_path`, the pairs are those of what `client export` shares: before the
    representer reads either sentence of a pair, every PHI token of it is pseudonymized afresh
    (the partner's replaced token among the candidates of its replacement), while the
    attacker's side (T1's embeddings, the lookup table) keeps the original sentence. With `chars`
    the pairs carry every token's character ids too (for a representer that reads characters).
    """

    def __init__(self, sentences: Sequence[LabeledSentence], pseudonymizer: Pseudonymizer, export_path: bool = False,
                 chars: bool = False):
        if pseudonymizer.neighbours < 2:
            raise ValueError("fake pairs need at least 2 neighbours per token")
        self.pseudonymizer, self.export_path = pseudonymizer, export_path
        rng = random.Random(0)
        positions = [[i for i, (token, tag) in enumerate(zip(sentence.tokens, sentence.tags))
                      if tag != "O" and self._replacement(token.text, rng, tag_category(tag)) is not None]
                     for sentence in sentences]
        self.sentences = [sentence for sentence, phi in zip(sentences, positions) if phi]
        if not self.sentences:
            raise ValueError("no sentence has a PHI token that can be replaced")
        self.positions = [phi for phi in positions if phi]  # replaceable PHI positions per sentence
        self.lengths = np.array([len(sentence.tokens) for sentence in self.sentences], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.tokens = [token for sentence in self.sentences for token in sentence.tokens]
        self.features = pseudonymizer.embeddings.sentence_matrix(self.tokens)
        self.char_width = CHAR_WIDTH if chars else 0
        self.chars = char_ids([token.text for token in self.tokens], self.char_width)
        self.phi = [[i for i, tag in enumerate(sentence.tags) if tag != "O"] for sentence in self.sentences]
        self._held_out: dict[tuple, tf.data.Dataset] = {}

    def __len__(self):
        return len(self.sentences)

    def _replacement(self, word: str, rng: random.Random, category: str | None = None) -> str | None:
        """A pseudonym of `word` whose embedding differs from `word`'s, uniform among its
        candidates (`Pseudonymizer.candidates`) with another vector, drawn by rejection; None
        when MAX_DRAWS draws all keep the vector.

        Only in-vocabulary tokens give fake pairs: an out-of-vocabulary number embeds as zeros,
        like nearly all of its surrogates, so a fake partner with a vocabulary number in its
        place would be one no export produces, recognisable by itself. A number known only by
        its digit shape ("000000") is left out the same way: its draws keep the shape's vector.
        """
        if not (self.pseudonymizer.replaceable(word) and self.pseudonymizer.embeddings.is_known(word)):
            return None
        embeddings = self.pseudonymizer.embeddings
        vector = embeddings.vector(word)
        for _ in range(MAX_DRAWS):
            candidate = self.pseudonymizer.pseudonym(word, rng, category)
            if not np.array_equal(embeddings.vector(candidate), vector):
                return candidate
        return None

    def fake_symmetry(self, seed: int = 0, draws: int = 5) -> dict[str, int]:
        """How many fake replacements (`draws` per replaceable PHI token) have exactly their
        original's candidates (`Pseudonymizer.draw_key`; under "surrogates" its shape). When all
        do, as under "groups", the pseudonymized copies of a real and of a fake pair are
        identically distributed on the export path (under "surrogates" but for the redraw of a
        surrogate equal to its original): no attack can beat chance there in expectation,
        whatever the representer does."""
        rng, fakes, same = random.Random(seed), 0, 0
        for sentence, positions in zip(self.sentences, self.positions):
            for position in positions:
                word, category = sentence.tokens[position].text, tag_category(sentence.tags[position])
                own = self.pseudonymizer.draw_key(word, category)
                for _ in range(draws):
                    replacement = self._replacement(word, rng, category)
                    if replacement is not None:
                        fakes += 1
                        same += self.pseudonymizer.draw_key(replacement, category) == own
        return {"fakes": fakes, "same_candidates": same}

    def draw(self, seed: int, epoch: int = 0) -> Pairs:
        """One pair per sentence, deterministic in (`seed`, `epoch`) and fresh for every epoch."""
        rng = random.Random(f"{seed}/{epoch}")
        count = len(self)
        labels = [1.0] * (count // 2) + [0.0] * (count // 2) + [rng.choice([0.0, 1.0])] * (count % 2)
        rng.shuffle(labels)
        partner, partner_chars = self.features.copy(), self.chars.copy()
        replaced = np.full(count, -1, dtype=np.int64)
        partner_words = [[token.text for token in sentence.tokens] for sentence in self.sentences]
        for index, label in enumerate(labels):
            if label == 0.0:
                sentence = self.sentences[index]
                for position in rng.sample(self.positions[index], len(self.positions[index])):
                    word = self._replacement(sentence.tokens[position].text, rng, tag_category(sentence.tags[position]))
                    if word is not None:  # None only when a rare draw run kept the vector 64 times
                        partner[self.offsets[index] + position] = self.pseudonymizer.embeddings.vector(word)
                        partner_chars[self.offsets[index] + position] = char_ids([word], self.char_width)[0]
                        replaced[index] = position
                        partner_words[index][position] = word
                        break
                else:
                    labels[index] = 1.0
        drawn = (self.features, partner, self.lengths, np.array(labels, dtype=np.float32), replaced, np.arange(count))
        if not self.export_path:
            return Pairs(*drawn, self.features, partner, self.chars, partner_chars, self.chars, partner_chars)
        originals = [[token.text for token in sentence.tokens] for sentence in self.sentences]
        # A surrogate never equals its own word; at a fake's replaced position each export also
        # avoids the other candidate's word, so that the two exports of a pair stay exchangeable
        # (else an export equal to one candidate would point to the other: docs/privacy.md).
        fake, real = ([{position: words[position]} if position >= 0 else {} for position, words in zip(replaced, side)]
                      for side in (partner_words, originals))
        (shared_original, shared_original_chars), (shared_partner, shared_partner_chars) = (
            self._pseudonymized(originals, rng, fake), self._pseudonymized(partner_words, rng, real))
        return Pairs(*drawn, shared_original, shared_partner, self.chars, partner_chars, shared_original_chars,
                     shared_partner_chars)

    def _pseudonymized(self, sentences: list[list[str]], rng: random.Random,
                       also_not: list[dict[int, str]]) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings and character ids of the sentences (word lists, one per sentence of this
        source) with every PHI token replaced by a fresh pseudonym, as `client export` replaces it
        (and avoiding `also_not`'s word at each position it names, per sentence). A word's vector
        does not depend on its context: only the words that differ from the source's are looked up."""
        words = [word for sentence, source, avoid in zip(sentences, self.sentences, also_not)
                 for word in self.pseudonymizer.replaced(sentence, source.tags, rng, also_not=avoid)]
        changed = [row for row, (word, token) in enumerate(zip(words, self.tokens)) if word != token.text]
        matrix, chars = self.features.copy(), self.chars.copy()
        matrix[changed] = self.pseudonymizer.embeddings.sentence_matrix([words[row] for row in changed])
        chars[changed] = char_ids([words[row] for row in changed], self.char_width)
        return matrix, chars

    def epoch(self, seed: int, epoch: int, batch_size: int = BATCH_SIZE) -> tf.data.Dataset:
        """The training batches of one epoch: fresh pairs, bucketed and shuffled by (`seed`, `epoch`)."""
        return pair_batches(self.draw(seed, epoch), batch_size, np.random.default_rng([seed, epoch]))

    def held_out(self, seed: int, batch_size: int = BATCH_SIZE, draws: int = 1) -> tf.data.Dataset:
        """A fixed evaluation set (`draws` draws of `seed`, epochs 0, 1, ..., in length order): the
        same batches for the same `seed`, drawn once and kept (every epoch's validation reads it).
        Build it from sentences kept out of training."""
        key = (seed, batch_size, draws)
        if key not in self._held_out:
            self._held_out[key] = pair_batches(concatenated([self.draw(seed, epoch) for epoch in range(draws)]),
                                               batch_size)
        return self._held_out[key]


def pair_batches(pairs: Pairs, batch_size: int = BATCH_SIZE,
                 rng: np.random.Generator | None = None) -> tf.data.Dataset:
    """Batches of pairs of about equal length: dicts of `original`, `partner`, `shared_original`
    and `shared_partner` (B, T, D), their character ids `original_chars`, ... (B, T, width), `mask`
    (B, T) bool, `label` (B,) float32, `index` (B,) pair numbers in `pairs` and `sentence` (B,)
    their sentences' (`Pairs.sentence`), where T is the longest pair of the batch.

    Pairs are sorted by length and cut into batches; with `rng`, ties are broken at random
    and the batches come in random order, without it the order is fixed.
    """
    if rng is None:
        order = np.argsort(pairs.lengths, kind="stable")
    else:
        shuffled = rng.permutation(len(pairs))
        order = shuffled[np.argsort(pairs.lengths[shuffled], kind="stable")]
    batches = [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    rows = {name: tf.RaggedTensor.from_row_lengths(getattr(pairs, name), pairs.lengths)
            for side in SIDES for name in (side, f"{side}_chars")}
    lengths, labels, sentences = (tf.constant(pairs.lengths, tf.int32), tf.constant(pairs.labels),
                                  tf.constant(pairs.sentence))

    def gather(indices):
        batch = {name: tf.gather(values, indices).to_tensor() for name, values in rows.items()}
        return {**batch, "mask": tf.sequence_mask(tf.gather(lengths, indices), tf.shape(batch["original"])[1]),
                "label": tf.gather(labels, indices), "index": indices, "sentence": tf.gather(sentences, indices)}

    indices = tf.RaggedTensor.from_row_lengths(np.concatenate(batches), [len(batch) for batch in batches])
    return tf.data.Dataset.from_tensor_slices(indices).map(gather).prefetch(tf.data.AUTOTUNE)
