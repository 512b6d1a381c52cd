"""BRAT standoff: `<id>.txt` holds a note byte for byte and `<id>.ann` its text-bound
annotations, one `T<n>\\tTYPE START END\\tTEXT` line each.

Only `T` lines are read; other kinds (#, A, R, E, N, ...) are skipped with a warning.
Discontinuous spans (`START END;START END`) are rejected with an error: a `Span` is one
contiguous range, and silently merging or dropping fragments would change the gold
standard. A `.txt` without `.ann` is a note without PHI. Line breaks inside a span are
written as spaces in the TEXT field (as BRAT does) and restored from the note on reading.

The writer also puts BRAT's `annotation.conf` and `visual.conf` in the folder, generated from
`deidpool.corpus.categories` (never edit them: they are rewritten with every output), so the folder
opens in BRAT as a collection whose entity types are the PHI types, ready for review: every
i2b2 2014 type, grouped by category between separator lines, and nested under the i2b2 2014
type it maps to every other label that the documents use or the writer is given (`types`,
e.g. everything a pipeline can predict). The types of one category share a colour. Reviewed
folders read back like any BRAT corpus (the .conf files are not notes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from deidpool.corpus.categories import I2B2_TYPES, PHI_TYPES
from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError, warn_or_raise
from deidpool.corpus.formats._common import (
    document_split,
    input_files,
    is_empty,
    one_line,
    output_files,
    read_text,
    refuse_split,
    span_ids,
    standoff_text,
)

_TEXT_BOUND_ID = re.compile(r"T\d+")
_LINE_KINDS = {"#": "note", "A": "attribute", "M": "attribute", "R": "relation", "E": "event",
               "N": "normalization", "*": "equivalence"}


def read(path: Path, *, strict: bool = False, split: str | None = None, overlaps: bool = False) -> Iterator[Document]:
    """Documents from a .txt file or a folder of .txt files, each with its .ann beside it. A
    `split` keeps the documents listed under it in the nearest splits.json (`document_split`)."""
    if split is not None and path.is_file():
        refuse_split(split, path, "single-file BRAT")
    for text_file in document_split(input_files(path, ".txt", strict), path, split):
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


def write(documents: Iterable[Document], path: Path, *, types: Iterable[str] = ()) -> None:
    """`<id>.txt` and `<id>.ann` per document in the folder `path`, spans in document order,
    and the BRAT configuration of the PHI types (the i2b2 2014 types, the documents' labels
    and `types`)."""
    used = set(types)
    for document, text_file in output_files(documents, path, ".txt"):
        with open(text_file, "w", encoding="utf-8", newline="") as out:
            out.write(document.text)
        lines = [f"{span_id}\t{span.source_type} {span.start} {span.end}\t{one_line(span.text)}\n"
                 for span, span_id in zip(document.spans, span_ids(document.spans, "T", _TEXT_BOUND_ID))]
        with open(text_file.with_suffix(".ann"), "w", encoding="utf-8", newline="") as out:
            out.writelines(lines)
        used.update(span.source_type for span in document.spans)
    path.mkdir(parents=True, exist_ok=True)
    (path / ANNOTATION_CONF).write_text(annotation_conf(used), encoding="utf-8")
    (path / VISUAL_CONF).write_text(visual_conf(used), encoding="utf-8")


# --- BRAT configuration of the PHI types -------------------------------------------------

ANNOTATION_CONF, VISUAL_CONF = "annotation.conf", "visual.conf"
_CATEGORY_COLOURS = {"NAME": "#ffccaa", "PROFESSION": "#e0c8ff", "LOCATION": "#8fb2ff", "AGE": "#fff080",
                     "DATE": "#b0ee88", "CONTACT": "#7fe2ff", "ID": "#ff9f9f", "OTHER": "#d8d8d8"}
_UNKNOWN_COLOUR = "#ffffff"
_HEADER = ("# BRAT {what} of deidpool's PHI types, generated from corpus/categories.py by\n"
           "# corpus.formats.brat: rewritten with every output, do not edit.\n")


def type_hierarchy(types: Iterable[str] = ()) -> dict[str, dict[str, list[str]]]:
    """category -> i2b2 2014 type -> the other labels of `types` that map to it, in the order
    of `deidpool.corpus.categories` whatever the order of `types`; labels outside the table, sorted,
    under the category ""."""
    wanted = set(types)
    tree: dict[str, dict[str, list[str]]] = {}
    for type_ in I2B2_TYPES:
        tree.setdefault(PHI_TYPES[type_].category, {})[type_] = []
    for label, phi in PHI_TYPES.items():
        if label in wanted and label not in I2B2_TYPES:
            tree[phi.category][phi.type].append(label)
    for label in sorted(wanted - PHI_TYPES.keys()):
        tree.setdefault("", {})[label] = []
    return tree


def annotation_conf(types: Iterable[str] = ()) -> str:
    """BRAT's annotation.conf: the entity types of `type_hierarchy(types)`, one category per
    block between separator lines, other corpora's labels indented under their i2b2 2014 type."""
    blocks = []
    for category, types_ in type_hierarchy(types).items():
        lines = [f"# {category or 'labels outside corpus/categories.py'}"]
        for type_, labels in types_.items():
            lines += [type_, *(f"\t{label}" for label in labels)]
        blocks.append("\n".join(lines) + "\n")
    return (_HEADER.format(what="annotation configuration") + "\n[entities]\n\n" + "----\n".join(blocks)
            + "\n[relations]\n\n[events]\n\n[attributes]\n")


def visual_conf(types: Iterable[str] = ()) -> str:
    """BRAT's visual.conf: one background colour per category for its types and labels."""
    drawing = ["SPAN_DEFAULT\tfgColor:black, bgColor:lightgreen, borderColor:darken",
               "ARC_DEFAULT\tcolor:black, dashArray:-, arrowHead:triangle-5"]
    for category, types_ in type_hierarchy(types).items():
        colour = _CATEGORY_COLOURS.get(category, _UNKNOWN_COLOUR)
        drawing += [f"{name}\tbgColor:{colour}" for type_, labels in types_.items() for name in (type_, *labels)]
    return _HEADER.format(what="visual configuration") + "\n[labels]\n\n[drawing]\n\n" + "\n".join(drawing) + "\n"
