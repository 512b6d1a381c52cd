"""De-identification scores of predicted against gold PHI spans, defined as the i2b2 2014
official evaluation script (kotfic/i2b2_evaluation_scripts) defines them, with the project's own
token measures beside them.

Documents are paired by id; a document on one side only counts as having no spans on the other
(with a CorpusWarning naming it), and paired documents must have the same text. Overlapping
spans are scored as the official scripts score them, with a CorpusWarning: each distinct span
counts once, and so does each token.

Token-level binary measures count PHI tokens only, categories ignored: `token_official_hipaa`
(the primary measure) and `token_official_all` are the official script's "Binary HIPAA Token" and
"Binary Token" rows (`official_token_counts`); `token_hipaa` and `token_all` are the project's own,
on its tokenizer (`token_counts`). `*_hipaa` keep only the HIPAA spans on both sides, `*_all`
every span. Entity-level measures (`entity_counts`) match spans labelled by `key` (`ENTITY_KEYS`)
strictly (same start, end and label) or relaxed (same label, sharing a character).

Micro P/R/F1 come from the tp/fp/fn summed over the corpus; macro ones (as in the i2b2 script)
average the per-document precision and recall, macro F1 being their harmonic mean. Any ratio 0/0
is 0. Each top-level measure carries its report name under "measure" and its micro F1's
percentile bootstrap interval over documents under "f1_interval"; `f1_difference_interval`
compares two taggers on the same documents. `score_row` flattens the headline measures into
`<measure>_<part>` keys for result files and tables, named by `COLUMN_TITLES`."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from deidpool.corpus.document import Document, Span
from deidpool.corpus.errors import CorpusError, CorpusWarning
from deidpool.corpus.i2b2_official import is_hipaa, phi_tokens
from deidpool.corpus.tokenize import tokenize

Match = Callable[[Span, Span], bool]

# result key -> the measure's name in reports, in report order
MEASURES = {
    "token_official_hipaa": "Token HIPAA (i2b2 2014 official, primary)",
    "token_official_all": "Token all (i2b2 2014 official)",
    "token_hipaa": "Token HIPAA (project tokenizer)",
    "token_all": "Token all (project tokenizer)",
    "entity_strict": "Strict micro",
    "entity_relaxed": "Relaxed micro",
}
PRIMARY = "token_official_hipaa_f1"  # the headline number: the field's token HIPAA F1
RESAMPLES, LEVEL = 1000, 0.95  # of the bootstrap interval over documents

# The measures every result table reports (primary first), and the title of each flat key of `score_row`.
HEADLINE_MEASURES = ("token_official_hipaa", "token_hipaa", "entity_strict")
_TITLES = {"token_official_hipaa": ("token HIPAA", "official i2b2 2014 tokenization"),
           "token_official_all": ("token all-PHI", "official i2b2 2014 tokenization"),
           "token_hipaa": ("token HIPAA", "project tokenizer"), "token_all": ("token all-PHI", "project tokenizer"),
           "entity_strict": ("entity strict", "i2b2 types"), "entity_relaxed": ("entity relaxed", "i2b2 types")}
_PARTS = {"precision": "P", "recall": "R", "f1": "F1", "f1_interval": "F1 95% bootstrap CI over notes"}
COLUMN_TITLES = {f"{measure}_{part}": f"{name} {short} ({how})" for measure, (name, how) in _TITLES.items()
                 for part, short in _PARTS.items()}


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _f1(precision: float, recall: float) -> float:
    return _ratio(2 * precision * recall, precision + recall)


@dataclass(frozen=True)
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    def as_dict(self) -> dict:
        return {"precision": self.precision, "recall": self.recall, "f1": _f1(self.precision, self.recall),
                "tp": self.tp, "fp": self.fp, "fn": self.fn}


@dataclass(frozen=True)
class _Pair:
    text: str
    gold: tuple[Span, ...]
    pred: tuple[Span, ...]


def _by_id(documents: Iterable[Document], side: str) -> dict[str, Document]:
    found: dict[str, Document] = {}
    for document in documents:
        if document.id in found:
            raise CorpusError(f"duplicate {side} document id", where=f"document {document.id!r}")
        found[document.id] = document
    return found


def _pair_documents(gold_docs: Iterable[Document], pred_docs: Iterable[Document]) -> list[_Pair]:
    """Pair documents by id, warning about (and emptying) those present on one side only."""
    gold, pred = _by_id(gold_docs, "gold"), _by_id(pred_docs, "prediction")
    for missing, side, other in ((sorted(gold.keys() - pred.keys()), "prediction", "gold"),
                                 (sorted(pred.keys() - gold.keys()), "gold", "prediction")):
        if missing:
            warnings.warn(f"{len(missing)} {other} document(s) have no {side} document and are scored "
                          f"as having no {side} spans: {', '.join(missing)}", CorpusWarning, stacklevel=3)
    pairs = []
    for doc_id in sorted(gold.keys() | pred.keys()):
        g, p = gold.get(doc_id), pred.get(doc_id)
        if g is not None and p is not None and g.text != p.text:
            raise CorpusError("gold and prediction texts differ", where=f"document {doc_id!r}")
        pairs.append(_Pair((g or p).text, _distinct(g, "gold"), _distinct(p, "prediction")))
    return pairs


def _distinct(document: Document | None, side: str) -> tuple[Span, ...]:
    """The document's distinct spans in offset order, warning about overlapping ones."""
    if document is None:
        return ()
    groups: list[list[Span]] = []  # runs of spans each overlapping an earlier one of its run
    end = 0
    for span in sorted(document.spans):
        if groups and span.start < end:
            groups[-1].append(span)
        else:
            groups.append([span])
        end = max(end, span.end)
    overlapping = ["; ".join(f"{s.source_type} [{s.start}, {s.end})" for s in group)
                   for group in groups if len(group) > 1]
    if overlapping:
        warnings.warn(f"document {document.id!r}: overlapping {side} spans, scored as the official i2b2 2014 script "
                      f"scores them (each distinct span and each token once): {' | '.join(overlapping)}",
                      CorpusWarning, stacklevel=4)
    return tuple(sorted(set(document.spans)))


