"""PhysioNet deid gold standard: `id.text` holds the notes, each as
`START_OF_RECORD=<patient>||||<note>||||\\n<text>||||END_OF_RECORD\\n`, and
`id-phi.phrase` one PHI phrase a line, `<patient> <note> <start> <end> <TYPE> <text>`,
with offsets into the note text (everything after the START line). Document ids are
`<patient>-<note>`. Blank lines between records are normal; other stray lines are skipped
with a warning. A phrase that starts inside the previous phrase of its note, with the same
type, and ends after it is merged with it (a warning): the corpus has one such pair,
"Kessler-Adventist" + "Adventist Hosp". A `.text` without `-phi.phrase` has no PHI.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError, warn_or_raise
from deidpool.corpus.formats._common import SPLITS_FILE, is_empty, one_line, read_text, split_members, standoff_text

TEXT_FILE = "id.text"
_START = re.compile(r"START_OF_RECORD=([^\s|]+)\|\|\|\|([^\s|]+)\|\|\|\|")
_END = "||||END_OF_RECORD"


def read(path: Path, *, strict: bool = False, split: str | None = None, overlaps: bool = False) -> Iterator[Document]:
    """The notes of the folder `path` (or of the .text file `path`), optionally only those
    of the patients listed under `split` in the `splits.json` beside them."""
    text_file = path / TEXT_FILE if path.is_dir() else path
    if not text_file.is_file():
        raise CorpusError(f"no {TEXT_FILE} in this folder", path)
    content = read_text(text_file)
    if is_empty(content, text_file, strict):
        return
    notes = dict(_records(content, text_file, strict))
    phrase_file = _phrase_file(text_file)
    spans = _phrases(phrase_file, notes, strict) if phrase_file.is_file() else {}
    patients = split_members(text_file.parent / SPLITS_FILE, split) if split is not None else None
    for (patient, note), text in notes.items():
        if patients is None or patient in patients:
            document = Document(f"{patient}-{note}", text, tuple(spans.get((patient, note), ())))
            yield document.validate(phrase_file, overlaps=overlaps)


def patient(document: Document) -> str:
    """The patient of a note this module read (its id is `<patient>-<note>`)."""
    return document.id.rpartition("-")[0]


def _phrase_file(text_file: Path) -> Path:
    return text_file.with_name(f"{text_file.stem}-phi.phrase")


def _records(content: str, path: Path, strict: bool) -> Iterator[tuple[tuple[str, str], str]]:
    """((patient, note), text) for each record, in file order."""
    seen: set[tuple[str, str]] = set()
    record = None  # (key, line number of its START line, lines of its text so far)
    for number, line in enumerate(content.split("\n"), 1):
        start = _START.fullmatch(line)
        if record is None:
            if start:
                key = (start[1], start[2])
                if key in seen:
                    raise CorpusError(f"patient {key[0]} note {key[1]} appears twice", path, f"line {number}")
                seen.add(key)
                record = (key, number, [])
            elif line.strip():
                warn_or_raise(f"stray line between records ignored: {line[:60]!r}", path, f"line {number}", strict)
            continue
        key, first, lines = record
        if start:
            raise CorpusError(f"START_OF_RECORD before the END_OF_RECORD of the record started at line {first}",
                              path, f"line {number}")
        if line.endswith(_END):
            lines.append(line.removesuffix(_END))
            yield key, "\n".join(lines)
            record = None
        else:
            lines.append(line)
    if record is not None:
        raise CorpusError("record has no END_OF_RECORD", path, f"line {record[1]}")


def _phrases(path: Path, notes: dict[tuple[str, str], str], strict: bool) -> dict[tuple[str, str], list[Span]]:
    """The spans of each note, in file order (an empty file is a corpus without PHI)."""
    spans: dict[tuple[str, str], list[Span]] = {}
    for number, line in enumerate(read_text(path).split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        where = f"line {number}"
        fields = line.split(" ", 5)
        if len(fields) != 6:
            raise CorpusError(f"expected 6 fields '<patient> <note> <start> <end> <TYPE> <text>', got {len(fields)}",
                              path, where)
        patient, note, start, end, source_type, written = fields
        try:
            start, end = int(start), int(end)
        except ValueError:
            raise CorpusError(f"start and end must be integers, got {fields[2]!r} {fields[3]!r}",
                              path, where) from None
        text = notes.get((patient, note))
        if text is None:
            raise CorpusError(f"patient {patient} note {note} is not in the text file", path, where)
        span = Span(start, end, source_type, standoff_text(text, start, end, written))
        note_spans = spans.setdefault((patient, note), [])
        if note_spans and _extends(note_spans[-1], span, text):
            warn_or_raise(f"phrase overlaps the previous {source_type} phrase; both merged into one span",
                          path, where, strict)
            first = note_spans[-1].start
            note_spans[-1] = Span(first, end, source_type, text[first:end])
        else:
            note_spans.append(span)
    return spans


def _extends(previous: Span, span: Span, text: str) -> bool:
    """Whether `span` extends `previous`, of the same type and starting inside it (the
    corpus has one such pair), both matching the text."""
    return (previous.source_type == span.source_type and previous.start < span.start < previous.end < span.end
            and all(text[s.start:s.end] == s.text for s in (previous, span)))


def write(documents: Iterable[Document], path: Path) -> None:
    """`id.text` and `id-phi.phrase` in the folder `path`."""
    path.mkdir(parents=True, exist_ok=True)
    text_file = path / TEXT_FILE
    with open(text_file, "w", encoding="utf-8", newline="") as notes, \
            open(_phrase_file(text_file), "w", encoding="utf-8", newline="") as phrases:
        for document in documents:
            patient, note = _patient_note(document, text_file)
            notes.write(f"START_OF_RECORD={patient}||||{note}||||\n{document.text}{_END}\n\n")
            phrases.writelines(f"{patient} {note} {span.start} {span.end} {span.source_type} {one_line(span.text)}\n"
                               for span in document.spans)


def _patient_note(document: Document, path: Path) -> tuple[str, str]:
    """Split the id `<patient>-<note>`; refuse ids and texts the format cannot hold."""
    patient, _, note = document.id.rpartition("-")
    if not _START.fullmatch(f"START_OF_RECORD={patient}||||{note}||||"):
        raise CorpusError(f"document id {document.id!r} is not '<patient>-<note>' "
                          "(no spaces or '|' in either)", path)
    lines = f"{document.text}{_END}".split("\n")
    if any(_START.fullmatch(line) or line.endswith(_END) for line in lines[:-1]):
        raise CorpusError(f"document {document.id!r} contains a line that would end or start a record", path)
    return patient, note
