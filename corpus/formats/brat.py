"""BRAT standoff: `<id>.txt` holds a note byte for byte and `<id>.ann` its text-bound
annotations, one `T<n>\\tTYPE START END\\tTEXT` line each.

Only `T` lines are read; other kinds (#, A, R, E, N, ...) are skipped with a warning.
Discontinuous spans (`START END;START END`) are rejected with an error: a `Span` is one
contiguous range, and silently merging or dropping fragments would change the gold
standard. A `.txt` without `.ann` is a note without PHI. Line breaks inside a span are
written as spaces in the TEXT field (as BRAT does) and restored from the note on reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from corpus.document import Document, Span
from corpus.errors import CorpusError, warn_or_raise
from corpus.formats._common import (input_files, is_empty, one_line, output_files, read_text, refuse_split,
                                    span_ids, standoff_text)

_TEXT_BOUND_ID = re.compile(r"T\d+")
_LINE_KINDS = {"#": "note", "A": "attribute", "M": "attribute", "R": "relation", "E": "event",
               "N": "normalization", "*": "equivalence"}


def read(path: Path, *, strict: bool = False, split: str | None = None, overlaps: bool = False) -> Iterator[Document]:
    """Documents from a .txt file or a folder of .txt files, each with its .ann beside it."""
    refuse_split(split, path, "BRAT")
    for text_file in input_files(path, ".txt", strict):
        text = read_text(text_file)
        if is_empty(text, text_file, strict):
            continue
        annotations = text_file.with_suffix(".ann")
        spans = tuple(_spans(annotations, text, strict)) if annotations.is_file() else ()
        yield Document(text_file.stem, text, spans).validate(annotations if spans else text_file, overlaps=overlaps)


def _spans(path: Path, text: str, strict: bool) -> Iterator[Span]:
    for number, line in enumerate(read_text(path).split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        where = f"line {number}"
        if line.startswith("T"):
            yield _span(line, text, path, where)
        else:
            kind = _LINE_KINDS.get(line[0], "unknown")
            warn_or_raise(f"{kind} line ignored: only T (text-bound) lines are read", path, where, strict)


def _span(line: str, text: str, path: Path, where: str) -> Span:
    fields = line.split("\t", 2)
    if len(fields) != 3:
        raise CorpusError("expected 'ID<TAB>TYPE START END<TAB>TEXT'", path, where)
    span_id, location, written = fields
    if ";" in location:
        raise CorpusError(f"discontinuous span {span_id} ({location}) is not supported: "
                          "split it into contiguous spans", path, where)
    parts = location.split(" ")
    if len(parts) != 3:
        raise CorpusError(f"expected 'TYPE START END', got {location!r}", path, where)
    source_type, start, end = parts
    try:
        start, end = int(start), int(end)
    except ValueError:
        raise CorpusError(f"START and END must be integers, got {location!r}", path, where) from None
    return Span(start, end, source_type, standoff_text(text, start, end, written), span_id)


def write(documents: Iterable[Document], path: Path) -> None:
    """`<id>.txt` and `<id>.ann` per document in the folder `path`, spans in document order."""
    for document, text_file in output_files(documents, path, ".txt"):
        with open(text_file, "w", encoding="utf-8", newline="") as out:
            out.write(document.text)
        lines = [f"{span_id}\t{span.source_type} {span.start} {span.end}\t{one_line(span.text)}\n"
                 for span, span_id in zip(document.spans, span_ids(document.spans, "T", _TEXT_BOUND_ID))]
        with open(text_file.with_suffix(".ann"), "w", encoding="utf-8", newline="") as out:
            out.writelines(lines)
