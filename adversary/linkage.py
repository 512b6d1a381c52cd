"""Linkage of the shuffled sentences of one export back to their documents: how well an attacker
holding every sentence of an export can tell which belong to one document from their PHI
surrogates.

The export shuffles sentences across its documents (`deidpool.client.shuffle`) and keeps no
document id, so only content links them. The attacker sees, the worst case for us, every PHI
token's surrogate and category, numbers as their exact string, but not tokens the representer
receives as a zero vector (`seen_phi`).

The score of two tokens of one category is the likelihood ratio of "drawn for the same original"
against "drawn for two independent originals", with C(o) the candidates of original o
(`Pseudonymizer.candidates`, drawn uniformly) and pi a prior over originals:

    LR(s, t) = P(s, t | same) / (P(s) P(t)) = sum over o of post_s(o) post_t(o) / pi(o),
    post_s(o) = pi(o) [s in C(o)] / |C(o)| / P(s).

pi is the export's own distribution of originals, estimated from its surrogates by
expectation-maximization (`EM_STEPS`, from a uniform start), so a rare original weighs more than a
common one. The score of two sentences is the sum of the LRs of their token
pairs of one category: for a small prior chance that a pair shares an original, the posterior odds
that at least one does are proportional to that sum.

`linkage_metrics` scores the pairs of sentences that hold PHI."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from sklearn.metrics import roc_auc_score

from deidpool.pseudonymization.bound import ENUMERATED_WIDTH, number_blocks, vocabulary_entry
from deidpool.pseudonymization.pseudonymize import Pseudonymizer, number_block, number_candidates, tag_category
from deidpool.representer.embeddings import Embeddings

EM_STEPS = 20  # expectation-maximization steps estimating the prior over originals
_NUMBERS = 1 << 40  # number originals are coded from here: _NUMBERS + (width << 30) + block

SeenToken = tuple[str, str]  # (surrogate as seen, category)


def seen_phi(words: Sequence[str], tags: Sequence[str], embeddings: Embeddings) -> list[SeenToken]:
    """The PHI tokens of one exported sentence as the attacker sees them: (word, category) of
    each token tagged PHI whose word the representer receives as a non-zero vector."""
    return [(word, tag_category(tag)) for word, tag in zip(words, tags)
            if tag != "O" and (embeddings.is_known(word) or embeddings.embeds_unknown_words)]


def pair_scores(sentences: Sequence[Sequence[SeenToken]], embeddings: Embeddings,
                pseudonymizer: Pseudonymizer | None = None, steps: int = EM_STEPS) -> np.ndarray:
    """(n, n) float linkage scores of n exported sentences, each given by its seen tokens, whose
    surrogates were drawn by `pseudonymizer` (None: the tokens are the originals, raw text): the
    sum of their token pairs' likelihood ratios (module docstring), 0 on the diagonal. Words and
    numbers are possible originals of their own kind only, as in `deidpool.pseudonymization.bound`.
    Raw text: LR = 1 / (share of the category's tokens that are this word), 0 between different
    words; groups: 1 / (share drawn from this group) within a shared group, 0 otherwise;
    neighbours: the originals whose N neighbours hold both surrogates carry the score."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    keys = [[(_identity(word, embeddings), category) for word, category in tokens] for tokens in sentences]
    raw = pseudonymizer is None or pseudonymizer.neighbours == 1
    originals, multiplicity = _raw_originals(keys) if raw else _originals(keys, pseudonymizer)
    scores = np.zeros((len(sentences), len(sentences)))
    for category in sorted({category for tokens in keys for _, category in tokens}):
        found = [(i, key) for i, tokens in enumerate(keys) for key in tokens if key[1] == category]
        owner = np.array([i for i, _ in found])
        likelihood, weight = _likelihood_matrix([originals[key] for _, key in found], multiplicity)
        prior, posterior = _expectation_maximization(likelihood, weight, steps)
        ratio = (posterior @ sparse.diags(1 / prior) @ posterior.T).toarray()
        rows, starts = np.unique(owner, return_index=True)
        scores[np.ix_(rows, rows)] += np.add.reduceat(np.add.reduceat(ratio, starts, axis=0), starts, axis=1)
    np.fill_diagonal(scores, 0)
    return scores


def linkage_metrics(scores: np.ndarray, units: Sequence, seed: int = 0) -> dict:
    """How well `scores` (from `pair_scores`) link sentences of one unit (`units[i]`: the
    document of sentence i), over the n sentences given:

    - "auc": ROC AUC of the score over all pairs, same unit = positive (None without both kinds);
    - "precision_at_1": over the sentences with another sentence of their unit, the share whose
      best-scoring partner is of their unit, ties counted as a uniform pick among the best;
      "chance_at_1": the same for a uniform pick among all others; "sentences_at_1": how many;
    - "reassembled": over the units of two or more sentences ("units"), the share whose
      sentences are exactly one connected component when every sentence is linked to its best
      partner (ties broken at random with `seed`) where their score is above 1 (the score of one
      token pair that says nothing); "pair_precision": the share of sentence pairs within one
      component that are of one unit (None without such pairs).
    """
    units = np.asarray(units)
    n = len(units)
    same = units[:, None] == units[None, :]
    others = ~np.eye(n, dtype=bool)
    upper = np.triu_indices(n, 1)
    labels = same[upper]
    auc = float(roc_auc_score(labels, scores[upper])) if 0 < labels.sum() < len(labels) else None
    best = np.where(others, scores, -np.inf).max(axis=1, initial=-np.inf)
    tied = others & (scores == best[:, None])
    partnered = (same & others).any(axis=1)
    hit = (tied & same).sum(axis=1) / np.maximum(tied.sum(axis=1), 1)
    chance = (same & others).sum(axis=1) / max(n - 1, 1)
    rng = np.random.default_rng(seed)
    linked = np.flatnonzero(best > 1)
    partner = [rng.choice(np.flatnonzero(tied[i])) for i in linked]
    graph = sparse.coo_matrix((np.ones(len(linked)), (linked, partner)), shape=(n, n))
    _, component = connected_components(graph, directed=False)
    sizes = np.bincount(component)
    names, counts = np.unique(units, return_counts=True)
    whole = [len(set(component[units == name])) == 1 and sizes[component[units == name][0]] == count
             for name, count in zip(names, counts) if count > 1]
    together = (component[:, None] == component[None, :])[upper]
    return {"auc": auc, "sentences": n,
            "precision_at_1": float(hit[partnered].mean()) if partnered.any() else None,
            "chance_at_1": float(chance[partnered].mean()) if partnered.any() else None,
            "sentences_at_1": int(partnered.sum()),
            "reassembled": float(np.mean(whole)) if whole else None, "units": len(whole),
            "pair_precision": float(labels[together].mean()) if together.any() else None}


def _identity(word: str, embeddings: Embeddings) -> str:
    """What identifies a seen token: a number's digits, else the vocabulary entry it names."""
    return word if word.isascii() and word.isdigit() else vocabulary_entry(word, embeddings)


def _raw_originals(keys: list[list[SeenToken]]) -> tuple[dict, dict]:
    """Raw text: every token is its own original (one code per distinct identity)."""
    codes = {identity: code for code, identity in enumerate(dict.fromkeys(k[0] for tokens in keys for k in tokens))}
    return {key: (np.array([codes[key[0]]]), np.ones(1)) for tokens in keys for key in tokens}, {}


def _originals(keys: list[list[SeenToken]], pseudonymizer: Pseudonymizer) -> tuple[dict, dict]:
    """For each distinct seen token: (codes of the originals that can produce it, P(token |
    original)); and the multiplicity of the codes that stand for several originals (number
    blocks of `deidpool.pseudonymization.bound`)."""
    distinct = dict.fromkeys(key for tokens in keys for key in tokens)
    numbers = [key for key in distinct if key[0].isascii() and key[0].isdigit()]
    words = {key[0] for key in distinct} - {key[0] for key in numbers}
    found = _word_originals(words, pseudonymizer)
    originals, multiplicity = {key: found[key[0]] for key in distinct if key[0] in found}, {}
    for key in numbers:
        width, value = len(key[0]), int(key[0])
        starts, stops, counts = _number_originals(width, key[1], pseudonymizer.scheme)
        hits = np.flatnonzero((starts <= value) & (value < stops))
        codes = _NUMBERS + (width << 30) + hits
        originals[key] = (codes, 1 / (stops[hits] - starts[hits]))
        multiplicity.update(zip(codes.tolist(), counts[hits].tolist()))
    return originals, multiplicity


def _word_originals(words: set[str], pseudonymizer: Pseudonymizer) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(codes, likelihoods) of the possible word originals of each seen word (a vocabulary
    entry): the neighbour vocabulary's rows whose candidates hold it (only itself for a row that
    is not replaced, none for a number row, as in `deidpool.pseudonymization.bound`), and each seen word outside
    the neighbour vocabulary, which can only be its own original (coded after the rows)."""
    table = pseudonymizer.candidate_table()
    index = pseudonymizer.embeddings.kv.key_to_index
    inside = {word: index[word] for word in words if index.get(word, len(table)) < len(table)}
    ids = {**inside, **{word: code for code, word in enumerate(sorted(words - set(inside)), start=len(table))}}
    drawn = np.zeros(len(table) + 1, dtype=bool)  # the table's -1 hits the last entry
    drawn[list(inside.values())] = True
    rows, columns = np.divmod(np.flatnonzero(drawn[table]), table.shape[1])
    replaced = pseudonymizer.replaceable_rows() & ~pseudonymizer.number_rows()
    valid = ((columns == 0) | replaced[rows]) & ~pseudonymizer.number_rows()[rows]
    rows, surrogates = rows[valid], table[rows[valid], columns[valid]]
    distinct, position = np.unique(rows, return_inverse=True)
    sizes = np.where(replaced[distinct], (table[distinct] >= 0).sum(axis=1), 1)[position]
    pairs = [(rows, surrogates, 1 / sizes)]
    for word, code in list(ids.items())[len(inside):]:  # outside: its own code, and its candidates'
        candidates = {vocabulary_entry(w, pseudonymizer.embeddings) for w in pseudonymizer.candidates(word)}
        seen = np.array([ids[w] for w in candidates if w in ids], dtype=np.int64)
        pairs.append((np.full(len(seen), code), seen, np.full(len(seen), 1 / len(candidates))))
    rows, surrogates, likelihood = (np.concatenate(part) for part in zip(*pairs))
    order = np.argsort(surrogates, kind="stable")
    starts = np.searchsorted(surrogates[order], [ids[word] for word in ids], side="left")
    stops = np.searchsorted(surrogates[order], [ids[word] for word in ids], side="right")
    return {word: (rows[order[a:b]], likelihood[order[a:b]]) for word, a, b in zip(ids, starts, stops)}


@lru_cache(maxsize=None)
def _number_originals(width: int, category: str, scheme: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The possible originals of `width` digits in `category` in blocks of equal candidates
    (`deidpool.pseudonymization.bound`): the start and stop of each block's candidate values, and its size."""
    candidates = number_block if scheme == "groups" else number_candidates
    blocks = number_blocks(width, category, lambda word: 1.0, ENUMERATED_WIDTH, candidates)
    return (np.array([values.start for _, values, _ in blocks]), np.array([values.stop for _, values, _ in blocks]),
            np.array([count for count, _, _ in blocks], dtype=float))


