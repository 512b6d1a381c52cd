"""CoNLL export: a `-DOCSTART- <id>` line and a blank line open each document, then one
`token\\tTAG` line per token (BIO tags over source types) and a blank line after each
sentence. Tokens, sentences and tags come from `deidpool.corpus.prepare.prepare_document`.

Reading is lossy by nature: the original spacing is gone, so a document's text is rebuilt
by joining its tokens with single spaces and its sentences with newlines, and spans are
decoded from the tags on that text. Lines before the first `-DOCSTART-` form a document
named after the file. Separator runs dropped by the sentence splitter are not exported.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError
from deidpool.corpus.formats._common import input_files, is_empty, read_text, refuse_split
from deidpool.corpus.prepare import prepare_document
from deidpool.corpus.tagging import decode
from deidpool.corpus.tokenize import Token

DOCSTART = "-DOCSTART-"

# a sentence as read: (token, tag, line number) per token
_Row = tuple[str, str, int]


def read(path: Path, *, strict: bool = False, split: str | None = None, overlaps: bool = False) -> Iterator[Document]:
    """Documents from a CoNLL file or a folder of .conll files (BIO tags cannot overlap)."""
    refuse_split(split, path, "CoNLL")
    for file in input_files(path, ".conll", strict):
        content = read_text(file)
        if not is_empty(content, file, strict):
            yield from _documents(content, file)


def _documents(content: str, path: Path) -> Iterator[Document]:
    document_id: str | None = None  # None until the first -DOCSTART- line
    sentences: list[list[_Row]] = [[]]
    for number, line in enumerate(content.split("\n"), 1):
        line = line.removesuffix("\r")
        if line.startswith(DOCSTART):
            if document_id is not None or any(sentences):
                yield _document(document_id or path.stem, sentences, path)
            document_id, sentences = line.removeprefix(DOCSTART).strip() or path.stem, [[]]
        elif not line.strip():
            if sentences[-1]:
                sentences.append([])
        else:
            token, tab, tag = line.rpartition("\t")
            if not tab or not token.strip():
                raise CorpusError("expected 'TOKEN<TAB>TAG'", path, f"line {number}")
            sentences[-1].append((token, tag, number))
    if document_id is not None or any(sentences):
        yield _document(document_id or path.stem, sentences, path)


def _document(document_id: str, sentences: list[list[_Row]], path: Path) -> Document:
    lines, spans, offset = [], [], 0
    for sentence in filter(None, sentences):
        tokens = []
        for token, _, _ in sentence:
            tokens.append(Token(token, offset, offset + len(token)))
            offset += len(token) + 1  # the space or newline after it
        try:
            spans.extend(decode(tokens, [tag for _, tag, _ in sentence]))
        except ValueError as error:
            raise CorpusError(str(error), path, f"lines {sentence[0][2]}-{sentence[-1][2]}") from None
        lines.append(" ".join(token for token, _, _ in sentence))
    text = "\n".join(lines)
    return Document(document_id, text, tuple(Span(s, e, label, text[s:e]) for s, e, label in spans)).validate(path)


def write(documents: Iterable[Document], path: Path) -> None:
    """All documents into the one file `path`."""
    with open(path, "w", encoding="utf-8", newline="") as out:
        for document in documents:
            out.write(f"{DOCSTART} {document.id}\n\n")
            for sentence in prepare_document(document):
                out.writelines(f"{token.text}\t{tag}\n" for token, tag in zip(sentence.tokens, sentence.tags))
                out.write("\n")
