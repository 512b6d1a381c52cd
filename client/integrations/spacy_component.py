"""A spaCy pipeline component that marks the PHI a signature-checked deidpool pipeline finds:
`nlp.add_pipe("deidpool", config={"pipeline": PATH, "provider_key": PATH})` (`pip install
'deidpool[spacy]'`; the factory is registered through the `spacy_factories` entry point, so no
import is needed).

Every span goes to the span group `doc.spans["deidpool"]` (config `spans_key`), labelled by
its i2b2 2014 type (config `label`: "type", or "category" for the i2b2 category) and aligned to
spaCy's tokens with `doc.char_span(..., alignment_mode="expand")`. The spans are also added to
`doc.ents` unless one of them overlaps an entity already there (set by an earlier component);
then `doc.ents` is left as it was and the span group alone holds them. Two deidpool spans that
expand onto the same token (deidpool cuts "25yo" in two, spaCy may not) are both in the span
group; `doc.ents`, which cannot overlap, keeps the longer.

This module imports no ML framework: spaCy imports it whenever it creates a pipeline, and the
pipeline's models are loaded only when the component is created.
"""

from collections.abc import Iterable, Iterator
from typing import Optional

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import filter_spans

LABELS = ("type", "category")
DEFAULT_CONFIG = {"embeddings": None, "patterns": True, "spans_key": "deidpool", "label": "type",
                  "batch_size": 64}


@Language.factory("deidpool", default_config=DEFAULT_CONFIG, assigns=["doc.ents", "doc.spans"])
def make_deidpool_component(nlp: Language, name: str, pipeline: str, provider_key: str, embeddings: Optional[str],
                            patterns: bool, spans_key: str, label: str, batch_size: int) -> "DeidpoolComponent":
    """The component for the pipeline at `pipeline` (folder or .tar), verified with the PEM public
    key file `provider_key`; `embeddings` where to find its embeddings if not by its own spec;
    `patterns` merge the pattern layer's spans (as `deidpool client deidentify`)."""
    from deidpool.client.deidentify import PhiFinder

    if label not in LABELS:
        raise ValueError(f"label must be one of {', '.join(LABELS)}, got {label!r}")
    finder = PhiFinder.open(pipeline, provider_key, embeddings=embeddings, patterns=patterns)
    return DeidpoolComponent(finder, name=name, spans_key=spans_key, label=label, batch_size=batch_size)


class DeidpoolComponent:
    """Sets `doc.spans[spans_key]` and, where it can, `doc.ents` from a `PhiFinder`'s spans (see
    the module docstring)."""

    def __init__(self, finder, *, name: str = "deidpool", spans_key: str = "deidpool", label: str = "type",
                 batch_size: int = 64):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.finder, self.name, self.spans_key = finder, name, spans_key
        self.label, self.batch_size = label, batch_size

    def __call__(self, doc: Doc) -> Doc:
        [spans] = self.finder.spans([doc.text])
        return self.set_annotations(doc, spans)

    def pipe(self, docs: Iterable[Doc], batch_size: Optional[int] = None) -> Iterator[Doc]:
        """The docs annotated `batch_size` at a time (one model call per batch)."""
        batch: list[Doc] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) == (batch_size or self.batch_size):
                yield from self._annotated(batch)
                batch = []
        yield from self._annotated(batch)

    def _annotated(self, docs: list[Doc]) -> Iterator[Doc]:
        for doc, spans in zip(docs, self.finder.spans([doc.text for doc in docs]), strict=True):
            yield self.set_annotations(doc, spans)

    def set_annotations(self, doc: Doc, spans) -> Doc:
        """Write `spans` (`deidpool.corpus.document.Span`s with offsets into `doc.text`) to `doc`."""
        found = [doc.char_span(span.start, span.end, label=getattr(span, self.label), alignment_mode="expand")
                 for span in spans]
        found = [span for span in found if span is not None]
        doc.spans[self.spans_key] = found
        entities = filter_spans(found)
        if not any(_overlap(new, old) for new in entities for old in doc.ents):
            doc.ents = sorted([*doc.ents, *entities], key=lambda span: span.start)
        return doc


def _overlap(left: Span, right: Span) -> bool:
    return left.start < right.end and right.start < left.end
