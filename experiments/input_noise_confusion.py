"""How much of a word's identity does the representer's input noise leave, per embedding? (issue
#36: where the MEDDOCAN exports lose.) The representer adds Gaussian noise of std s per dimension
to every input embedding before its BiLSTM reads it (docs/method.md); s starts at 0.1, a level set for
GloVe 6B 50d, and training moves it little (0.09-0.095 after the short MEDDOCAN budget). The same s
on embeddings of another scale hides more or less of each word. For the tokens of the provider's
notes, drawn as often as they occur: the share whose noisy vector still lies nearest its own word's
vector among the notes' distinct words (the rest look, to a nearest-word reader, like another
word), beside the noise's expected norm s * sqrt(dim) and the median distance from a word to its
nearest neighbour. Out-of-vocabulary tokens (GloVe's zero vector) are left out.

    python experiments/input_noise_confusion.py [--noise 0.1 0.035 0.01] [--draws 5000]
        [--federation federation_meddocan_valloss]

PhysioNet is read with GloVe, MEDDOCAN with the provider's FastText of the federation's seed 0
(runs/<federation>/seed-0/fasttext-provider.bin, trained there as experiments/federation.py does
if absent). Nothing else is trained (a minute or two). The table goes to
results/federation/federation_input_noise.md and .json.
"""

from __future__ import annotations

import argparse

import numpy as np

import federation
from results_files import commit_text, record, write_results

CHUNK = 256  # noisy vectors compared with the word matrix at a time


def corpus_words(documents, embeddings) -> tuple[np.ndarray, np.ndarray]:
    """(distinct word vectors, each one's token count) of `documents`' tokens, out-of-vocabulary
    zero vectors left out; words that share a vector (case variants of a lowercased vocabulary)
    count as one."""
    from deidpool.corpus.prepare import prepare_document

    rows = [embeddings.sentence_matrix(sentence.tokens) for document in documents
            for sentence in prepare_document(document)]
    vectors = np.concatenate(rows).astype(np.float32)
    vectors = vectors[np.any(vectors != 0, axis=1)]
    return np.unique(vectors, axis=0, return_counts=True)


def squared_distances(queries: np.ndarray, words: np.ndarray) -> np.ndarray:
    """(len(queries), len(words)) squared Euclidean distances, never below 0."""
    return np.maximum(np.sum(queries ** 2, axis=1)[:, None] - 2 * queries @ words.T + np.sum(words ** 2, axis=1)[None],
                      0.0)


def nearest(queries: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Index of the row of `words` nearest (Euclidean) each row of `queries`."""
    return np.concatenate([np.argmin(squared_distances(chunk, words), axis=1)
                           for chunk in np.array_split(queries, max(1, len(queries) // CHUNK))])


def kept_share(words: np.ndarray, counts: np.ndarray, stddev: float, draws: int, seed: int) -> float:
    """Share of `draws` tokens (drawn by `counts`) whose vector plus N(0, stddev) per dimension
    still lies nearest their own word's vector."""
    rng = np.random.default_rng(seed)
    drawn = rng.choice(len(words), size=draws, p=counts / counts.sum())
    noisy = words[drawn] + rng.normal(0.0, stddev, size=(draws, words.shape[1])).astype(np.float32)
    return float(np.mean(nearest(noisy, words) == drawn))


def neighbour_distance(words: np.ndarray, sample: int, seed: int) -> float:
    """Median distance from a word (a sample of `sample`) to its nearest other word."""
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(words), size=min(sample, len(words)), replace=False)
    distances = np.sqrt(squared_distances(words[picked], words))
    distances[np.arange(len(picked)), picked] = np.inf
    return float(np.median(distances.min(axis=1)))


def corpus_rows(name: str, embedding: str, words: np.ndarray, counts: np.ndarray, levels: list[float],
                draws: int, seed: int) -> list[dict]:
    spread, gap = float(np.mean(np.std(words, axis=0))), neighbour_distance(words, 2000, seed)
    return [{"corpus": name, "embedding": embedding, "dim": words.shape[1], "words": len(words),
             "tokens": int(counts.sum()), "per_dimension_std": spread, "neighbour_distance": gap, "stddev": level,
             "noise_norm": level * words.shape[1] ** 0.5, "kept": kept_share(words, counts, level, draws, seed)}
            for level in levels]


def table(rows: list[dict]) -> list[str]:
    lines = ["| corpus | embedding | dim | distinct words (tokens) | per-dimension std | median distance to the "
             "nearest word | input noise s | noise norm s * sqrt(dim) | tokens still nearest their own word |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['corpus']} | {r['embedding']} | {r['dim']} | {r['words']:,} ({r['tokens']:,}) | "
              f"{r['per_dimension_std']:.3f} | {r['neighbour_distance']:.2f} | {r['stddev']:g} | "
              f"{r['noise_norm']:.2f} | **{r['kept']:.3f}** |" for r in rows]
    return lines


def report(data: dict) -> str:
    """The page of results JSON `data`: its rows and the run's record (date, commit, "trained_at"
    where the federation's seed folder recorded it, command)."""
    run = data["record"]
    lines = ["# How much of a word's identity the representer's input noise leaves", "",
             f"{run['date']}, {commit_text(run)}; command `{run['command']}`. "
             "The provider's notes of each federation; tokens drawn as often as they occur, N(0, s) added to each "
             "dimension of their embedding as the representer's input noise does; the last column: the share "
             "whose noisy vector still lies nearest their own word among the notes' distinct words "
             "(out-of-vocabulary zero vectors left out). The representer starts at s = 0.1 whatever the embedding.",
             "", *table(data["rows"])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--noise", type=float, nargs="+", default=[0.1, 0.035, 0.01])
    parser.add_argument("--draws", type=int, default=5000, help="tokens drawn per corpus and noise level")
    parser.add_argument("--federation", default="federation_meddocan_valloss",
                        help="the MEDDOCAN federation whose seed-0 FastText is read")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from deidpool.corpus.formats import read_corpus

    rows, folder = [], federation.REPO / "runs" / args.federation / "seed-0"
    for name, corpus in (("physionet", federation.CORPORA["physionet"]), ("meddocan", federation.CORPORA["meddocan"])):
        provider = read_corpus(corpus.notes, corpus.fmt, split="provider")
        spec, vectors = federation.provider_embeddings(corpus, folder, provider, 0)
        words, counts = corpus_words(provider, vectors)
        rows += corpus_rows(name, spec.split(":")[0], words, counts, args.noise, args.draws, args.seed)
        federation.progress(f"{name}: {len(words):,} distinct words scored")
    data = {"rows": rows, "record": record(run_folders=[folder], seed=args.seed)}
    write_results("federation_input_noise", report(data), data)


if __name__ == "__main__":
    main()
