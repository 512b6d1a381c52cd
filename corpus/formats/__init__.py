"""Readers and writers of annotated notes, one module per format, behind two functions.

Every format module exposes `read(path, *, strict, split, overlaps) -> Iterator[Document]`
(`overlaps`: accept overlapping spans, as in predictions to be scored) and
`write(documents, path, **options) -> None`. `write_corpus` makes the output appear atomically.
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from deidpool.corpus.document import Document
from deidpool.corpus.errors import CorpusError

# format name -> module implementing it
FORMATS = {
    "i2b2": "deidpool.corpus.formats.i2b2_xml",
    "meddocan": "deidpool.corpus.formats.i2b2_xml",
    "brat": "deidpool.corpus.formats.brat",
    "physionet": "deidpool.corpus.formats.physionet",
    "conll": "deidpool.corpus.formats.conll",
    "json": "deidpool.corpus.formats.jsonl",
}


def _module(fmt: str):
    if fmt not in FORMATS:
        raise CorpusError(f"unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    return importlib.import_module(FORMATS[fmt])


def iter_corpus(path: str | Path, fmt: str, *, split: str | None = None, strict: bool = False,
                overlaps: bool = False) -> Iterator[Document]:
    """Stream the documents at `path` (a file or folder, as the format expects); overlapping
    spans are an error unless `overlaps`."""
    path = Path(path)
    if not path.exists():
        raise CorpusError("no such file or folder", path)
    return _module(fmt).read(path, strict=strict, split=split, overlaps=overlaps)


def read_corpus(path: str | Path, fmt: str, *, split: str | None = None, strict: bool = False,
                overlaps: bool = False) -> list[Document]:
    return list(iter_corpus(path, fmt, split=split, strict=strict, overlaps=overlaps))


def write_corpus(documents: Iterable[Document], path: str | Path, fmt: str, *, replace: bool = False,
                 private: bool = False, **options) -> None:
    """Write `documents` to `path` (file or folder, as the format needs) atomically: the
    format writes into a temporary sibling that replaces `path` only once it is complete,
    so a failure leaves whatever was at `path` untouched. An existing folder that holds anything
    is replaced only when `replace` (the caller's user named it as the output), so that a default
    output path never deletes notes someone put there. `private` makes the output readable by its
    owner alone (0700 folders, 0600 files: notes with PHI). `options` go to the format's writer
    (brat: `types`, labels to configure in annotation.conf beside those the documents use)."""
    module, path = _module(fmt), Path(path)
    if not replace:
        check_absent(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        target = staging / path.name
        module.write(documents, target, **({"root": "MEDDOCAN"} if fmt == "meddocan" else {}), **options)
        if private:
            for entry in [target, *target.rglob("*")]:
                entry.chmod(0o700 if entry.is_dir() else 0o600)
        if path.is_dir() and target.is_dir():
            shutil.rmtree(path)
        target.replace(path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def check_absent(path: str | Path) -> None:
    """CorpusError unless nothing but an empty folder is at `path` (the output would replace it)."""
    path = Path(path)
    if path.is_file() or (path.is_dir() and any(path.iterdir())):
        raise CorpusError("refusing to replace what is there: choose another output path, or move it away first",
                          path)