def _coverage(length: int, spans: Iterable[Span]) -> bytearray:
    covered = bytearray(length)
    for span in spans:
        covered[span.start:span.end] = b"\x01" * (span.end - span.start)
    return covered


def token_counts(text: str, gold: Iterable[Span], pred: Iterable[Span]) -> Counts:
    """Binary token-level counts over the PHI tokens of one text, on the project's tokens: those of
    `deidpool.corpus.tokenize.tokenize` over the whole text (letter runs, digit runs, single other
    non-space characters), a token being PHI on a side if it shares a character with one of that
    side's spans. Tokens that are non-PHI on both sides are never hits."""
    gold_cover, pred_cover = _coverage(len(text), gold), _coverage(len(text), pred)
    tp = fp = fn = 0
    for token in tokenize(text):
        in_gold, in_pred = any(gold_cover[token.start:token.end]), any(pred_cover[token.start:token.end])
        tp += in_gold and in_pred
        fp += in_pred and not in_gold
        fn += in_gold and not in_pred
    return Counts(tp, fp, fn)


def official_token_counts(text: str, gold: Iterable[Span], pred: Iterable[Span]) -> Counts:
    """Binary token-level counts over the official i2b2 2014 tokens of the spans of one text (tokens
    as `deidpool.corpus.i2b2_official` describes them; a token is PHI on a side if one of that
    side's spans has it among its tokens)."""
    gold_tokens, pred_tokens = phi_tokens(text, gold), phi_tokens(text, pred)
    return Counts(len(gold_tokens & pred_tokens), len(pred_tokens - gold_tokens), len(gold_tokens - pred_tokens))


def strict_match(label: Callable[[Span], str]) -> Match:
    return lambda g, p: (g.start, g.end, label(g)) == (p.start, p.end, label(p))


def relaxed_match(label: Callable[[Span], str]) -> Match:
    return lambda g, p: g.start < p.end and p.start < g.end and label(g) == label(p)


