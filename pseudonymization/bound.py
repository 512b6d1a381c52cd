"""The re-identification bound of pseudonymize-then-represent at export (docs/method.md, "Beyond
the paper"; docs/privacy.md): how well the best possible attacker recovers a PHI token from its
surrogate.

Every gold PHI token o becomes a draw s from its candidates C(o). The worst case is assumed: the
attacker recovers s exactly from the representation and knows N, the embeddings, the number rules
and the token's category. Its best guess is the Bayes decision under its prior over possible
originals, one of largest prior among R(s) = {o' : s in C(o')}, ties split uniformly:

    success(o) = 1/|C(o)| * sum over s in C(o) of [pi(o) = max pi(R(s))] / #argmax pi(R(s))

Three priors (`PRIORS`): "uniform"; "frequency" (`wordfreq`, see `_Frequency`); and "empirical",
the export's own PHI of the token's category and casing shape, weighed by the exact posterior
pi(o') / |C(o')|: no attacker that learns only a token's surrogate, category and casing does
better on this export's tokens on average.

The possible originals are restricted (`token_success`), which only raises each original's
success, so the bound stays conservative. Under "surrogates" s does not depend on o, only on its
category and shape, so the attacker learns only the class (`_surrogate_success`). Tokens with a
single candidate (punctuation, anything when N = 1, a kept function word) are exported as they
are: counted as not hidden and left out of the success statistics. The report never names a
token. Neighbour tables and word frequencies are cached, and what no export changes is kept in
memory for the next one."""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from importlib.metadata import version

import numpy as np
from wordfreq import word_frequency

from deidpool.pseudonymization.pseudonymize import (
    NumberCandidates,
    Pseudonymizer,
    number_block,
    number_candidates,
    same_casing,
)
from deidpool.pseudonymization.schemes import PRIORS
from deidpool.pseudonymization.surrogates import (
    generator_kind,
    pattern_size,
    pattern_tokens,
    token_kind,
    word_distribution,
)
from deidpool.representer.embeddings import Embeddings

FREQUENCY_FLOOR = 1e-12  # the frequency of a word wordfreq does not know (its lists stop at 1e-8)
ENUMERATED_WIDTH = 4  # numbers up to this many digits are enumerated one by one


def token_success(tokens: Iterable[tuple], pseudonymizer: Pseudonymizer, *,
                  language: str = "en") -> dict[tuple, dict[str, float] | None]:
    """The best attacker's success on each distinct (word, category) token (under "surrogates"
    (word, category, shape)), by prior name (None for a token that is not hidden). `tokens` come
    as often as they occur (or as a Counter of them): the empirical prior counts them.

    Possible originals under the embedding schemes (restrictions that only raise a success):
    - words: the rows of the neighbour vocabulary (the first `embeddings.neighbour_vocab`; their
      candidates from `Pseudonymizer.candidate_table`, only themselves when not replaceable), plus
      the export's own PHI words outside it (the word and its N - 1 neighbours; for a word without
      a vector of its own, those of its category's stand-in, so one such word in two categories is
      two originals), not the other rows of the vocabulary. A surrogate is identified with the
      vocabulary entry it names (lower-cased in GloVe); its casing follows the original, which
      leaks the original's casing shape, not its word.
    - numbers (ASCII digits): every number of the token's digit count in its category (AGE has its
      own ranges), enumerated up to `ENUMERATED_WIDTH` digits and in blocks of equal candidate
      range and frequency beyond.
    - the attacker is told whether the original was a number or a word."""
    occurrences = Counter(tokens)
    if pseudonymizer.scheme == "surrogates":
        return _surrogate_success(occurrences, pseudonymizer, _Frequency(language))
    candidates = {token: pseudonymizer.candidates(*token) for token in occurrences}
    hidden = {token: found for token, found in candidates.items() if len(found) > 1}
    numbers = {token: found for token, found in hidden.items() if isinstance(found, NumberCandidates)}
    words = {token: found for token, found in hidden.items() if token not in numbers}
    frequency = _Frequency(language)
    success = {**_word_success(words, occurrences, pseudonymizer, frequency),
               **_number_success(numbers, occurrences, frequency, pseudonymizer.scheme)}
    return {token: success.get(token) for token in candidates}


