"""The non-PHI text (issue #37): what share of the tokens outside gold PHI a white-box attacker
reads back from the vectors an export shares.

The test notes are exported as `client export` computes the vectors: every gold PHI token
pseudonymized under the export's default scheme (`surrogates`; `groups`, N = 100 in the results
of 2026-11-26; the safety net off, so the few non-PHI tokens it would flag stay as they are), the
copy embedded and represented by the run's representer with its noise on. Scored: the tokens
outside gold PHI with a letter or a digit ("non-PHI"), and among them the content words (not in
spaCy's stop-word list of the notes' language: reading back "de", "el", "y" is trivial).

(a) Inversion: adversary.inversion's `Inverter`, trained on the representer's noisy outputs of
exports of the attacker's own notes (a fresh pseudonymization every epoch; loss on every token),
then the whole embedding vocabulary ranked for every scored test token that has a vocabulary row.
Levels to beat: the frequency guess (the attacker's most frequent words of the same kind,
`frequency_baseline`) and the context-only inverter (`context_only_inversion`: the token zeroed,
its context read from the text), the latter on a seeded sample of PROBE_SHARE of the tokens.

(b) Nearest candidate, oracle context: for a seeded sample of scored test tokens (in vocabulary or
not), the attacker knows every other word the representer read (the pseudonymized copy), puts each
of K candidates (the true word and its K - 1 nearest vocabulary neighbours) at the position,
represents each candidate sentence with the public representer's noise off
(`attacker_reference`) and picks the one whose vector there lies nearest the exported vector.
Chance is 1/K. With `--draws D` (an export of D draws, `client export --draws`), the attack is run
again on the same tokens against the mean of the vectors D draws share there (fresh surrogates and
noise each): the attacker links the copies of a sentence (the same tags and casing, near vectors)
and averages their noise away; the context it tries candidates in is the first copy's.

    python experiments/nonphi_readback.py [--run runs/federation_meddocan_short/seed-0/representer]
        [--epochs 10] [--candidates 100] [--candidate-tokens 300] [--draws 3] [--no-inversion]
"""

from __future__ import annotations

import argparse
import copy
import importlib
import random
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import keras
import numpy as np

from deidpool.representer.threads import configure_threads

configure_threads()

from deidpool.adversary.audit import attacker_reference  # noqa: E402
from deidpool.adversary.inversion import (  # noqa: E402
    context_only_inversion,
    frequency_baseline,
    in_vocabulary,
    inverter_estimates,
    rank_scores,
    vocabulary_ranks,
)
from deidpool.adversary.procedures import represent  # noqa: E402
from deidpool.adversary.runs import run_models, sentences  # noqa: E402
from deidpool.adversary.verdicts import wilson_interval  # noqa: E402
from deidpool.client.export import DEFAULT_NEIGHBOURS  # noqa: E402
from deidpool.client.inference import apply_to_sentences, compile_representer  # noqa: E402
from deidpool.corpus.errors import CorpusWarning  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.pseudonymization.pseudonymize import Pseudonymizer  # noqa: E402
from deidpool.pseudonymization.schemes import EXPORT_SCHEME  # noqa: E402
from deidpool.representer.characters import CHAR_WIDTH, char_ids  # noqa: E402
from deidpool.representer.dataset import SentenceData  # noqa: E402
from deidpool.representer.embeddings import load_embeddings  # noqa: E402
from deidpool.representer.representation import load_representer, reads_chars  # noqa: E402
from results_files import commit_text, git_commit, record, recorded_folder, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS_NAME = "nonphi_readback"
RUN = ROOT / "runs" / "federation_meddocan_short" / "seed-0" / "representer"
PROBE_SHARE = 0.15  # tokens per sentence the context-only baseline hides (and is scored on)
FREQUENT = 100  # a content word seen at least this often in the attacker's notes is "frequent"
EXAMPLES = 15  # content words read back most often, listed in the table


def progress(message: str) -> None:
    print(f"[nonphi_readback] {message}", flush=True)


