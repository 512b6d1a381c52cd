"""Plumbing shared by the format modules: finding input files, decoding them as UTF-8,
naming output files after document ids, and span ids and texts in line-based standoff files."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError, warn_or_raise

_SAFE_ID = re.compile(r"[^/\\\x00]+")


def input_files(path: Path, suffix: str, strict: bool) -> list[Path]:
    """`path` itself if it is a file, else the `suffix` files in the folder, sorted by name."""
    if path.is_file():
        return [path]
    files = sorted(p for p in path.iterdir() if p.suffix == suffix and p.is_file())
    if not files:
        warn_or_raise(f"no {suffix} files in this folder", path, None, strict)
    return files


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 with line endings untouched (CR and CRLF survive)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(f"not UTF-8: byte 0x{data[error.start]:02x} cannot be decoded "
                          f"({error.reason})", path, f"byte offset {error.start}") from None


def is_empty(content: str | bytes, path: Path, strict: bool) -> bool:
    """Whether the file content is nothing but whitespace (a warning, an error in strict mode)."""
    if content.strip():
        return False
    warn_or_raise("empty file skipped", path, None, strict)
    return True


def output_files(documents: Iterable[Document], folder: Path, suffix: str) -> Iterator[tuple[Document, Path]]:
    """Create `folder` and pair each document with the file `<id><suffix>` in it."""
    folder.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for document in documents:
        if not _SAFE_ID.fullmatch(document.id) or document.id in (".", ".."):
            raise CorpusError(f"document id {document.id!r} cannot be a file name", folder)
        if document.id in seen:
            raise CorpusError(f"two documents have the id {document.id!r}", folder)
        seen.add(document.id)
        yield document, folder / f"{document.id}{suffix}"


def span_ids(spans: Iterable[Span], prefix: str, valid: re.Pattern | None = None) -> list[str]:
    """The spans' ids, keeping each id that is set, unique and (given `valid`) matches it;
    the others get `<prefix><n>` with an unused n."""
    spans = list(spans)
    kept: list[str] = []
    for span in spans:
        usable = span.id and span.id not in kept and (valid is None or valid.fullmatch(span.id))
        kept.append(span.id if usable else "")
    numbers = (f"{prefix}{n}" for n in range(1, 2 * len(spans) + 1))
    free = (name for name in numbers if name not in kept)
    return [span_id or next(free) for span_id in kept]


def one_line(text: str) -> str:
    """Span text as line-based standoff files store it: line breaks become spaces."""
    return text.replace("\r", " ").replace("\n", " ")


def standoff_text(text: str, start: int, end: int, written: str) -> str:
    """The span text to use for offsets read from a standoff line whose text field is
    `written`: the text at the offsets when it flattens to `written`, else `written`
    itself, so that `Document.validate` reports the mismatch."""
    actual = text[start:end]
    return actual if 0 <= start < end <= len(text) and one_line(actual) == written else written


def refuse_split(split: str | None, path: Path, format_name: str) -> None:
    """Raise if a split was asked of a format that has no named splits."""
    if split is not None:
        raise CorpusError(f"the {format_name} format has no named splits (asked for {split!r})", path)


SPLITS_FILE = "splits.json"
SPLITS_SEARCH_DEPTH = 2  # folders above a document folder searched for splits.json (meddocan/train/xml)


def split_members(path: Path, split: str) -> set[str]:
    """The ids listed under `split` in the splits file `path` (a JSON object of lists)."""
    if not path.is_file():
        raise CorpusError(f"split {split!r} asked for, but there is no {SPLITS_FILE}", path)
    try:
        splits = json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise CorpusError(f"malformed JSON: {error.msg}", path, f"line {error.lineno}") from None
    if not isinstance(splits, dict) or split not in splits:
        available = ", ".join(splits) if isinstance(splits, dict) else "none (not a JSON object)"
        raise CorpusError(f"unknown split {split!r}; available: {available}", path)
    if not isinstance(splits[split], list):
        raise CorpusError(f"split {split!r} is not a list of ids", path, f"key {split!r}")
    return {str(member) for member in splits[split]}


def document_split(files: list[Path], folder: Path, split: str | None) -> list[Path]:
    """The files (one document each, the stem its id) of the documents listed under `split` in
    the nearest splits.json, looked for in `folder` and up to `SPLITS_SEARCH_DEPTH` folders above
    it (MEDDOCAN keeps one beside train/ and dev/); all of `files` without a split. A listed id
    with no file is an error: a split read partly would change every result computed from it."""
    if split is None:
        return files
    candidates = [folder, *list(folder.parents)[:SPLITS_SEARCH_DEPTH]]
    splits_file = next((place / SPLITS_FILE for place in candidates if (place / SPLITS_FILE).is_file()),
                       folder / SPLITS_FILE)
    members = split_members(splits_file, split)
    by_id = {file.stem: file for file in files}
    absent = sorted(members - by_id.keys())
    if absent:
        raise CorpusError(f"split {split!r} lists {len(absent)} document(s) with no file in {folder}: "
                          f"{', '.join(absent[:5])}{' ...' if len(absent) > 5 else ''}", splits_file)
    return [file for file in files if file.stem in members]
