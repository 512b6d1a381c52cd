"""The export's safety net for PHI the labels miss (docs/method.md, "Beyond the paper"): a token no
gold span covers reaches the representer as it is, so before an export the client looks for PHI
in each labeled note's raw text, with the pattern layer (`deidpool.client.patterns`) always and a
published pipeline's tagger (`deidpool.client.deidentify.find_phi`) when the institution has one,
and the PHI memory of the exported notes themselves (`deidpool.client.memory`): a string the notes
label in at least half of its occurrences (`SAFETY_NET_PRECISION`) is flagged where its label is missing.

A token with a letter or a digit that a found span overlaps and no gold span covers is flagged.
The export pseudonymizes it like a gold PHI token of the found span's label (its exported tag
stays "O", as annotated), counts it in the signed header (`Flagged.header`) and its
re-identification bound, and lists it for review: a BRAT folder of every note with a flag,
holding its gold spans and one span per run of flagged tokens of one found span, so that once a
reviewer has deleted the false flags (and corrected the rest) it reads back as corrected
training notes (`client export --notes DIR --format brat`, docs/integrations.md).

It catches what its finders catch: the pattern layer's PHI of the notes' language (`client
export --language`), the memory's strings labeled elsewhere in the notes (a name in the one note
where the annotator missed it), and with a pipeline whatever its tagger finds. Without a pipeline
it misses names, places, hospitals and professions that no cue the patterns know announces.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import tee
from pathlib import Path

from deidpool.client.deidentify import find_phi
from deidpool.client.memory import memory_patterns
from deidpool.client.patterns import DEFAULT_PATTERNS, Pattern, find_patterns, patterns_for, tag_set_label
from deidpool.corpus.categories import PHI_TYPES
from deidpool.corpus.document import Document, Span
from deidpool.corpus.formats import write_corpus
from deidpool.corpus.prepare import LabeledSentence
from deidpool.representer.bundle import Bundle


@dataclass(frozen=True, eq=False)
class SafetyNet:
    """The finders of unlabeled PHI: `patterns` in each note's raw text, merged with the spans of
    the published `pipeline` (a verified pipeline `Bundle`, with its `embeddings`) when given."""

    patterns: Sequence[Pattern] = DEFAULT_PATTERNS
    pipeline: Bundle | None = None
    embeddings: object = None
    memory: Mapping[str, dict] = field(default_factory=dict)  # `remembered_phi` of the notes exported

    @classmethod
    def of_language(cls, language: str) -> SafetyNet:
        """The pattern layer of notes in `language` (ValueError naming an unknown one)."""
        return cls(patterns_for(language))

    @property
    def finders(self) -> list[str]:
        """What looks for PHI ("patterns", "memory", "pipeline <representer id>"); none when off."""
        return ((["patterns"] if self.patterns else []) + (["memory"] if self.memory else [])
                + ([f"pipeline {self.pipeline.representer_id}"] if self.pipeline is not None else []))

    def found(self, documents: Iterable[Document]) -> Iterator[tuple[Document, tuple[Span, ...]]]:
        """Each document with the PHI spans the finders find in its text (sorted, not overlapping)."""
        patterns = (*self.patterns, *memory_patterns(self.memory))
        if self.pipeline is None:
            return ((document, find_patterns(document.text, patterns)) for document in documents)
        mine, theirs = tee(documents)
        predicted = find_phi((Document(document.id, document.text) for document in theirs), self.pipeline,
                             self.embeddings, patterns=patterns)
        return ((document, found.spans) for document, found in zip(mine, predicted, strict=True))


OFF = SafetyNet(patterns=())


@dataclass
class Flagged:
    """What the safety net flagged in one export: tokens by i2b2 category, and the notes to review."""

    finders: list[str]
    categories: Counter = field(default_factory=Counter)
    notes: list[Document] = field(default_factory=list)

    def add(self, document: Document, sentences: Sequence[LabeledSentence], found: Sequence[Span],
            labels: Sequence[str]) -> list[list[str]]:
        """The tags the pseudonymizer goes by in each of `document`'s `sentences`: the gold tags,
        with "B-<label>" on every flagged token, its found span's label as the bundle's tag
        `labels` name it (`tag_set_label`). Counts the flags and keeps the note for review."""
        if not found:
            return [sentence.tags for sentence in sentences]
        ends = [span.end for span in found]
        marked, runs = [], []  # runs: [found span, start, end] of consecutive flagged tokens
        for sentence in sentences:
            tags, run = list(sentence.tags), None
            for position, (token, tag) in enumerate(zip(sentence.tokens, sentence.tags)):
                index = bisect_right(ends, token.start)
                if tag != "O" or index == len(found) or found[index].start >= token.end:
                    run = None
                    continue
                if not any(c.isalnum() for c in token.text):
                    continue  # punctuation inside a found span: kept, and it does not end the run
                label = tag_set_label(found[index].source_type, labels)
                tags[position] = f"B-{label}"
                self.categories[PHI_TYPES[label].category if label in PHI_TYPES else label] += 1
                if run is not None and run[0] == index:
                    run[2] = token.end
                else:
                    run = [index, token.start, token.end]
                    runs.append(run)
            marked.append(tags)
        if runs:
            flags = [Span(start, end, tag_set_label(found[index].source_type, labels), document.text[start:end])
                     for index, start, end in runs]
            spans = sorted((*document.spans, *flags), key=lambda span: (span.start, span.end))
            self.notes.append(Document(document.id, document.text, tuple(spans)))
        return marked

    @property
    def tokens(self) -> int:
        return sum(self.categories.values())

    def header(self) -> dict:
        """The contribution header's `safety_net`: {"finders"} (none: the net was off)."""
        return {"finders": self.finders}

    def counts(self) -> dict:
        """What the finders flagged, for the contribution's sealed summary (it depends on the notes'
        text, so the header does not show it): {"flagged_tokens", "categories": {i2b2 category:
        flagged tokens}}."""
        return {"flagged_tokens": self.tokens, "categories": dict(sorted(self.categories.items()))}

    def write_review(self, folder: str | Path) -> None:
        """The notes with flags as a BRAT folder readable by its owner alone, at `folder` unless
        something is there already (CorpusError: a reviewer's corrections are never replaced); only
        the BRAT configuration when no note has a flag."""
        write_corpus(self.notes, folder, "brat", private=True)

