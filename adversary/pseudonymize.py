"""Automatic word-level pseudonymization (METHOD.md): a PHI token becomes a random one of
its N nearest embedding neighbours (itself included), a digit-only token a random
digit-only vocabulary word; stop words, punctuation and out-of-vocabulary tokens stay.

Digit-only pseudonyms have as many digits as the token they replace (when the vocabulary
has such words): drawn from all of GloVe's digit words, "22" in "7/22" mostly became long
numbers like "1937", so PHI numbers in pseudonymized training data no longer looked like
the dates and phone numbers of real text and the tagger stopped finding those (measured:
PhysioNet token HIPAA recall 0.23 at N=2 with any-length digit words).

Replacements take the casing shape of the token they replace ("SMITH" -> "JONES",
"Smith" -> "Jones"), so that the casing feature of a pseudonymized corpus stays as
realistic as the text's. N = 1 changes nothing; larger N gives more privacy.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from functools import cached_property

from gensim.parsing.preprocessing import STOPWORDS

from corpus.casing import casing_ids
from corpus.document import Document, Span
from corpus.prepare import LabeledSentence, prepare_document
from corpus.tokenize import Token
from representer.embeddings import Embeddings


def _same_casing(replacement: str, original: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


class Pseudonymizer:
    """Draws pseudonyms for single tokens from an embedding space with `neighbours` = N."""

    def __init__(self, embeddings: Embeddings, neighbours: int):
        if neighbours < 1:
            raise ValueError(f"neighbours must be >= 1, got {neighbours}")
        self.embeddings = embeddings
        self.neighbours = neighbours

    @cached_property
    def _digit_words(self) -> dict[int, list[str]]:
        """Digit-only vocabulary words by length (key 0: all of them)."""
        words = self.embeddings.digit_words()
        by_length: dict[int, list[str]] = {0: words}
        for word in words:
            by_length.setdefault(len(word), []).append(word)
        return by_length

    def replaceable(self, word: str) -> bool:
        """Whether `word` would be replaced (not a stop word, punctuation or OOV)."""
        return (any(c.isalnum() for c in word) and word.lower() not in STOPWORDS
                and self.embeddings.is_known(word))

    def pseudonym(self, word: str, rng: random.Random) -> str:
        """A random replacement for `word` (possibly `word` itself; `word` if not replaceable)."""
        if self.neighbours == 1 or not self.replaceable(word):
            return word
        if word.isdigit():
            candidates = self._digit_words.get(len(word)) or self._digit_words[0]
            return rng.choice(candidates) if candidates else word
        return _same_casing(rng.choice(self.embeddings.neighbours(word, self.neighbours)), word)

    def sentence(self, sentence: LabeledSentence, rng: random.Random, only: Iterable[int] | None = None) -> list[str]:
        """Token strings of `sentence` with every PHI token (or only positions `only`) replaced."""
        positions = set(only) if only is not None else {i for i, tag in enumerate(sentence.tags) if tag != "O"}
        return [self.pseudonym(t.text, rng) if i in positions else t.text for i, t in enumerate(sentence.tokens)]

    def labeled_sentences(self, sentences: Iterable[LabeledSentence], rng: random.Random) -> list[LabeledSentence]:
        """Training sentences with every PHI token replaced; casing ids follow the new words."""
        result = []
        for sentence in sentences:
            tokens = [Token(word, t.start, t.end) for word, t in zip(self.sentence(sentence, rng), sentence.tokens)]
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
        start, end = _boundary(new_offset, span.start, document.text), _boundary(new_offset, span.end, document.text, end=True)
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
