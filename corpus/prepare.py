"""Notes to model input: tokens split into sentences, with casing ids and, for annotated
documents, one tag per token such that no gold span is lost."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from deidpool.corpus.casing import casing_ids
from deidpool.corpus.document import Document, Span
from deidpool.corpus.sentences import MAX_TOKENS, split_sentences
from deidpool.corpus.tagging import encode
from deidpool.corpus.tokenize import Token, tokenize


@dataclass(frozen=True, eq=False)
class Sentence:
    tokens: list[Token]
    casing: np.ndarray  # int8 index into corpus.casing.CASING per token


@dataclass(frozen=True, eq=False)
class LabeledSentence(Sentence):
    tags: list[str]


def prepare_document(document: Document, scheme: str = "BIO", label: Callable[[Span], str] = attrgetter("source_type"),
                     max_tokens: int = MAX_TOKENS) -> list[LabeledSentence]:
    """Tokens are cut at every gold span boundary and sentences never cut a gold span, so
    decoding the tags gives back every gold span (trimmed of surrounding whitespace)."""
    text, spans = document.text, document.spans
    tokens = tokenize(text, breaks=[offset for span in spans for offset in (span.start, span.end)])
    tag_at = dict(zip((t.start for t in tokens), encode(tokens, spans, scheme, label)))
    return [LabeledSentence(sentence, casing_ids(sentence), [tag_at[t.start] for t in sentence])
            for sentence in split_sentences(text, tokens, spans, max_tokens)]


def prepare_text(text: str, max_tokens: int = MAX_TOKENS) -> list[Sentence]:
    """Sentences of an unlabeled note, tokenized without extra breaks."""
    return [Sentence(sentence, casing_ids(sentence))
            for sentence in split_sentences(text, tokenize(text), max_tokens=max_tokens)]