def entity_counts(gold: Iterable[Span], pred: Iterable[Span], matches: Match) -> Counts:
    """Entity-level counts, each gold and each predicted span matched at most once: predictions are
    taken in offset order and each takes the first (in offset order) still unmatched gold span it
    `matches` ([a, b) and [c, d) overlap iff a < d and c < b); tp is the number of matches, fp the
    unmatched predictions, fn the unmatched gold spans."""
    unmatched, predictions = sorted(gold), sorted(pred)
    tp = 0
    for p in predictions:
        hit = next((i for i, g in enumerate(unmatched) if matches(g, p)), None)
        if hit is not None:
            del unmatched[hit]
            tp += 1
    return Counts(tp, len(predictions) - tp, len(unmatched))


def micro_f1(per_document: Iterable[Counts]) -> float:
    """The F1 of the documents' summed counts (micro F1 over documents)."""
    return sum(per_document, Counts()).as_dict()["f1"]


def f1_interval(per_document: Sequence[Counts], resamples: int = RESAMPLES, level: float = LEVEL,
                seed: int = 0) -> tuple[float, float]:
    """The percentile bootstrap interval of the micro F1 over documents: `resamples` times, draw
    as many documents as there are with replacement and take the micro F1 of their summed
    counts; returns the (1 - level) / 2 and (1 + level) / 2 quantiles. (0, 0) without documents."""
    if not per_document:
        return 0.0, 0.0
    drawn = np.random.default_rng(seed).integers(len(per_document), size=(resamples, len(per_document)))
    return _quantiles(_resampled_f1(per_document, drawn), level)


def f1_difference_interval(pairs: Sequence[tuple[Sequence[Counts], Sequence[Counts]]], resamples: int = RESAMPLES,
                           level: float = LEVEL, seed: int = 0) -> tuple[float, float]:
    """The paired percentile bootstrap interval of the mean over `pairs` of micro F1(first) -
    micro F1(second): each resample draws the documents once, with replacement, and scores both
    sides of every pair on those same documents, so what the two taggers share (the notes'
    difficulty) cancels. Every sequence holds the counts of the same documents in the same order
    (`document_counts`); several pairs are e.g. one per seed."""
    documents = {len(side) for pair in pairs for side in pair}
    if len(documents) != 1 or 0 in documents:
        raise ValueError(f"every side must count the same documents, at least one (got {sorted(documents)})")
    count = documents.pop()
    drawn = np.random.default_rng(seed).integers(count, size=(resamples, count))
    differences = [_resampled_f1(first, drawn) - _resampled_f1(second, drawn) for first, second in pairs]
    return _quantiles(np.mean(differences, axis=0), level)


def _resampled_f1(per_document: Sequence[Counts], drawn: np.ndarray) -> np.ndarray:
    """The micro F1 of each row of document indices `drawn`."""
    counts = np.array([(c.tp, c.fp, c.fn) for c in per_document])
    tp, fp, fn = counts[drawn].sum(axis=1).T
    denominator = 2 * tp + fp + fn  # micro F1 = 2 tp / (2 tp + fp + fn), 0 where nothing is PHI
    return np.divide(2 * tp, denominator, out=np.zeros(len(drawn)), where=denominator > 0)


def _quantiles(values: np.ndarray, level: float) -> tuple[float, float]:
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _summary(per_document: Sequence[Counts]) -> dict:
    """Micro scores and counts with the micro F1's bootstrap interval, plus the document-averaged macro scores."""
    precision = _ratio(sum(c.precision for c in per_document), len(per_document))
    recall = _ratio(sum(c.recall for c in per_document), len(per_document))
    return {**sum(per_document, Counts()).as_dict(), "f1_interval": list(f1_interval(per_document)),
            "macro": {"precision": precision, "recall": recall, "f1": _f1(precision, recall)}}


def _breakdown(pairs: Sequence[_Pair], group: Callable[[Span], str], matches: Match) -> dict[str, dict]:
    """Counts restricted to the spans of each group (category or type) seen on either side."""
    groups = sorted({group(s) for pair in pairs for s in (*pair.gold, *pair.pred)})
    result = {}
    for name in groups:
        counts = (entity_counts([s for s in pair.gold if group(s) == name],
                                [s for s in pair.pred if group(s) == name], matches) for pair in pairs)
        result[name] = sum(counts, Counts()).as_dict()
    return result


