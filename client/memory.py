"""An institution's PHI memory: the PHI strings its own labeled notes name (its hospitals, towns,
doctors), found again wherever they recur in its notes.

A tagger trained on raw text learns the PHI strings of its training notes; the pooled tagger
cannot, since every exported PHI token is a surrogate and the representation is trained not to
tell words apart, so it finds recurring PHI strings less well than a raw-text tagger does
(measured by experiments/novelty_breakdown.py; see its results page). The memory gives it back
where it is allowed to be: at the institution, merged like the pattern layer
(`deidpool.client.patterns.merge_spans`) with the published pipeline's spans in `client deidentify
--memory`.

It holds PHI as it is. It is built from, and used beside, the institution's own notes; nothing
of it enters an export, a contribution header, a published pipeline or a log line (the CLI
prints counts only), and its file is written readable by its owner alone.

A gold span's text enters when it has at least `MIN_CHARACTERS` characters, is not all digits
(numbers recur as other things: the patterns find dates and identifiers), and is labeled in at
least `MIN_PRECISION` of its whole-word, case-sensitive occurrences in the notes (a string the notes
also use as an ordinary word stays out); its label is the one it has most often.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the pattern layer is imported where used: the CLI reads MIN_PRECISION at start-up
    from deidpool.client.patterns import Pattern
    from deidpool.corpus.document import Document

MIN_CHARACTERS = 3
MIN_PRECISION = 0.9
SAFETY_NET_PRECISION = 0.5
"""The export's safety net remembers a string its notes label in at least half of its occurrences:
there a false flag costs one pseudonymized word, a missed label PHI that reaches the representer
as it is, and most PHI strings occur a few times only (a PhysioNet name 1-6 times: one missed
label puts it below 0.9)."""
FORMAT = "deidpool-phi-memory/1"


class PhiMemoryError(ValueError):
    """A PHI memory file that cannot be read; the message names the file and the field."""


def remembered_phi(documents: Iterable[Document], *, min_precision: float = MIN_PRECISION,
                   min_characters: int = MIN_CHARACTERS) -> dict[str, dict]:
    """{text: {"label", "labeled", "occurrences"}} of every gold span text of `documents` that
    qualifies (see the module's docstring): `occurrences` counts its whole-word matches in the
    notes' texts, `labeled` those that a gold span covers exactly."""
    documents = list(documents)
    labels: dict[str, Counter] = defaultdict(Counter)
    for document in documents:
        for span in document.spans:
            if len(span.text) >= min_characters and not span.text.isdigit() and span.text == span.text.strip():
                labels[span.text][span.source_type] += 1
    if not labels:
        return {}
    from deidpool.client.patterns import word_alternation

    pattern = word_alternation(labels)
    occurrences, labeled = Counter(), Counter()
    for document in documents:
        gold = {(span.start, span.end) for span in document.spans}
        for match in pattern.finditer(document.text):
            occurrences[match[0]] += 1
            labeled[match[0]] += match.span() in gold
    return {text: {"label": labels[text].most_common(1)[0][0], "labeled": labeled[text],
                   "occurrences": occurrences[text]}
            for text in sorted(labels) if occurrences[text] and labeled[text] / occurrences[text] >= min_precision}


def memory_patterns(memory: Mapping[str, dict], labels: Sequence[str] = ()) -> tuple[Pattern, ...]:
    """One pattern per label of `memory` finding its texts, labelled as the tag set `labels` (a
    pipeline's span labels) names the label's i2b2 type (`tag_set_label`; none: as remembered)."""
    from deidpool.client.patterns import Pattern, tag_set_label, word_alternation

    by_label: dict[str, list[str]] = defaultdict(list)
    for text, entry in memory.items():
        by_label[tag_set_label(entry["label"], labels, by_category=False)].append(text)
    return tuple(Pattern(f"memory {label}", label, word_alternation(texts))
                 for label, texts in sorted(by_label.items()))


def save_memory(memory: Mapping[str, dict], path: str | Path) -> None:
    """Write `memory` as JSON to `path`, readable and writable by its owner only; PhiMemoryError
    naming the file when it cannot be written."""
    path = Path(path)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError as error:
        raise PhiMemoryError(f"{path}: cannot write the PHI memory ({error.strerror})") from None
    os.chmod(path, 0o600)  # an existing file keeps its mode under os.open
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump({"format": FORMAT, "entries": dict(memory)}, out, ensure_ascii=False, indent=1)
        out.write("\n")


def load_memory(path: str | Path) -> dict[str, dict]:
    """The memory `save_memory` wrote to `path`; PhiMemoryError naming the file and what is wrong
    (never the file's content: it is PHI)."""
    path = Path(path)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise PhiMemoryError(f"{path}: not a readable PHI memory ({type(error).__name__})") from None
    if not isinstance(stored, dict) or stored.get("format") != FORMAT:
        raise PhiMemoryError(f"{path}: not a PHI memory (field 'format' is not {FORMAT!r})")
    entries = stored.get("entries")
    if not isinstance(entries, dict) or not all(isinstance(entry, dict) and isinstance(entry.get("label"), str)
                                                for entry in entries.values()):
        raise PhiMemoryError(f"{path}: field 'entries' must map each text to an entry with a 'label'")
    return entries
