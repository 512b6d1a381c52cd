"""JSON documents, one object per line of a `.jsonl` file or one per `.json` file in a folder:
`{"id", "text", "spans": [{"start", "end", "type", "text", "id", "comment", "category"}]}`.
`type` is the source type; `category` is written for convenience and ignored on reading
(it follows from `type`); `id` and `comment` of a span are optional.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.formats._common import input_files, is_empty, output_files, read_text, refuse_split

_DOCUMENT_FIELDS = {"id": str, "text": str, "spans": list}
_SPAN_FIELDS = {"start": int, "end": int, "type": str, "text": str}
_OPTIONAL_SPAN_FIELDS = {"id": str, "comment": str}


def read(path: Path, *, strict: bool = False, split: str | None = None, overlaps: bool = False) -> Iterator[Document]:
    """Documents from a .jsonl file, a .json file, or a folder of .json files."""
    refuse_split(split, path, "JSON")
    if path.is_file() and path.suffix != ".json":
        content = read_text(path)
        if is_empty(content, path, strict):
            return
        for number, line in enumerate(content.split("\n"), 1):
            if line.strip():
                yield _document(_parse(line, path, f"line {number}"), path, f"line {number}", overlaps)
        return
    for file in input_files(path, ".json", strict):
        content = read_text(file)
        if not is_empty(content, file, strict):
            yield _document(_parse(content, file, None), file, None, overlaps)


def _parse(source: str, path: Path, where: str | None) -> object:
    try:
        return json.loads(source)
    except json.JSONDecodeError as error:
        raise CorpusError(f"malformed JSON: {error.msg} (column {error.colno})", path,
                          where or f"line {error.lineno}") from None


def _document(value: object, path: Path, where: str | None, overlaps: bool) -> Document:
    """A validated document from a parsed object; `where` is its line in a .jsonl file."""
    _check(value, _DOCUMENT_FIELDS, path, where)
    spans = []
    for index, item in enumerate(value["spans"]):
        at = ", ".join(part for part in (where, f"spans[{index}]") if part)
        _check(item, _SPAN_FIELDS, path, at)
        _check(item, _OPTIONAL_SPAN_FIELDS, path, at, required=False)
        spans.append(Span(item["start"], item["end"], item["type"], item["text"],
                          item.get("id", ""), item.get("comment", "")))
    try:
        return Document(value["id"], value["text"], tuple(spans)).validate(path, overlaps=overlaps)
    except CorpusError as error:
        raise CorpusError(error.reason, path, ", ".join(part for part in (where, error.where) if part)) from None


def _check(value: object, fields: dict[str, type], path: Path, where: str | None, required: bool = True) -> None:
    if not isinstance(value, dict):
        raise CorpusError(f"expected a JSON object, got {type(value).__name__}", path, where)
    for name, kind in fields.items():
        if name not in value:
            if required:
                raise CorpusError(f"missing field {name!r}", path, where)
        elif not isinstance(value[name], kind) or isinstance(value[name], bool):
            raise CorpusError(f"field {name!r} must be of type {kind.__name__}, got {value[name]!r}", path, where)


def write(documents: Iterable[Document], path: Path) -> None:
    """A .jsonl file when `path` ends in .jsonl, else one `<id>.json` per document in the folder."""
    if path.suffix == ".jsonl":
        with open(path, "w", encoding="utf-8", newline="") as out:
            out.writelines(json.dumps(_object(document), ensure_ascii=False) + "\n" for document in documents)
        return
    for document, file in output_files(documents, path, ".json"):
        file.write_text(json.dumps(_object(document), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def _object(document: Document) -> dict:
    spans = [{"start": span.start, "end": span.end, "type": span.source_type, "text": span.text,
              "id": span.id, "comment": span.comment, "category": span.category} for span in document.spans]
    return {"id": document.id, "text": document.text, "spans": spans}
