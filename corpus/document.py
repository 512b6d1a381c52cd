"""The document model every reader produces and every writer consumes."""

from __future__ import annotations

from dataclasses import dataclass, field

from deidpool.corpus.categories import PhiType, phi_type
from deidpool.corpus.errors import CorpusError


@dataclass(frozen=True, order=True)
class Span:
    """A PHI mention: character offsets [start, end) into the document text.

    `source_type` is the label as written by the source corpus; its i2b2 2014 category,
    type and HIPAA flag come from `deidpool.corpus.categories`. `id` and `comment` are kept only so
    that formats which carry them round-trip.
    """

    start: int
    end: int
    source_type: str
    text: str
    id: str = field(default="", compare=False)
    comment: str = field(default="", compare=False)

    @property
    def phi(self) -> PhiType:
        return phi_type(self.source_type)

    @property
    def category(self) -> str:
        return self.phi.category

    @property
    def type(self) -> str:
        return self.phi.type

    @property
    def hipaa(self) -> bool:
        return self.phi.hipaa


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    spans: tuple[Span, ...] = ()

    def validate(self, path: str | None = None, *, overlaps: bool = False) -> "Document":
        """Check every span against the text; raise CorpusError naming the span otherwise.
        Overlapping spans are an error too, unless `overlaps` (predictions to be scored)."""
        where = f"document {self.id!r}"
        for span in self.spans:
            tag = f"{where}, span {span.id or ''} {span.source_type} [{span.start}, {span.end})".replace("  ", " ")
            if not 0 <= span.start < span.end <= len(self.text):
                raise CorpusError(f"offsets outside the text (length {len(self.text)})", path, tag)
            if self.text[span.start:span.end] != span.text:
                raise CorpusError(
                    f"span text {span.text!r} differs from the text at its offsets "
                    f"{self.text[span.start:span.end]!r}", path, tag)
            try:
                span.phi
            except KeyError as error:
                raise CorpusError(error.args[0], path, tag) from None
        if overlaps:
            return self
        ordered = sorted(self.spans)
        for left, right in zip(ordered, ordered[1:]):
            if right.start < left.end:
                raise CorpusError(
                    f"overlapping spans {left.source_type} [{left.start}, {left.end}) and "
                    f"{right.source_type} [{right.start}, {right.end})", path, where)
        return self