def _likelihood_matrix(originals: list[tuple[np.ndarray, np.ndarray]],
                       multiplicity: dict[int, float]) -> tuple[sparse.csr_matrix, np.ndarray]:
    """(tokens, originals) P(token | original) over the originals any token can come from, and
    how many originals each column stands for."""
    codes = np.concatenate([c for c, _ in originals])
    columns, position = np.unique(codes, return_inverse=True)
    rows = np.repeat(np.arange(len(originals)), [len(c) for c, _ in originals])
    values = np.concatenate([v for _, v in originals])
    matrix = sparse.csr_matrix((values, (rows, position)), shape=(len(originals), len(columns)))
    return matrix, np.array([multiplicity.get(int(code), 1.0) for code in columns])


def _expectation_maximization(likelihood: sparse.csr_matrix, weight: np.ndarray,
                              steps: int) -> tuple[np.ndarray, sparse.csr_matrix]:
    """The prior over originals that the tokens' surrogates suggest (`steps` EM steps from one
    proportional to `weight`), and each token's posterior over originals under it."""
    prior = weight / weight.sum()
    for _ in range(steps):
        prior = np.asarray(_posterior(likelihood, prior).mean(axis=0)).ravel()
    return prior, _posterior(likelihood, prior)


def _posterior(likelihood: sparse.csr_matrix, prior: np.ndarray) -> sparse.csr_matrix:
    joint = likelihood.multiply(prior[None, :]).tocsr()
    return (sparse.diags(1 / np.asarray(joint.sum(axis=1)).ravel()) @ joint).tocsr()