_EVERY = lambda span: True  # noqa: E731
# token measure -> (counting function, the spans it keeps on both sides)
_TOKEN_MEASURES = {"token_official_hipaa": (official_token_counts, is_hipaa),
                   "token_official_all": (official_token_counts, _EVERY),
                   "token_hipaa": (token_counts, attrgetter("hipaa")),
                   "token_all": (token_counts, _EVERY)}
_ENTITY_MATCHES = {"entity_strict": strict_match, "entity_relaxed": relaxed_match}
ENTITY_KEYS = ("type", "category", "source_type")


def _pair_counts(pairs: Sequence[_Pair], measure: str, key: str) -> list[Counts]:
    if measure in _TOKEN_MEASURES:
        count, keep = _TOKEN_MEASURES[measure]
        return [count(p.text, filter(keep, p.gold), filter(keep, p.pred)) for p in pairs]
    match = _ENTITY_MATCHES[measure](attrgetter(key))
    return [entity_counts(p.gold, p.pred, match) for p in pairs]


def document_counts(gold_docs: Iterable[Document], pred_docs: Iterable[Document],
                    measure: str = "token_official_hipaa", key: str = "type") -> list[Counts]:
    """The counts of `measure` (a key of `MEASURES`; entity measures label spans by `key`) of
    every document, in document-id order: one side of `f1_difference_interval`."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; choose one of: {', '.join(MEASURES)}")
    return _pair_counts(_pair_documents(gold_docs, pred_docs), measure, key)


def evaluate_corpus(gold_docs: Iterable[Document], pred_docs: Iterable[Document], key: str = "type") -> dict:
    """All scores of `pred_docs` against `gold_docs`; entity labels are `Span.<key>`."""
    if key not in ENTITY_KEYS:
        raise ValueError(f"key must be one of {', '.join(ENTITY_KEYS)}, not {key!r}")
    pairs = _pair_documents(gold_docs, pred_docs)
    result = {name: {"measure": MEASURES[name], **_summary(_pair_counts(pairs, name, key))} for name in _TOKEN_MEASURES}
    for name, match in _ENTITY_MATCHES.items():
        result[name] = {"measure": MEASURES[name], **_summary(_pair_counts(pairs, name, key)),
                        "per_category": _breakdown(pairs, attrgetter("category"), match(attrgetter(key))),
                        "per_type": _breakdown(pairs, attrgetter("type"), match(attrgetter(key)))}
    return result


def score_row(result: dict, measures: Sequence[str] = HEADLINE_MEASURES) -> dict:
    """The P/R/F1 and F1 interval of `measures` in `result` (of `evaluate_corpus`) as one flat
    row, keyed `<measure>_<part>` (titles in COLUMN_TITLES), for result files and tables."""
    return {f"{measure}_{part}": result[measure][part] for measure in measures for part in _PARTS}


def format_score(value: float | Sequence[float]) -> str:
    """A table cell: a score to 4 places, an interval (low, high) as [low, high]."""
    if isinstance(value, (list, tuple)):
        return f"[{value[0]:.4f}, {value[1]:.4f}]"
    return f"{value:.4f}"


def format_report(result: dict) -> str:
    """An i2b2-style table: token and entity micro rows (primary first) with the F1's bootstrap
    interval, then strict rows per category."""
    rows = [(label, result[name]) for name, label in MEASURES.items()]
    rows += [(f"Strict {name}", scores) for name, scores in result["entity_strict"]["per_category"].items()]
    width = max(len("Measure"), *(len(name) for name, _ in rows))
    header = (f"{'Measure':<{width}}  {'Recall':>9}  {'Precision':>9}  {'F1':>9}  {'TP':>7}  {'FP':>7}  {'FN':>7}  "
              f"F1 {LEVEL:.0%} CI")
    lines = [header, "-" * len(header)]
    for name, s in rows:
        interval = format_score(s["f1_interval"]) if "f1_interval" in s else ""
        lines.append(f"{name:<{width}}  {s['recall']:>9.4f}  {s['precision']:>9.4f}  {s['f1']:>9.4f}  "
                     f"{s['tp']:>7}  {s['fp']:>7}  {s['fn']:>7}  {interval}".rstrip())
    lines.append(f"CI: {LEVEL:.0%} percentile bootstrap interval of the micro F1, the notes resampled with "
                 f"replacement {RESAMPLES} times.")
    return "\n".join(lines)