@dataclass(frozen=True)
class Copy:
    """One export's copy of the notes: the words the representer reads (every gold PHI token
    pseudonymized) and their embeddings, named as adversary.pairs.Pairs names them."""

    words: list[list[str]]
    shared_original: np.ndarray
    shared_original_chars: np.ndarray


class ExportedNotes:
    """The sentences of some notes as `client export` shares them, in the form adversary.inversion
    reads a `PairSource` on the export path, every sentence kept (a `PairSource` keeps only those
    with PHI): `features` the embeddings of the original tokens, `draw(seed, epoch)` an export's
    `Copy`, `positions` per sentence the tokens an attack is scored on (inversion's "hidden"
    tokens; none until `scoring`). With `chars` (a representer that reads characters) `chars` and
    every copy carry the tokens' character ids."""

    export_path = True

    def __init__(self, sentences, pseudonymizer: Pseudonymizer, chars: bool = False):
        self.sentences, self.pseudonymizer = list(sentences), pseudonymizer
        self.lengths = np.array([len(sentence.tokens) for sentence in self.sentences], np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.words = [token.text for sentence in self.sentences for token in sentence.tokens]
        self.tags = [tag for sentence in self.sentences for tag in sentence.tags]
        self.features = pseudonymizer.embeddings.sentence_matrix(self.words)
        self.char_width = CHAR_WIDTH if chars else 0
        self.chars = char_ids(self.words, self.char_width)
        self.rows = pseudonymizer.embeddings.lookup_ids(self.words)
        self.positions = [np.zeros(0, np.int64) for _ in self.sentences]

    def __len__(self):
        return len(self.sentences)

    def scoring(self, mask: np.ndarray) -> ExportedNotes:
        """These notes scored on the tokens of the flat boolean `mask`."""
        view = copy.copy(self)
        view.positions = [np.flatnonzero(part) for part in np.split(mask, self.offsets[1:])]
        return view

    def draw(self, seed: int, epoch: int = 0) -> Copy:
        """An export's copy, deterministic in (`seed`, `epoch`): every gold PHI token replaced as
        `client export` replaces it (`Pseudonymizer.labeled_sentences`)."""
        copies = self.pseudonymizer.labeled_sentences(self.sentences, random.Random(f"{seed}/{epoch}"))
        words = [[token.text for token in sentence.tokens] for sentence in copies]
        flat = [word for sentence in words for word in sentence]
        return Copy(words, self.pseudonymizer.embeddings.sentence_matrix(flat), char_ids(flat, self.char_width))


def represented_sentences(features: np.ndarray, words: list[str], lengths: np.ndarray, char_width: int) -> SentenceData:
    """Sentences of `features` (tokens, dim) as a representer reads them, with the character ids of
    `words` (one per token) when it reads characters (`char_width` > 0)."""
    return SentenceData(features, np.zeros(len(features), np.int8), lengths,
                        chars=char_ids(words, char_width) if char_width else None)


def stop_words(language: str) -> frozenset[str]:
    """spaCy's stop-word list of `language` (lower case; "es": 521 words)."""
    return frozenset(importlib.import_module(f"spacy.lang.{language}.stop_words").STOP_WORDS)


def token_kinds(notes: ExportedNotes, stop: frozenset[str]) -> dict[str, np.ndarray]:
    """Flat boolean masks over the tokens of `notes`: `nonphi` (outside gold PHI, with a letter or
    a digit), `content` (of those, not a word of `stop`), `known` (with a vocabulary row)."""
    nonphi = np.array([tag == "O" and notes.pseudonymizer.replaceable(word)
                       for word, tag in zip(notes.words, notes.tags)], bool)
    content = nonphi & np.array([word.lower() not in stop for word in notes.words], bool)
    return {"nonphi": nonphi, "content": content, "known": notes.rows >= 0}


def probes(mask: np.ndarray, seed: int, share: float = PROBE_SHARE) -> np.ndarray:
    """A seeded sample of about `share` of the tokens of `mask`."""
    return mask & (np.random.default_rng(seed).random(len(mask)) < share)


def inversion_readback(representer, train: ExportedNotes, test: ExportedNotes, stop: frozenset[str], *,
                       seed: int = 0, show_progress: bool = True, **options) -> dict:
    """Attack (a): the inverter on the export beside the frequency and context-only guesses, per
    kind of token (`rows`, `probes`), and the content words it names most often (`read_back`).
    `options`: adversary.inversion's (`epochs`, `units`, `learning_rate`)."""
    kinds = {name: token_kinds(notes, stop) for name, notes in (("train", train), ("test", test))}
    counts = np.bincount(train.rows[train.rows >= 0], minlength=len(test.pseudonymizer.embeddings.kv))
    known = kinds["test"]["known"]
    content = kinds["test"]["content"]
    frequent = known & (counts[np.maximum(test.rows, 0)] >= FREQUENT)
    subsets = {"non-PHI": ("nonphi", kinds["test"]["nonphi"]), "content words": ("content", content),
               f"content words seen >= {FREQUENT} times": ("content", content & frequent),
               f"content words seen < {FREQUENT} times": ("content", content & ~frequent)}
    progress(f"inverter: {options['epochs']} epochs on {len(train)} sentences of the attacker's notes")
    estimates = inverter_estimates(lambda batch: represent(representer, batch["shared"], batch["mask"],
                                                           chars=batch.get("chars")),
                                   in_vocabulary, train, test, seed=seed, progress=show_progress, label="export",
                                   **options)
    scored = kinds["test"]["nonphi"] & known
    ranks = np.full(len(test.words), -1)
    ranks[scored] = vocabulary_ranks(estimates[scored], test.rows[scored],
                                     test.pseudonymizer.embeddings.kv.get_normed_vectors())
    rows = []
    for name, (kind, mask) in subsets.items():
        guess = frequency_baseline(train.scoring(kinds["train"][kind] & kinds["train"]["known"]),
                                   test.scoring(mask & known))
        rows.append({"tokens": name, "scored": int(np.sum(mask)), "in_vocabulary": int(np.sum(mask & known)),
                     "inverter": rank_scores(ranks[mask & known]), "frequency": guess})
    probe_rows = []
    for kind in ("nonphi", "content"):
        progress(f"context-only inverter on probes of the {kind} tokens")
        hidden = {name: probes(kinds[name][kind] & kinds[name]["known"], seed) for name in ("train", "test")}
        context = context_only_inversion(train.scoring(hidden["train"]), test.scoring(hidden["test"]), seed=seed,
                                         progress=show_progress, label=f"context-only {kind}", **options)
        probe_rows.append({"tokens": "non-PHI" if kind == "nonphi" else "content words",
                           "inverter": rank_scores(ranks[hidden["test"]]), "context_only": context})
    named = Counter(word.lower() for word, rank, keep in zip(test.words, ranks, content & known) if keep and rank == 0)
    return {"rows": rows, "probes": probe_rows, "read_back": named.most_common(EXAMPLES),
            "read_back_types": len(named),
            "content_types": len({word.lower() for word, keep in zip(test.words, content & known) if keep})}


def nearest_candidate(reference, embeddings, words: list[list[str]], targets: list[tuple[int, int]],
                      exported: list[np.ndarray], k: int, originals: list[str] | None = None,
                      char_width: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Attack (b) on each target (sentence, position) of the copy `words`: the true word (the
    copy's own there, or the target's entry of `originals`: a PHI token the copy pseudonymized) and
    its k - 1 nearest vocabulary neighbours put at the position, each sentence represented by
    `reference` (a batch function, `compile_representer`'s); the credit is 1 when the true word's
    vector there lies nearest the target's `exported` vector, 1/m when m candidates tie, else 0.
    A representer that reads characters (`char_width` > 0) reads each candidate's spelling too.
    Returns the credits and each target's number of candidates."""
    credits, sizes = [], []
    for candidates, distances in candidate_distances(reference, embeddings, words, targets, exported, k, originals,
                                                     char_width):
        credits.append(nearest_credit(distances))
        sizes.append(len(candidates))
    return np.array(credits), np.array(sizes)


def candidate_distances(reference, embeddings, words: list[list[str]], targets: list[tuple[int, int]],
                        exported: list[np.ndarray], k: int, originals: list[str] | None = None,
                        char_width: int = 0) -> Iterator[tuple[list[str], np.ndarray]]:
    """`nearest_candidate`'s search, target by target: the candidates (the true word first) and the
    squared distance of each one's vector at the position to the target's `exported` vector."""
    for index, ((sentence, position), vector) in enumerate(zip(targets, exported)):
        candidates = embeddings.neighbours(words[sentence][position] if originals is None else originals[index], k)
        length = len(words[sentence])
        features = np.tile(embeddings.sentence_matrix(words[sentence]), (len(candidates), 1))
        features[position::length] = embeddings.sentence_matrix(candidates)
        spelled = [candidate if at == position else word for candidate in candidates
                   for at, word in enumerate(words[sentence])]
        data = represented_sentences(features, spelled, np.full(len(candidates), length), char_width)
        at = np.array([output[position] for output in apply_to_sentences(reference, data)])
        yield candidates, np.sum((at - vector) ** 2, axis=1)


def nearest_credit(distances: np.ndarray) -> float:
    """The first candidate's credit among `distances` (`candidate_distances`'): 1 when it lies
    nearest, 1/m when m candidates tie there, else 0; a candidate at an infinite distance is out."""
    nearest = distances == distances.min()
    return float(nearest[0] / nearest.sum())


def exported_vectors(export, test: ExportedNotes, exported: Copy, targets: list[tuple[int, int]]) -> list[np.ndarray]:
    """The vector `export` (a batch function, the representer with its noise on) shares for each
    target (sentence, position) of `test`'s copy `exported`, as `client export` computes it."""
    chosen = sorted({sentence for sentence, _ in targets})
    features = np.concatenate([exported.shared_original[test.offsets[s]:test.offsets[s] + test.lengths[s]]
                               for s in chosen])
    words = [word for s in chosen for word in exported.words[s]]
    outputs = apply_to_sentences(export, represented_sentences(features, words, test.lengths[chosen], test.char_width))
    by_sentence = dict(zip(chosen, outputs))
    return [by_sentence[sentence][position] for sentence, position in targets]


def candidate_readback(representer, test: ExportedNotes, stop: frozenset[str], *, k: int, tokens: int,
                       seed: int = 0, draws: int = 1) -> dict:
    """Attack (b) on `tokens` non-PHI tokens of `test` drawn with `seed`: hit rates (with Wilson
    intervals) per kind of token, and chance (the mean of 1/candidates), on one export (`rows`)
    and, with `draws` > 1, on the same tokens against the mean of `draws` exports' vectors
    (`averaged`)."""
    kinds = token_kinds(test, stop)
    flat, targets = sampled_targets(test, kinds["nonphi"], tokens, seed)
    copies = [test.draw(seed, draw) for draw in range(draws)]
    dim = test.pseudonymizer.embeddings.dim
    export = compile_representer(representer, dim)
    views = [exported_vectors(export, test, exported, targets) for exported in copies]
    reference = compile_representer(attacker_reference(representer), dim)
    subsets = {"non-PHI": np.ones(len(flat), bool), "content words": kinds["content"][flat],
               "stop words": ~kinds["content"][flat], "in the vocabulary": kinds["known"][flat],
               "not in the vocabulary": ~kinds["known"][flat]}
    result, credits = {"k": k, "draws": draws}, {}
    for count in sorted({1, draws}):
        progress(f"nearest candidate: {len(targets)} tokens x {k} candidates, {count} draw(s) averaged")
        vectors = [np.mean(shared, axis=0) for shared in zip(*views[:count])]
        credits[count], sizes = nearest_candidate(reference, test.pseudonymizer.embeddings, copies[0].words, targets,
                                                  vectors, k, char_width=test.char_width)
        result["rows" if count == 1 else "averaged"] = [hit_row(name, mask, credits[count], sizes)
                                                        for name, mask in subsets.items()]
    if draws > 1:
        result["differences"] = [{"tokens": name, **paired_difference(credits[1][mask], credits[draws][mask], seed)}
                                 for name, mask in subsets.items()]
    return result


def paired_difference(first: np.ndarray, second: np.ndarray, seed: int, resamples: int = 1000) -> dict:
    """The mean of `second` - `first` over the same targets, with its paired 95% percentile
    bootstrap interval (the targets resampled `resamples` times)."""
    if not len(first):
        return {"difference": None, "ci": None}
    differences = second - first
    picks = np.random.default_rng(seed).integers(0, len(differences), (resamples, len(differences)))
    low, high = np.percentile(differences[picks].mean(axis=1), [2.5, 97.5])
    return {"difference": float(differences.mean()), "ci": [float(low), float(high)]}


def sampled_targets(test: ExportedNotes, mask: np.ndarray, tokens: int, seed: int) -> tuple[np.ndarray, list]:
    """A seeded sample of `tokens` of `test`'s tokens in the flat boolean `mask`: their flat indices
    and their (sentence, position)."""
    flat = np.sort(np.random.default_rng(seed).choice(np.flatnonzero(mask), min(tokens, int(mask.sum())),
                                                      replace=False))
    sentence_of = np.searchsorted(test.offsets, flat, side="right") - 1
    return flat, [(int(s), int(i - test.offsets[s])) for s, i in zip(sentence_of, flat)]


def hit_row(name: str, mask: np.ndarray, credits: np.ndarray, sizes: np.ndarray) -> dict:
    """The attack's row for the targets of `mask`: count, hits, rate with its Wilson interval, chance
    (the mean of 1/candidates)."""
    count = int(mask.sum())
    return {"tokens": name, "count": count, "hits": float(credits[mask].sum()),
            "rate": float(credits[mask].mean()) if count else None,
            "ci": list(wilson_interval(credits[mask].sum(), count)) if count else None,
            "chance": float(np.mean(1 / sizes[mask])) if count else None}


def hit_line(row: dict) -> str:
    """`hit_row`'s Markdown table row: tokens, sampled, hit rate, 95% CI, chance."""
    return (f"| {row['tokens']} | {row['count']} | **{share(row['rate'])}** | "
            + (f"[{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]" if row["ci"] else "-") + f" | {share(row['chance'])} |")


def share(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(result: dict) -> str:
    """The results page: what was measured, attack (a)'s (when it ran) and (b)'s tables."""
    candidates, counts = result["candidates"], result["token_counts"]
    scheme = result["pseudonymization"] if result["pseudonymization"] == "surrogates" else \
        f"{result['pseudonymization']}, N = {result['neighbours']}"
    made = commit_text(result.get("record", result))  # where the results were trained and reported
    lines = [f"# The non-PHI text an export reveals ({result['notes']['test']})", "",
             f"{result['date']}, {made}; command `{result['command']}` ({result['seconds']:.0f} s). "
             f"Representer: `{result['representer']}` (noise on, as exported); embeddings `{result['embeddings']}`. "
             f"Exported as `client export` computes the vectors: gold PHI pseudonymized ({scheme}; safety net off). "
             "The attacker knows the public representer"
             + (f" and trains on exports of its own notes ({result['notes']['train']})" if result["inversion"] else "")
             + f". Scored: the {counts['nonphi']:,} test tokens "
             f"outside gold PHI with a letter or a digit, {counts['content']:,} of them content words (not among "
             f"spaCy's {counts['stop_words']} {result['language']} stop words); "
             f"{counts['nonphi_known']:,} non-PHI ({counts['content_known']:,} content) have a vocabulary row."]
    if result["inversion"]:
        lines += inversion_lines(result)
    lines += ["", f"## (b) Nearest candidate, oracle context ({candidates['k']} candidates)", "",
              "The attacker knows every other word the representer read, tries the true word and its "
              f"{candidates['k'] - 1} nearest vocabulary neighbours at the position (noise off) and picks the one "
              "whose vector lies nearest the exported one; ties share the credit. The true word is the centre of "
              "its candidates, so an export that says nothing makes it, if anything, less likely than chance to be "
              "picked (a constant export: about half of 1/K in tests/experiments/test_nonphi_readback.py); a rate "
              "far above chance is what the export reveals.", "",
              "| tokens | sampled | hit rate | 95% CI | chance |", "|---|---|---|---|---|"]
    lines += [hit_line(row) for row in candidates["rows"]]
    if "averaged" in candidates:
        lines += ["", f"The same tokens against the mean of the vectors of {candidates['draws']} draws "
                  "(`client export --draws`: fresh surrogates and noise each), the copies linked by the attacker:", "",
                  "| tokens | sampled | hit rate | 95% CI | chance |", "|---|---|---|---|---|"]
        lines += [hit_line(row) for row in candidates["averaged"]]
        lines += ["", f"{candidates['draws']} draws averaged - one draw, on the same tokens [paired 95% bootstrap "
                  "interval over the tokens, 1000 resamples]:", "", "| tokens | difference in hit rate |", "|---|---|"]
        lines += [f"| {row['tokens']} | " + ("-" if row["difference"] is None else
                                             f"{row['difference']:+.3f} [{row['ci'][0]:+.3f}, {row['ci'][1]:+.3f}]")
                  + " |" for row in candidates["differences"]]
    return "\n".join(lines)


def inversion_lines(result: dict) -> list[str]:
    """Attack (a)'s section of the results page."""
    inversion = result["inversion"]
    lines = ["", f"## (a) Inversion: the vocabulary ranked for every token ({result['epochs']} epochs)", "",
             "Top-1: the inverter's nearest vocabulary word is the token; top-10: among its 10 nearest. Frequency: "
             "the attacker's most frequent words of the same kind (non-PHI, or content words). Only tokens with a "
             "vocabulary row can be ranked.", "",
             "| tokens | scored | ranked (in vocabulary) | inverter top-1 | top-10 | frequency top-1 | top-10 |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {row['tokens']} | {row['scored']:,} | {row['in_vocabulary']:,} | "
              f"**{share(row['inverter']['top1'])}** | {share(row['inverter']['top10'])} | "
              f"{share(row['frequency']['top1'])} | {share(row['frequency']['top10'])} |"
              for row in inversion["rows"]]
    lines += ["", f"Context-only baseline on a sample of {PROBE_SHARE:.0%} of the ranked tokens (hidden from it, "
              "their context read from the text; the inverter scored on the same tokens). It regresses to an embedding "
              "and names the nearest word, a weak guess: where it falls below the frequency guess, that is the level "
              "to beat.", "",
              "| tokens | probes | inverter top-1 | top-10 | context-only top-1 | top-10 |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {row['tokens']} | {row['inverter']['tokens']:,} | {share(row['inverter']['top1'])} | "
              f"{share(row['inverter']['top10'])} | {share(row['context_only']['top1'])} | "
              f"{share(row['context_only']['top10'])} |" for row in inversion["probes"]]
    lines += ["", f"Content words named exactly most often ({inversion['read_back_types']:,} of the "
              f"{inversion['content_types']:,} distinct content words in the vocabulary named at least once): "
              + ", ".join(f"{word} ({count})" for word, count in inversion["read_back"]) + "."]
    return lines


def add_export_options(parser: argparse.ArgumentParser, run: Path) -> None:
    """The options of an attack on exported notes: the representer run (default `run`), the
    embeddings, the notes exported and how they are pseudonymized, the seed."""
    parser.add_argument("--run", type=Path, default=run, help="a representer run folder")
    parser.add_argument("--embeddings", help="embeddings spec (default: the run's)")
    parser.add_argument("--data-root", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--test", default="meddocan/dev/xml", help="the exported notes, under --data-root")
    parser.add_argument("--test-split")
    parser.add_argument("--format", default="meddocan")
    parser.add_argument("--language", default="es")
    parser.add_argument("--neighbours", type=int, default=DEFAULT_NEIGHBOURS)
    parser.add_argument("--pseudonymization", default=EXPORT_SCHEME)
    parser.add_argument("--seed", type=int, default=0)


def export_setup(args: argparse.Namespace) -> tuple[Path, str, object, Pseudonymizer, str]:
    """From `add_export_options`' arguments: the representer file, the embeddings spec, the
    representer (noise on, as exported), the export's pseudonymizer and the label its sentences
    are prepared with."""
    representer_file, _, _, config = run_models(args.run)
    spec = args.embeddings or embeddings_spec(args.run, config.get("embeddings", "glove"))
    pseudonymizer = Pseudonymizer(load_embeddings(spec), args.neighbours, args.pseudonymization, args.language)
    warnings.simplefilter("ignore", CorpusWarning)
    return representer_file, spec, load_representer(representer_file), pseudonymizer, config.get("label", "source_type")


def embeddings_spec(run: Path, configured: str) -> str:
    """The run's embeddings: `configured` (its config's spec), a file it names that is absent
    looked up by name in the run folder's parent (a run moved from another checkout)."""
    kind, _, path = configured.partition(":")
    if path and not Path(path).exists() and (run.parent / Path(path).name).exists():
        return f"{kind}:{run.parent / Path(path).name}"
    return configured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_export_options(parser, RUN)
    parser.add_argument("--train", default="meddocan/train/xml", help="the attacker's notes, under --data-root")
    parser.add_argument("--train-split", default="provider")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--candidate-tokens", type=int, default=300)
    parser.add_argument("--draws", type=int, default=1, help="attack (b) also on the mean of this many draws")
    parser.add_argument("--no-inversion", action="store_true", help="attack (b) only")
    parser.add_argument("--results-name", default=RESULTS_NAME)
    args = parser.parse_args()
    started = time.perf_counter()
    representer_file, spec, representer, pseudonymizer, label = export_setup(args)
    notes = {}
    for name, path, split in (("train", args.train, args.train_split), ("test", args.test, args.test_split)):
        documents = read_corpus(args.data_root / path, args.format, split=split)
        notes[name] = ExportedNotes(sentences(documents, label), pseudonymizer, reads_chars(representer))
        progress(f"{name}: {len(documents)} notes, {len(notes[name])} sentences from {path}"
                 + (f" ({split})" if split else ""))
    stop = stop_words(args.language)
    kinds = token_kinds(notes["test"], stop)
    keras.utils.set_random_seed(args.seed)  # the inverters' initial weights, the representer's noise
    inversion = None if args.no_inversion else inversion_readback(
        representer, notes["train"], notes["test"], stop, seed=args.seed, epochs=args.epochs, units=args.units,
        learning_rate=args.learning_rate)
    candidates = candidate_readback(representer, notes["test"], stop, k=args.candidates, tokens=args.candidate_tokens,
                                    seed=args.seed, draws=args.draws)
    command = "python experiments/nonphi_readback.py " + " ".join(sys.argv[1:])
    result = {"date": str(date.today()), "commit": git_commit(), "command": command.strip(),
              "representer": str(representer_file), "embeddings": spec, "language": args.language,
              "notes": {"train": f"{args.train}" + (f" ({args.train_split})" if args.train_split else ""),
                        "test": f"{args.test}" + (f" ({args.test_split})" if args.test_split else "")},
              "pseudonymization": args.pseudonymization, "neighbours": args.neighbours, "epochs": args.epochs,
              "units": args.units, "learning_rate": args.learning_rate, "seed": args.seed,
              "token_counts": {"nonphi": int(kinds["nonphi"].sum()), "content": int(kinds["content"].sum()),
                               "nonphi_known": int((kinds["nonphi"] & kinds["known"]).sum()),
                               "content_known": int((kinds["content"] & kinds["known"]).sum()),
                               "stop_words": len(stop)},
              "inversion": inversion, "candidates": candidates, "seconds": round(time.perf_counter() - started, 1),
              "record": record(recorded_folder(args.run))}
    write_results(args.results_name, table(result), result)


if __name__ == "__main__":
    main()
