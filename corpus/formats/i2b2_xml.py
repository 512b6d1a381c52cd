"""i2b2 2014 de-identification XML (root `deIdi2b2`) and its MEDDOCAN variant (root
`MEDDOCAN`): the note in a CDATA `TEXT`, one `TAGS` child per span, one document per file.

The element name of a tag is the i2b2 category; its `TYPE` attribute is the source type
and alone decides the span's label (MEDDOCAN files tag FAMILIARES_SUJETO_ASISTENCIA as
OTHER, where `deidpool.corpus.categories` puts it under NAME). XML parsers turn CR into LF even
inside CDATA, so the writer emits CR as the character reference `&#13;` between CDATA
sections, and splits a CDATA section around any "]]>" in the text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from pathlib import Path
from xml.sax.saxutils import escape

from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.formats._common import document_split, input_files, is_empty, output_files, refuse_split, span_ids

ROOTS = ("deIdi2b2", "MEDDOCAN")
_REQUIRED = ("start", "end", "text", "TYPE")
_ATTRIBUTE_ESCAPES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def read(path: Path, *, strict: bool = False, split: str | None = None, overlaps: bool = False) -> Iterator[Document]:
    """Documents from a .xml file or a folder of them; the file stem is the document id. A
    `split` keeps the documents listed under it in the nearest splits.json (`document_split`)."""
    if split is not None and path.is_file():
        refuse_split(split, path, "single-file i2b2 XML")
    for file in document_split(input_files(path, ".xml", strict), path, split):
        data = file.read_bytes()
        if not is_empty(data, file, strict):
            yield _document(file, data, overlaps)


def _document(path: Path, data: bytes, overlaps: bool) -> Document:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as error:
        line, column = error.position
        reason = str(error).rsplit(": line", 1)[0]
        raise CorpusError(f"malformed XML: {reason}", path, f"line {line}, column {column + 1}") from None
    if root.tag not in ROOTS:
        raise CorpusError(f"root element is <{root.tag}>, expected <{'> or <'.join(ROOTS)}>", path, f"<{root.tag}>")
    text_element = root.find("TEXT")
    if text_element is None:
        raise CorpusError("no <TEXT> element", path, f"<{root.tag}>")
    tags = root.find("TAGS")
    spans = tuple(_span(element, index, path) for index, element in enumerate(tags if tags is not None else (), 1))
    return Document(path.stem, text_element.text or "", spans).validate(path, overlaps=overlaps)


def _span(element: ET.Element, index: int, path: Path) -> Span:
    where = f"TAGS element {index} <{element.tag} id={element.get('id', '')!r}>"
    missing = [name for name in _REQUIRED if name not in element.attrib]
    if missing:
        raise CorpusError(f"missing attribute(s) {', '.join(missing)}", path, where)
    try:
        start, end = int(element.get("start")), int(element.get("end"))
    except ValueError:
        raise CorpusError("start and end must be integers", path, where) from None
    return Span(start, end, element.get("TYPE"), element.get("text"),
                element.get("id", ""), element.get("comment", ""))


def write(documents: Iterable[Document], path: Path, root: str = "deIdi2b2") -> None:
    """One `<id>.xml` per document in the folder `path`; a `path` ending in .xml gets the
    single document (whose id then is the file stem when read back)."""
    if root not in ROOTS:
        raise CorpusError(f"unknown root {root!r}; choose one of: {', '.join(ROOTS)}", path)
    if path.suffix == ".xml":
        documents = list(documents)
        if len(documents) != 1:
            raise CorpusError(f"a .xml file holds one document, not {len(documents)}: give a folder", path)
        _write_file(documents[0], path, root)
        return
    for document, file in output_files(documents, path, ".xml"):
        _write_file(document, file, root)


def _write_file(document: Document, path: Path, root: str) -> None:
    tags = [_tag(span, span_id) for span, span_id in zip(document.spans, span_ids(document.spans, "P"))]
    xml = (f"<?xml version='1.0' encoding='UTF-8'?>\n<{root}>\n  <TEXT>{_character_data(document.text)}</TEXT>\n"
           f"  <TAGS>\n{''.join(tags)}  </TAGS>\n</{root}>\n")
    bad = _NOT_XML.search(xml)
    if bad:
        raise CorpusError(f"character U+{ord(bad.group()):04X} cannot be written in XML 1.0", path,
                          f"document {document.id!r}")
    path.write_bytes(xml.encode("utf-8"))


def _tag(span: Span, span_id: str) -> str:
    values = {"id": span_id, "start": span.start, "end": span.end, "text": span.text,
              "TYPE": span.source_type, "comment": span.comment}
    attributes = " ".join(f'{name}="{escape(str(value), _ATTRIBUTE_ESCAPES)}"' for name, value in values.items())
    return f"    <{span.category} {attributes}/>\n"


def _character_data(text: str) -> str:
    """CDATA sections holding `text` exactly: CR as `&#13;` between sections, "]]>" split."""
    return "&#13;".join(f"<![CDATA[{part.replace(']]>', ']]]]><![CDATA[>')}]]>" if part else ""
                        for part in text.split("\r"))