def reidentification_bound(tokens: Iterable[tuple], pseudonymizer: Pseudonymizer, *,
                           language: str = "en") -> dict:
    """The bound for the gold PHI tokens of an export, given as `Pseudonymizer.phi_tokens`
    ((word, category) pairs but under "surrogates"), with the frequency prior in `language`.

    Returns a JSON-ready dict: {"scheme": its scheme, "neighbours": N, "language": language, "priors": PRIORS,
    "categories": {category: summary}, "overall": summary}, each summary being
    {"occurrences", "hidden", "not_hidden", "mean_success": {prior: mean over hidden
    occurrences}, "worst_success": {prior: largest success of a hidden occurrence},
    "one_over_n"} (success values None without hidden occurrences).

    What each figure depends on, which decides where a contribution carries it (the readable
    header holds only what the settings, tags and token counts fix; the rest is sealed):
    - "scheme", "neighbours", "language", "priors", "one_over_n": the export's settings alone;
    - "categories" and "occurrences": the tags, but an export also bounds the tokens its safety
      net flags, whose number depends on the notes' text;
    - "hidden", "not_hidden": under "surrogates" the shape (punctuation, a kept function word,
      whose shape is the word itself); under the embedding schemes whether the original word or
      number has more than one candidate, so the original;
    - "mean_success", "worst_success", every prior: the originals. Uniform: the neighbour sets of
      the original (embedding schemes) or, for a word under "surrogates", its draw probability
      (fixed by the shape for numbers and other tokens only); frequency: the original's word
      frequency; empirical: how often each original repeats (the same date three times against
      three dates of the same shapes).
    An export therefore seals the whole report (`deidpool.client.export`); scheme and N are also
    header fields of their own.
    """
    occurrences = Counter(tokens)
    success = token_success(occurrences, pseudonymizer, language=language)
    by_category: dict[str, list] = {}
    for token, count in occurrences.items():
        by_category.setdefault(token[1], []).extend([success[token]] * count)
    n = pseudonymizer.neighbours
    return {"scheme": pseudonymizer.scheme, "neighbours": n, "language": language, "priors": list(PRIORS),
            "categories": {category: _summary(found, n) for category, found in sorted(by_category.items())},
            "overall": _summary([s for found in by_category.values() for s in found], n)}


