"""Automatic word-level pseudonymization (docs/method.md): a PHI token becomes a uniform draw from
its candidates (`Pseudonymizer.candidates`), which are its N nearest embedding neighbours
(itself included) for a word and plausible surrogates of the same shape for a number. Every
token with a letter or a digit is replaced, function words included; only punctuation stays. A
word without a vector of its own (out of vocabulary, e.g. a rare surname under GloVe) takes the
candidates of its category's stand-in (`STAND_INS`), which do not depend on the word.

Number surrogates (`number_candidates`) keep the digit count and zero padding of the token they
replace and stay in the range its value suggests, so that a surrogate date, age or phone number
still reads as one and is not recognisable from plausibility alone. They need not be vocabulary
words: an unknown one embeds by its digit shape (`deidpool.representer.embeddings`), and the
digit count keeps pseudonymized dates and phone numbers looking like real ones to a tagger.

Word replacements take the casing shape of the token they replace ("SMITH" -> "JONES",
"Smith" -> "Jones"), so that the casing feature of a pseudonymized corpus stays as realistic as
the text's. N = 1 changes nothing; larger N gives more privacy to words.

Under the scheme "surrogates" (`deidpool.pseudonymization.surrogates`) no candidates are drawn
from: a whole span is replaced by a realistic value of its PHI type in the notes' language, a
draw that does not depend on the original, and N does not apply."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from deidpool.corpus.casing import casing_ids
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.document import Document, Span
from deidpool.corpus.prepare import LabeledSentence, prepare_document
from deidpool.corpus.tokenize import Token
from deidpool.pseudonymization.schemes import SCHEMES
from deidpool.representer.embeddings import Embeddings

STAND_INS = {"NAME": "smith", "LOCATION": "boston", "PROFESSION": "nurse", "AGE": "teenager", "DATE": "monday",
             "CONTACT": "email", "ID": "code", "OTHER": "other"}
"""By i2b2 category (`deidpool.corpus.categories`), the vocabulary word whose candidates a PHI word without a
vector of its own takes: "Przybylo" (a NAME) becomes a draw among the candidates of "smith", in
its casing ("Jones"), whatever the word was. English words, for GloVe (FastText embeds every
word); a category not in the table takes OTHER's, and embeddings without the word their most
frequent word (`Pseudonymizer.stand_in`)."""


def same_casing(replacement: str, original: str) -> str:
    """`replacement` in the casing shape of `original` (all capitals, capitalized or as is)."""
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def tag_category(tag: str) -> str | None:
    """The category a BIO/BIOES tag names ("B-DATE" -> "DATE"), None for "O"."""
    return tag.partition("-")[2] or None


def _is_number(word: str) -> bool:
    """Whether `word` is made of ASCII digits only (the tokens `number_candidates` handles)."""
    return word.isascii() and word.isdigit()


@dataclass(frozen=True)
class NumberCandidates(Sequence[str]):
    """The surrogates of a number: every value of `values` written with `width` digits,
    zero-padded ("7" in width 2 is "07"), in the order of `values`.

    A lazy sequence (ten million 7-digit surrogates are never listed): item i is
    `str(values[i]).zfill(width)`, and `s in candidates` holds for the strings of `width`
    digits whose value is in `values`. A surrogate s could have come from every original
    whose `number_candidates` contain s.
    """

    values: range
    width: int

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int | slice) -> str | NumberCandidates:
        if isinstance(index, slice):
            return NumberCandidates(self.values[index], self.width)
        return str(self.values[index]).zfill(self.width)

    def __contains__(self, word: object) -> bool:
        return (isinstance(word, str) and len(word) == self.width and _is_number(word)
                and int(word) in self.values)


def is_age(label: str | None) -> bool:
    """Whether the PHI label `label` (of any corpus: "AGE", "Age", "EDAD_SUJETO_ASISTENCIA") is an
    age, the one type whose numbers keep their side of 89 (HIPAA: ages over 89 are grouped)."""
    entry = PHI_TYPES.get(label or "")
    return entry is not None and entry.type == "AGE"


def number_candidates(word: str, category: str | None = None) -> NumberCandidates:
    """The surrogates of the number `word` (ASCII digits) of PHI label `category`: the
    numbers of its range that have its digit count, zero-padded when `word` starts with "0"
    ("09" -> "01".."12") and with a non-zero first digit otherwise ("7" -> "1".."9"). `word` is
    one of them. The range, before the digit count cuts it:

        category AGE (from the tag), value 90..119:  90..119   (an age over 89: a HIPAA identifier)
        category AGE, value 0..89:                  0..89     (ages stay on their side of 90)
        1-2 digits, value 1..12:                    1..12     (a month or a day)
        1-2 digits, value 13..31:                   1..31     (a day)
        1-2 digits, value 0 or 32..59:              0..59     (minutes or seconds)
        4 digits, value 1900..2100:                 value - 10 .. value + 10  (a nearby year)
        anything else:                              every number of its digit count
    """
    width, value = len(word), int(word)
    if is_age(category) and value <= 119:
        low, high = (90, 119) if value >= 90 else (0, 89)
    elif width <= 2 and 1 <= value <= 12:
        low, high = 1, 12
    elif width <= 2 and 13 <= value <= 31:
        low, high = 1, 31
    elif width <= 2 and value <= 59:
        low, high = 0, 59
    elif width == 4 and 1900 <= value <= 2100:
        low, high = value - 10, value + 10
    else:
        low, high = 0, 10 ** width - 1
    smallest = 0 if word.startswith("0") else 10 ** (width - 1)
    return NumberCandidates(range(max(low, smallest), min(high, 10 ** width - 1) + 1), width)


def number_block(word: str, category: str | None = None) -> NumberCandidates:
    """The surrogates of the number `word` (of PHI label `category`) under the groups scheme
    (the surrogates scheme draws by shape, `deidpool.pseudonymization.surrogates.number_shape`): the
    block of `word`'s value, a partition of the numbers of its digit count and padding (one digit:
    "0".."9" alike) in which every number of a block has that block, so that a surrogate says
    nothing about which number of its block it replaced, and no number is alone in its block. Blocks: AGE
    0..89 and 90..119; 1-2 digits 0..12, 13..31, 32..59; 4-digit years 1900..2099 in twenty-year
    blocks from 1900; each stretch of numbers between those blocks is a block of its own
    ("60".."99", "1000".."1899")."""
    width, value = len(word), int(word)
    if is_age(category):
        blocks = [(0, 89), (90, 119)]
    elif width <= 2:
        blocks = [(0, 12), (13, 31), (32, 59)]
    elif width == 4:
        blocks = [(year, year + 19) for year in range(1900, 2100, 20)]
    else:
        blocks = []
    padded = word.startswith("0") and width > 1
    low, high = (0, 10 ** (width - 1) - 1) if padded else (10 ** (width - 1) if width > 1 else 0, 10 ** width - 1)
    for start, stop in blocks:
        if start <= value <= stop:
            return NumberCandidates(range(max(start, low), min(stop, high) + 1), width)
    # between the blocks: from the end of the block below to the start of the one above
    below = max((stop + 1 for start, stop in blocks if stop < value), default=low)
    above = min((start - 1 for start, stop in blocks if start > value), default=high)
    return NumberCandidates(range(max(below, low), min(above, high) + 1), width)


class Pseudonymizer:
    """Draws pseudonyms for PHI tokens from an embedding space with `neighbours` = N, under
    one of SCHEMES: "neighbours" draws a word among its N nearest neighbours and a number among
    `number_candidates`, "groups" draws a word from its group of N to 2N - 1 words
    (`Embeddings.neighbour_groups`) and a number from its `number_block`, "surrogates" draws
    each span's tokens by their type, shape and `language` alone (`deidpool.pseudonymization.surrogates`;
    N does not apply, and the embeddings serve only the bound's possible originals)."""

    def __init__(self, embeddings: Embeddings, neighbours: int, scheme: str = "neighbours", language: str = "en"):
        if neighbours < 1:
            raise ValueError(f"neighbours must be >= 1, got {neighbours}")
        if scheme not in SCHEMES:
            raise ValueError(f"unknown pseudonymization scheme {scheme!r}; choose one of: {', '.join(SCHEMES)}")
        if scheme == "surrogates":
            from deidpool.pseudonymization.surrogates import check_language

            check_language(language)
        self.embeddings = embeddings
        self.neighbours = neighbours
        self.scheme = scheme
        self.language = language
        self._word_candidates: dict[str, tuple[str, ...]] = {}  # pairs and exports draw for the same words again

    def replaceable(self, word: str) -> bool:
        """Whether `word` would be replaced: whenever it has a letter or a digit (only punctuation
        stays)."""
        return any(c.isalnum() for c in word)

    def stand_in(self, category: str | None) -> str:
        """The word whose candidates a word of PHI category `category` without a vector takes:
        `STAND_INS`' word for its i2b2 category, or, when the embeddings do not know it, the most
        frequent replaceable word of the neighbour vocabulary that is not a number."""
        phi = PHI_TYPES.get(category or "")
        word = STAND_INS.get(phi.category if phi else category, STAND_INS["OTHER"])
        if self.embeddings.is_known(word):
            return word
        rows = np.flatnonzero(self.replaceable_rows() & ~self.number_rows())
        return self.embeddings.kv.index_to_key[rows[0]] if len(rows) else word

    def candidates(self, word: str, category: str | None = None) -> Sequence[str]:
        """The words a pseudonym of `word` (a token of PHI category `category`, e.g. "DATE")
        is drawn from, uniformly, before it takes `word`'s casing: [`word`] when N = 1 or
        `word` is not replaceable, `number_candidates` for a number (whatever N), else
        `word` and its N - 1 nearest embedding neighbours (for "groups" its group), those of
        `stand_in(category)` for a word without a vector of its own. Not under "surrogates", whose
        draws have no candidates."""
        if self.scheme == "surrogates":
            raise ValueError("the surrogates scheme draws no candidates: its draws do not depend on the word")
        if self.neighbours == 1 or not self.replaceable(word):
            return [word]
        if _is_number(word):
            return (number_block if self.scheme == "groups" else number_candidates)(word, category)
        if not (self.embeddings.is_known(word) or self.embeddings.embeds_unknown_words):
            word = self.stand_in(category)
        if word not in self._word_candidates:
            self._word_candidates[word] = tuple(self._group(word) if self.scheme == "groups"
                                                else self.embeddings.neighbours(word, self.neighbours))
        return self._word_candidates[word]

    def replaceable_rows(self) -> np.ndarray:
        """(neighbour_rows,) bool: which rows of the neighbour vocabulary `replaceable` holds for
        (kept with the embeddings)."""
        vocabulary = self.embeddings.kv.index_to_key[:self.embeddings.neighbour_rows]
        return self.embeddings.kept(("replaceable", self.embeddings.neighbour_rows),
                                    lambda: np.array([self.replaceable(word) for word in vocabulary], dtype=bool))

    def number_rows(self) -> np.ndarray:
        """(neighbour_rows,) bool: which rows of the neighbour vocabulary are numbers (kept with the
        embeddings)."""
        vocabulary = self.embeddings.kv.index_to_key[:self.embeddings.neighbour_rows]
        return self.embeddings.kept(("number", self.embeddings.neighbour_rows),
                                    lambda: np.array([_is_number(word) for word in vocabulary], dtype=bool))

    def candidate_table(self) -> np.ndarray:
        """(rows, columns) int32 candidates of each row of the neighbour vocabulary as row ids:
        the row itself first, -1 after the last (`Embeddings.neighbour_table` for "neighbours";
        for "groups" the row's group, for a row in none only itself)."""
        if self.scheme == "neighbours":
            return self.embeddings.neighbour_table(self.neighbours)
        return self.embeddings.kept(("group candidates", self.neighbours), self._group_table)

    def _group_table(self) -> np.ndarray:
        groups, members = self._groups
        table = np.full((len(groups), max(map(len, members.values()), default=1)), -1, dtype=np.int32)
        table[:, 0] = np.arange(len(groups))
        for rows in members.values():  # each member's row: the group's other members, in order
            size = len(rows)
            table[rows, 1:size] = np.broadcast_to(rows, (size, size))[~np.eye(size, dtype=bool)].reshape(size, -1)
        table.flags.writeable = False  # kept with the embeddings and shared by every pseudonymizer
        return table

    @cached_property
    def _groups(self) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """The group of every neighbour-vocabulary row (-1 for none) and the rows of each group.
        A group holds words that are replaceable and not numbers."""
        groups = self.embeddings.neighbour_groups(self.neighbours, self.replaceable_rows() & ~self.number_rows())
        order = np.argsort(groups, kind="stable")
        ids, starts = np.unique(groups[order], return_index=True)
        members = {int(g): rows for g, rows in zip(ids, np.split(order, starts[1:])) if g >= 0}
        return groups, members

    def _group(self, word: str) -> list[str]:
        """The words of `word`'s group, or of the group of its nearest grouped word when it is in
        none (then without `word` itself)."""
        groups, members = self._groups
        row = int(self.embeddings.lookup_ids([word])[0])
        if not 0 <= row < len(groups) or groups[row] < 0:
            row = self.embeddings.nearest_row(word, groups >= 0)
            if row is None:
                return [word]
        vocabulary = self.embeddings.kv.index_to_key
        return [vocabulary[i] for i in members[int(groups[row])]]

    def draw_key(self, word: str, category: str | None = None):
        """What a one-token draw for `word` depends on, comparable between words: its candidates
        as a set (a number's lazy range as it is), under "surrogates" its shape as a one-token span."""
        if self.scheme == "surrogates":
            from deidpool.pseudonymization.surrogates import token_shape

            return token_shape([word], 0, category, self.language)
        candidates = self.candidates(word, category)
        return candidates if isinstance(candidates, NumberCandidates) else frozenset(candidates)

    def pseudonym(self, word: str, rng: random.Random, category: str | None = None) -> str:
        """A uniform draw from `candidates(word, category)` in the casing of `word` (possibly
        `word` itself); under "surrogates" the surrogate of `word` as a one-token span."""
        if self.scheme == "surrogates":
            return self.replaced([word], [f"B-{category}"], rng)[0]
        return same_casing(rng.choice(self.candidates(word, category)), word)

    def replaced(self, words: Sequence[str], tags: Sequence[str], rng: random.Random,
                 only: Iterable[int] | None = None, also_not: Mapping[int, str] | None = None) -> list[str]:
        """`words` with every PHI token (tag not "O"; or only positions `only`) replaced by a
        pseudonym of the category its tag names; under "surrogates" span by span, a surrogate
        differing from its own word and from `also_not`'s word at its position (the other schemes
        draw among candidates that hold the word itself, so they exclude nothing)."""
        positions = set(only) if only is not None else {i for i, tag in enumerate(tags) if tag != "O"}
        if self.scheme != "surrogates":
            return [self.pseudonym(word, rng, tag_category(tag)) if i in positions else word
                    for i, (word, tag) in enumerate(zip(words, tags))]
        from deidpool.pseudonymization.surrogates import phi_spans, span_surrogates

        result = list(words)
        for span in phi_spans(tags):
            if positions.intersection(span):
                drawn = span_surrogates(words[span.start:span.stop], tag_category(tags[span.start]), self.language, rng,
                                        [(also_not or {}).get(i) for i in span])
                for i, word in zip(span, drawn):
                    result[i] = word if i in positions else result[i]
        return result

    def phi_tokens(self, words: Sequence[str], tags: Sequence[str],
                   only: Iterable[int] | None = None) -> list[tuple]:
        """The re-identification bound's tokens (`deidpool.pseudonymization.bound`) of the PHI positions
        of `words` (or only `only`): (word, category), under "surrogates" (word, category, shape)
        with the shape its draw depends on (`deidpool.pseudonymization.surrogates.token_shape`)."""
        wanted = set(only) if only is not None else {i for i, tag in enumerate(tags) if tag != "O"}
        if self.scheme != "surrogates":
            return [(words[i], tag_category(tags[i])) for i in sorted(wanted)]
        from deidpool.pseudonymization.surrogates import phi_spans, token_shape

        tokens = []
        for span in phi_spans(tags):
            category, span_words = tag_category(tags[span.start]), words[span.start:span.stop]
            tokens += [(words[i], category, token_shape(span_words, i - span.start, category, self.language))
                       for i in span if i in wanted]
        return tokens

    def sentence(self, sentence: LabeledSentence, rng: random.Random, only: Iterable[int] | None = None) -> list[str]:
        """Token strings of `sentence` with every PHI token (or only positions `only`) replaced
        (`replaced`)."""
        return self.replaced([t.text for t in sentence.tokens], sentence.tags, rng, only)

    def labeled_sentences(self, sentences: Iterable[LabeledSentence], rng: random.Random) -> list[LabeledSentence]:
        """Training sentences with every PHI token replaced; casing ids follow the new words.
        A sentence without PHI, and a token whose word stays, are passed on as they are."""
        result = []
        for sentence in sentences:
            if all(tag == "O" for tag in sentence.tags):
                result.append(sentence)
                continue
            tokens = [t if word == t.text else Token(word, t.start, t.end)
                      for word, t in zip(self.sentence(sentence, rng), sentence.tokens)]
            result.append(LabeledSentence(tokens, casing_ids(tokens), sentence.tags))
        return result

    def document(self, document: Document, rng: random.Random) -> Document:
        """`document` with every PHI token replaced and span offsets moved to match."""
        sentences = prepare_document(document)
        tokens = [t for s in sentences for t in s.tokens]
        words = [w for s in sentences for w in self.sentence(s, rng)]
        return rebuild_document(document, tokens, words)


