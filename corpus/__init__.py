"""Clinical notes with PHI annotations: formats, tokenization, tag schemes, metrics and
synthetic data. Pure Python + NumPy: nothing here imports an ML framework."""

from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError

__all__ = ["CorpusError", "Document", "Span"]