def format_bound(report: dict) -> str:
    """A Markdown table of `reidentification_bound`'s report, one row per category and overall,
    with the priors the report has (a report made before the empirical prior lacks it; one made
    before "surrogates" names no scheme)."""
    priors = report["priors"]
    head = ["category", "tokens", "hidden", "not hidden", *(f"{what} {prior}" for prior in priors
                                                           for what in ("mean", "worst"))]
    scheme = ("surrogates (N does not apply)" if report.get("scheme") == "surrogates"
              else f"N = {report['neighbours']} (1/N = {report['overall']['one_over_n']:.4f})")
    lines = [f"Re-identification bound, {scheme}, success of the best attacker on hidden tokens:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, summary in [*report["categories"].items(), ("overall", report["overall"])]:
        cells = [name, summary["occurrences"], summary["hidden"], summary["not_hidden"],
                 *(_cell(summary[key][prior]) for prior in priors for key in ("mean_success", "worst_success"))]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _summary(successes: list[dict | None], n: int) -> dict:
    found = [s for s in successes if s is not None]
    return {"occurrences": len(successes), "hidden": len(found), "not_hidden": len(successes) - len(found),
            "mean_success": {p: float(np.mean([s[p] for s in found])) if found else None for p in PRIORS},
            "worst_success": {p: max(s[p] for s in found) if found else None for p in PRIORS},
            "one_over_n": 1 / n}


class _Frequency:
    """wordfreq frequencies in one language, each looked up once; a word wordfreq does not know gets
    `FREQUENCY_FLOOR`, so unknown words tie below known ones and share guesses."""

    def __init__(self, language: str):
        self.language = language
        self._cache: dict[str, float] = {}

    def __call__(self, word: str) -> float:
        if word not in self._cache:
            self._cache[word] = word_frequency(_looked_up(word), self.language) or FREQUENCY_FLOOR
        return self._cache[word]


def _looked_up(word: str) -> str:
    """The word whose wordfreq frequency stands for `word`: "01" for an all-zero "00", for which
    wordfreq returns the total of every number of that width."""
    return word[:-1] + "1" if len(word) > 1 and not word.strip("0") else word


def _priors(frequencies: Sequence[float]) -> dict[str, np.ndarray]:
    frequency = np.asarray(frequencies, dtype=float)
    return {"uniform": np.ones(len(frequency)), "frequency": frequency}


def _bayes(orig: np.ndarray, surr: np.ndarray, prior: np.ndarray, size: int,
           weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each of `size` surrogates, over the (original, surrogate) pairs given: the largest
    prior of an original it may come from, and how many originals reach it (an original
    standing for `weight` originals of equal prior counts as that many)."""
    pair_prior = prior[orig]
    best = np.full(size, -np.inf)
    np.maximum.at(best, surr, pair_prior)
    top = pair_prior == best[surr]
    ties = np.bincount(surr[top], weights=None if weight is None else weight[orig[top]], minlength=size)
    return best, ties


def vocabulary_entry(word: str, embeddings: Embeddings) -> str:
    """The vocabulary entry a candidate names: itself in a cased vocabulary, else lower-cased."""
    return word if not embeddings.lowercase and word in embeddings.kv.key_to_index else word.lower()


def _word_success(words: dict[tuple[str, str], Sequence[str]], occurrences: Counter, pseudonymizer: Pseudonymizer,
                  frequency: _Frequency) -> dict[tuple[str, str], dict[str, float]]:
    """Success of each hidden word token, against the neighbour vocabulary's rows and the
    export's own words as possible originals (the empirical prior: the export's words of the
    token's category and casing shape). Only the surrogates the export's words draw from
    matter, so only the (original, surrogate) pairs that end in one are formed."""
    if not words:
        return {}
    embeddings = pseudonymizer.embeddings
    table = pseudonymizer.candidate_table()
    vocabulary = embeddings.kv.index_to_key[:len(table)]
    ids = {word: row for row, word in enumerate(vocabulary)}  # then the export's words outside it
    originals = {}  # token -> original id
    own = {}  # original id -> candidate ids, for the export's words
    for token, found in words.items():
        entry = vocabulary_entry(token[0], embeddings)
        if not (embeddings.is_known(token[0]) or embeddings.embeds_unknown_words):
            entry = (entry, token[1])  # without a vector: its candidates are its category's
        original = originals[token] = ids.setdefault(entry, len(ids))
        if original not in own:
            own[original] = np.array([ids.setdefault(vocabulary_entry(w, embeddings), len(ids)) for w in found],
                                     dtype=np.int32)
    drawn = np.zeros(len(ids) + 1, dtype=bool)  # the surrogates that matter; the table's -1 hits the last entry
    drawn[np.concatenate(list(own.values()))] = True
    rows, columns = np.divmod(np.flatnonzero(drawn[table]), table.shape[1])
    valid = (columns == 0) | pseudonymizer.replaceable_rows()[rows]  # not replaced: only itself
    valid &= ~pseudonymizer.number_rows()[rows]  # a number is no word original (N > 1 here: it is hidden)
    valid &= ~np.isin(rows, list(own))  # the export's words: as drawn
    orig = np.concatenate([rows[valid], *(np.full(len(found), o) for o, found in own.items())])
    surr = np.concatenate([table[rows[valid], columns[valid]], *own.values()])
    rows_frequency = embeddings.kept(("frequency", frequency.language, len(vocabulary)),
                                     lambda: _vocabulary_frequencies(embeddings, vocabulary, frequency.language))
    outside = [frequency(entry if isinstance(entry, str) else entry[0]) for entry in list(ids)[len(vocabulary):]]
    result: dict[tuple[str, str], dict[str, float]] = {token: {} for token in words}
    for name, prior in _priors(np.concatenate([rows_frequency, outside])).items():
        best, ties = _bayes(orig, surr, prior, len(ids))
        for token, original in originals.items():
            result[token][name] = _success(prior, best, ties, original, own[original])
    for tokens in _classes(words, lambda token: same_casing("ab", token[0])):  # the casing shape it shows
        counts = Counter()
        for token in tokens:
            counts[originals[token]] += occurrences[token]
        members, sizes = list(counts), [len(own[original]) for original in counts]
        prior = np.zeros(len(ids))
        prior[members] = np.divide(list(counts.values()), sizes)  # the posterior, up to a factor
        best, ties = _bayes(np.repeat(members, sizes), np.concatenate([own[o] for o in members]), prior, len(ids))
        for token in tokens:
            result[token]["empirical"] = _success(prior, best, ties, originals[token], own[originals[token]])
    return result


def _success(prior: np.ndarray, best: np.ndarray, ties: np.ndarray, original: int, found: np.ndarray) -> float:
    """The success of `original`, drawing uniformly from the surrogates `found`, given `_bayes`'s answer."""
    return float(np.mean((prior[original] == best[found]) / ties[found]))


def _classes(tokens: Iterable[tuple[str, str]], shape: Callable[[tuple[str, str]], object]) -> list[list]:
    """The tokens by category and `shape`: the classes of the empirical prior."""
    classes = defaultdict(list)
    for token in tokens:
        classes[token[1], shape(token)].append(token)
    return list(classes.values())


def _vocabulary_frequencies(embeddings: Embeddings, vocabulary: Sequence[str], language: str) -> np.ndarray:
    """`_Frequency`'s answer for each word of `vocabulary` (rows of the embeddings). wordfreq's
    answers (about 10 µs a word, a second for GloVe's neighbour vocabulary) are cached by
    `Embeddings.cached_array` under the hash of the looked-up words, the language and
    wordfreq's version."""
    looked_up = [_looked_up(word) for word in vocabulary]
    digest = hashlib.sha256(json.dumps(looked_up).encode()).hexdigest()[:16]
    found = embeddings.cached_array(f"wordfreq{version('wordfreq')}-{language}-{digest}",
                                    lambda: np.array([word_frequency(w, language) for w in looked_up], dtype=float))
    return np.where(found == 0, FREQUENCY_FLOOR, found)


def _number_success(numbers: dict[tuple[str, str], NumberCandidates], occurrences: Counter, frequency: _Frequency,
                    scheme: str) -> dict[tuple[str, str], dict[str, float]]:
    """Success of each hidden number token, against every number of its width and category
    (the empirical prior: the export's numbers of its width and category)."""
    candidates = number_block if scheme == "groups" else number_candidates
    result = {}
    for token, found in numbers.items():
        bounds, bayes = _number_bayes(found.width, token[1], frequency.language, ENUMERATED_WIDTH, candidates)
        own = {"uniform": 1.0, "frequency": frequency(token[0])}
        result[token] = {name: _segment_success(bounds, best, ties, found, own[name])
                         for name, (best, ties) in bayes.items()}
    for tokens in _classes(numbers, lambda token: len(token[0])):
        bounds, orig, surr = _segments([numbers[token].values for token in tokens])
        prior = np.array([occurrences[token] / len(numbers[token]) for token in tokens])  # the posterior's
        best, ties = _bayes(orig, surr, prior, len(bounds))
        for token, own in zip(tokens, prior):
            result[token]["empirical"] = _segment_success(bounds, best, ties, numbers[token], own)
    return result


def _segment_success(bounds: np.ndarray, best: np.ndarray, ties: np.ndarray, found: NumberCandidates,
                     own: float) -> float:
    """The success of a number of prior `own`, drawing uniformly from `found`, given `_bayes`'s
    answer over the surrogate segments [bounds[i], bounds[i + 1])."""
    segments = slice(*np.searchsorted(bounds, [found.values.start, found.values.stop]))
    lengths = np.diff(bounds)[segments]
    return float(np.sum(lengths * (own == best[segments]) / ties[segments]) / len(found))


@lru_cache(maxsize=None)
def _number_bayes(width: int, category: str, language: str, enumerated_width: int,
                  candidates: Callable[[str, str], NumberCandidates]
                  ) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The surrogate segments of the numbers of `width` digits in `category` (`_segments`) and,
    by prior, `_bayes` over them; the same for every export, so kept."""
    blocks = number_blocks(width, category, _Frequency(language), enumerated_width, candidates)
    counts, ranges, frequencies = zip(*blocks)
    bounds, orig, surr = _segments(ranges)
    return bounds, {name: _bayes(orig, surr, prior, len(bounds), np.array(counts, dtype=float))
                    for name, prior in _priors(frequencies).items()}


def _segments(ranges: Sequence[range]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The segments [bounds[i], bounds[i + 1]) that the value `ranges` cut, and the pairs
    (range, segment) of every segment each range covers."""
    starts, stops = np.array([r.start for r in ranges]), np.array([r.stop for r in ranges])
    bounds = np.unique(np.concatenate([starts, stops]))
    first, last = np.searchsorted(bounds, starts), np.searchsorted(bounds, stops)
    covered = last - first  # range i covers segments first[i] .. last[i] - 1
    orig = np.repeat(np.arange(len(ranges)), covered)
    surr = np.repeat(first - np.cumsum(covered) + covered, covered) + np.arange(covered.sum())
    return bounds, orig, surr


def number_blocks(width: int, category: str, frequency: _Frequency, enumerated_width: int,
                   candidates: Callable[[str, str], NumberCandidates]) -> list[tuple[int, range, float]]:
    """The possible originals of `width` digits in `category` in blocks of equal candidate
    range and frequency: (how many, candidate values, frequency of each), one block per
    number up to `enumerated_width` digits."""
    if width <= enumerated_width:
        words = (str(value).zfill(width) for value in range(10 ** width))
        return [(1, candidates(w, category).values, frequency(w)) for w in words]
    # Wider, a number's candidates and frequency depend only on its first digit and on where
    # its value lies among the ranges of `number_candidates` (checked at both ends of a block).
    top = 10 ** width
    edges = sorted({90, 120, top, *range(0, top, top // 10)})
    blocks = []
    for low, high in zip(edges, edges[1:]):
        ends = [str(low).zfill(width), str(high - 1).zfill(width)]
        block, last = [(candidates(end, category).values, frequency(end)) for end in ends]
        if block != last:
            raise ValueError(f"numbers {ends[0]}..{ends[1]} ({category}) differ in candidates or frequency")
        blocks.append((high - low, *block))
    return blocks


def _surrogate_success(occurrences: Counter, pseudonymizer: Pseudonymizer,
                       frequency: _Frequency) -> dict[tuple, dict[str, float] | None]:
    """Success of each (word, category, shape) token under "surrogates", class by class; None for a
    token exported as it is (punctuation: shape None; a kept function word).

    A surrogate depends only on its token's category and shape (`token_shape`), except that s = o
    is drawn again. Within a class s is a draw from one distribution D (`word_distribution`;
    uniform over a number's shape set or a pattern's tokens) conditioned on s != o, so the attacker
    learns only the class and that o is not s, and guesses the original of largest prior in the
    class other than s (`_excluded_success`). The redraw also makes s a little likelier under an o
    of large D(o), and a span of words laid end to end is one draw: both are left out of the
    ranking (they move a success by at most the largest D of its class). Possible originals: for
    words the neighbour vocabulary's tokens of two letters or more, case-folded, and the export's
    own; for numbers every number of the shape set (under the uniform prior a success of
    1 / (the set's size - 1)); for other tokens every token of the pattern (under the frequency
    prior, in a pattern of more than 10 ** ENUMERATED_WIDTH tokens all but the export's own at
    `FREQUENCY_FLOOR`). N plays no part."""
    result: dict[tuple, dict[str, float] | None] = {token: None for token in occurrences}
    hidden = (token for token in occurrences if token[2] is not None and token[2][0] != "kept")
    for tokens in _classes(hidden, lambda token: token[2]):
        counts = Counter()
        for token in tokens:
            counts[token[0].casefold()] += occurrences[token]
        category, shape = tokens[0][1], tokens[0][2]
        own = list(counts)
        if shape[0] == "word":
            entries = _word_entries(own, category, shape[1], shape[3], pseudonymizer, frequency)
        elif shape[0] == "number":
            entries = _number_entries(own, NumberCandidates(range(shape[2], shape[3]), shape[1]), frequency)
        else:
            entries = _pattern_entries(own, shape[1], frequency)
        mass = entries["mass"]
        found = {prior: _excluded_success(entries[prior], mass, entries["count"])[:len(own)]
                 for prior in ("uniform", "frequency")}
        found["empirical"] = _excluded_success(np.array(list(counts.values()), dtype=float), mass[:len(own)],
                                               np.ones(len(own)))
        for token in tokens:
            i = own.index(token[0].casefold())
            result[token] = {prior: float(found[prior][i]) for prior in PRIORS}
    return result


def _excluded_success(prior: np.ndarray, mass: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The success of each entry's originals (each of `count` originals of prior `prior` and
    draw probability `mass`) against the attacker who, seeing the surrogate s, guesses uniformly
    among the originals of largest prior other than s: with t originals at the top and D(T) their
    draw probability, a top original's success is ((1 - D(T)) / t + (D(T) - D(o)) / (t - 1)) /
    (1 - D(o)) (1 when t = 1), a second-tier original's D(o1) / (1 - D(o)) / (its tier's size)
    when t = 1, and 0 otherwise."""
    top = prior == prior.max()
    size = count[top].sum()
    success = np.zeros(len(prior))
    if size == 1:
        success[top] = 1.0
        below = ~top
        if below.any():
            second = below & (prior == prior[below].max())
            success[second] = mass[top][0] / (1 - mass[second]) / count[second].sum()
        return success
    top_mass = min(float(np.sum(count[top] * mass[top])), 1.0)
    success[top] = ((1 - top_mass) / size + (top_mass - mass[top]) / (size - 1)) / (1 - mass[top])
    return success


def _word_entries(own: list[str], category: str, index: int, count: int, pseudonymizer: Pseudonymizer,
                  frequency: _Frequency) -> dict[str, np.ndarray]:
    """The possible originals of a word class as entries of one original each: `own` (the
    export's words of the class, case-folded) first, then the vocabulary's other words; their
    priors, counts and draw probabilities."""
    words, frequencies, index_of = _vocabulary_words(pseudonymizer.embeddings, frequency)
    outside = [word for word in own if word not in index_of]
    extra = {word: len(words) + i for i, word in enumerate(outside)}

    def row(word: str) -> int | None:
        return index_of.get(word, extra.get(word))

    mass = np.zeros(len(words) + len(outside))
    for word, probability in word_distribution(pseudonymizer.language, generator_kind(category), index, count).items():
        if row(word) is not None:
            mass[row(word)] = probability
    mine = np.array([row(word) for word in own], dtype=np.int64)
    others = np.ones(len(mass), bool)
    others[mine] = False  # a mask, not np.setdiff1d: that sorts the whole vocabulary for every class
    order = np.concatenate([mine, np.flatnonzero(others)])
    prior = np.concatenate([frequencies, [frequency(word) for word in outside]])
    return {"uniform": np.ones(len(order)), "frequency": prior[order], "mass": mass[order],
            "count": np.ones(len(order))}


def _vocabulary_words(embeddings: Embeddings, frequency: _Frequency) -> tuple[list[str], np.ndarray, dict[str, int]]:
    """The case-folded words (two letters or more) of the neighbour vocabulary, their
    frequencies (the largest of a word's rows) and their positions; kept with the embeddings."""
    def build():
        vocabulary = embeddings.kv.index_to_key[:embeddings.neighbour_rows]
        rows_frequency = embeddings.kept(("frequency", frequency.language, len(vocabulary)),
                                         lambda: _vocabulary_frequencies(embeddings, vocabulary, frequency.language))
        best: dict[str, float] = {}
        for word, found in zip(vocabulary, rows_frequency):
            if token_kind(word) == "word":
                key = word.casefold()
                best[key] = max(best.get(key, 0.0), float(found))
        return list(best), np.array(list(best.values())), {word: i for i, word in enumerate(best)}

    return embeddings.kept(("surrogate originals", frequency.language, embeddings.neighbour_rows), build)


def _number_entries(own: list[str], numbers: NumberCandidates, frequency: _Frequency) -> dict[str, np.ndarray]:
    """The possible originals of a number class: `own` (the export's numbers) one by one, then
    the other numbers of the class's shape set `numbers` (`number_shape`, also what its surrogates
    are drawn from) in runs of one frequency (each number up to ENUMERATED_WIDTH digits; beyond,
    the numbers of one first digit)."""
    width, values = numbers.width, numbers.values
    step = 1 if width <= ENUMERATED_WIDTH else 10 ** (width - 1)
    edges = sorted({values.start, values.stop, *range((values.start // step + 1) * step, values.stop, step)})
    taken = sorted(int(word) for word in own)
    runs = [(low, high) for low, high in zip(edges, edges[1:])]
    count = [high - low - (bisect_left(taken, high) - bisect_left(taken, low)) for low, high in runs]
    prior = [frequency(str(low).zfill(width)) for low, _ in runs]
    kept = [i for i, n in enumerate(count) if n > 0]
    return {"uniform": np.ones(len(own) + len(kept)),
            "frequency": np.array([*map(frequency, own), *(prior[i] for i in kept)]),
            "mass": np.full(len(own) + len(kept), 1 / len(numbers)),
            "count": np.array([1] * len(own) + [count[i] for i in kept], dtype=float)}


def _pattern_entries(own: list[str], pattern: str, frequency: _Frequency) -> dict[str, np.ndarray]:
    """The possible originals of a class of other tokens: `own`, then the pattern's other
    tokens, one by one when it has at most 10 ** ENUMERATED_WIDTH, else as one entry (at
    `FREQUENCY_FLOOR` under the frequency prior)."""
    size = pattern_size(pattern)
    if size <= 10 ** ENUMERATED_WIDTH:
        others = [token for token in pattern_tokens(pattern) if token.casefold() not in own]
        rest, rest_frequency, count = others, [frequency(token) for token in others], [1.0] * len(others)
    else:
        rest_frequency, count = [FREQUENCY_FLOOR], [float(size - len(own))]
        rest = [None]
    return {"uniform": np.ones(len(own) + len(rest)), "frequency": np.array([*map(frequency, own), *rest_frequency]),
            "mass": np.full(len(own) + len(rest), 1 / size), "count": np.array([1.0] * len(own) + count)}