def rebuild_document(document: Document, tokens: Sequence[Token], words: Sequence[str]) -> Document:
    """The document text with each token's text replaced by the matching word; spans are
    moved to the new offsets (every span boundary must be a token boundary)."""
    pieces, new_offset, position, length = [], {}, 0, 0
    for token, word in zip(tokens, words):
        gap = document.text[position:token.start]
        length += len(gap)
        new_offset.setdefault(token.start, length)
        pieces += [gap, word]
        length += len(word)
        new_offset[token.end] = length
        position = token.end
    pieces.append(document.text[position:])
    text = "".join(pieces)
    spans = []
    for span in document.spans:
        start, end = (_boundary(new_offset, span.start, document.text),
                      _boundary(new_offset, span.end, document.text, end=True))
        spans.append(Span(start, end, span.source_type, text[start:end], span.id, span.comment))
    return Document(document.id, text, tuple(spans)).validate()


def _boundary(new_offset: dict[int, int], offset: int, text: str, end: bool = False) -> int:
    """New position of an old span boundary, skipping whitespace the tokens did not cover."""
    step = -1 if end else 1
    while offset not in new_offset:
        offset += step
        if not 0 <= offset <= len(text):
            raise ValueError("span boundary is not at a token boundary")
    return new_offset[offset]
