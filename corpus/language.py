"""The language notes are written in, among those deidpool draws surrogates and runs patterns for:
the one whose word frequencies (wordfreq) know the notes' words best. An export's surrogates, its
safety net's patterns and its bound's frequency prior all follow the notes' language, so a
command that writes surrogates asks here unless the user names it."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable

from wordfreq import zipf_frequency

LANGUAGES = ("en", "es")
SAMPLE_WORDS = 3000  # the first words of the notes that decide
MARGIN = 0.5  # the least lead, in mean Zipf frequency, of the language chosen over the next
_WORD = re.compile(r"[^\W\d_]{2,}")


class LanguageError(ValueError):
    """Notes whose words do not tell their language."""


def detect_language(texts: Iterable[str], languages: tuple[str, ...] = LANGUAGES) -> str:
    """The language of `languages` whose word frequencies score the first SAMPLE_WORDS words of
    `texts` highest; LanguageError when the texts hold no word or no language leads by MARGIN."""
    words: list[str] = []
    for text in texts:
        words += (word.lower() for word in _WORD.findall(text))
        if len(words) >= SAMPLE_WORDS:
            break
    if not words:
        raise LanguageError("the notes hold no word to tell their language by: name it (--language)")
    scores = {language: statistics.fmean(zipf_frequency(word, language) for word in words[:SAMPLE_WORDS])
              for language in languages}
    best, *others = sorted(scores, key=scores.get, reverse=True)
    if others and scores[best] - scores[others[0]] < MARGIN:
        found = ", ".join(f"{language} {score:.2f}" for language, score in scores.items())
        raise LanguageError(f"cannot tell the notes' language (mean word frequency {found}): name it (--language)")
    return best
