"""The candidate-search attack on the PHI of an export (issue #37, "the independent-style attack"):
can an attacker who knows the public representer and every other word of a sentence tell which
original PHI token an export's vector came from?

The test notes are exported as `client export` computes the vectors (every gold PHI token
pseudonymized under the export's scheme, default `surrogates`; the representer's noise on). For a
seeded sample of gold PHI tokens with a letter or a digit and a vector: the attacker puts the
ORIGINAL token and its K - 1 nearest vocabulary neighbours at the position, the rest of the
sentence as the export's copy has it (oracle context), represents each candidate sentence with the
representer's noise off (`attacker_reference`) and picks the candidate whose vector there lies
nearest the exported one; ties share the credit (nonphi_readback's attack (b), pointed at the
PHI). Chance is 1/K; the issue's target: at most 2 x chance on a default export of fresh notes.
Rows: every sampled token, those the scheme replaced, and those a span keeps as written
(function words, `surrogates.kept_words`: their export is the original, which the
bound counts as named). A control: the same search centred on a decoy, another gold PHI word of
the token's label and visible shape that the export never carried (`decoys`): its rate is what the
attack gets from the candidate set's geometry and the shape alone, and an export that reveals
more of its original makes the original's rate exceed the decoy's on the same tokens.

    python experiments/phi_candidate_search.py [--run runs/federation_meddocan_structured/seed-0/representer]
        [--test meddocan/dev/xml] [--candidates 100] [--tokens 1000] [--pseudonymization surrogates]

Writes results/privacy/phi_candidate_search.{md,json}.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

from deidpool.representer.threads import configure_threads

configure_threads()

from deidpool.adversary.audit import attacker_reference  # noqa: E402
from deidpool.adversary.runs import sentences  # noqa: E402
from deidpool.client.inference import compile_representer  # noqa: E402
from deidpool.corpus.formats import read_corpus  # noqa: E402
from deidpool.pseudonymization.surrogates import token_shape  # noqa: E402
from deidpool.representer.representation import reads_chars  # noqa: E402
from nonphi_readback import (  # noqa: E402
    ExportedNotes,
    add_export_options,
    export_setup,
    exported_vectors,
    hit_line,
    hit_row,
    nearest_candidate,
    sampled_targets,
    share,
)
from results_files import git_commit, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "runs" / "federation_meddocan_structured" / "seed-0" / "representer"
TARGET_TIMES_CHANCE = 2.0
MIN_LABEL_TOKENS = 10  # a label's replaced tokens below this many get no row of their own


def attackable_phi(test: ExportedNotes) -> np.ndarray:
    """Flat boolean mask of `test`'s gold PHI tokens that have a letter or a digit and a vector (a
    zero-vector word has no neighbour to hide among)."""
    embeddings = test.pseudonymizer.embeddings
    return np.array([tag != "O" and test.pseudonymizer.replaceable(word) and embeddings.is_known(word)
                     for word, tag in zip(test.words, test.tags)], bool)


def phi_targets(test: ExportedNotes, tokens: int, seed: int) -> list[tuple[int, int]]:
    """A seeded sample of `tokens` (sentence, position) of `test`'s `attackable_phi` tokens."""
    return sampled_targets(test, attackable_phi(test), tokens, seed)[1]


def decoys(test: ExportedNotes, targets: list[tuple[int, int]], seed: int) -> list[str | None]:
    """For each target, a decoy: another `attackable_phi` word of `test` with the target's label and
    the shape a surrogate shows of it (`surrogates.token_shape` of the word alone: a number's shape set, a
    word's casing, another token's character classes), drawn with `seed`; None where there is none.
    The export never carried it, so the rate at which candidate search names a decoy is the attack's
    own floor: what it gets from the candidate set being built around the word it tests (the word is
    the set's centre) and from the shape the export shows by design (a four-digit phone number's
    surrogate is one; few of the original's nearest neighbours are)."""
    rng = np.random.default_rng(seed)
    language = test.pseudonymizer.language

    def key(index: int) -> tuple:
        label = test.tags[index][2:]
        return label, token_shape([test.words[index]], 0, label, language)

    alike: dict[tuple, list[str]] = {}
    for index in np.flatnonzero(attackable_phi(test)):
        alike.setdefault(key(index), []).append(test.words[index])
    chosen = []
    for s, i in targets:
        word = test.words[test.offsets[s] + i]
        others = [other for other in alike[key(test.offsets[s] + i)] if other.casefold() != word.casefold()]
        chosen.append(others[rng.integers(len(others))] if others else None)
    return chosen


def phi_candidate_search(representer, test: ExportedNotes, *, k: int, tokens: int, seed: int = 0) -> dict:
    """The attack on `tokens` sampled PHI tokens of `test` (one export drawn with `seed`): hit rates
    with Wilson intervals and chance, for every token, the replaced ones and the kept ones, and the
    same search centred on a decoy (`decoys`) for the replaced ones."""
    targets = phi_targets(test, tokens, seed)
    exported = test.draw(seed)
    dim = test.pseudonymizer.embeddings.dim
    originals = [test.words[test.offsets[s] + i] for s, i in targets]
    vectors = exported_vectors(compile_representer(representer, dim), test, exported, targets)
    print(f"[phi_candidate_search] {len(targets)} PHI tokens x {k} candidates, centred on the original and on a decoy",
          flush=True)
    reference = compile_representer(attacker_reference(representer), dim)
    credits, sizes = nearest_candidate(reference, test.pseudonymizer.embeddings, exported.words, targets, vectors, k,
                                       originals, test.char_width)
    chosen = decoys(test, targets, seed)
    kept = np.array([exported.words[s][i] == original for (s, i), original in zip(targets, originals)], bool)
    with_decoy = ~kept & np.array([decoy is not None for decoy in chosen], bool)
    picked = np.flatnonzero(with_decoy)
    decoy_credits, decoy_sizes = nearest_candidate(reference, test.pseudonymizer.embeddings, exported.words,
                                                   [targets[i] for i in picked], [vectors[i] for i in picked], k,
                                                   [chosen[i] for i in picked], test.char_width)
    rows = [hit_row("PHI tokens", np.ones(len(targets), bool), credits, sizes),
            hit_row("replaced", ~kept, credits, sizes), hit_row("kept as written", kept, credits, sizes),
            hit_row("replaced, those with a decoy", with_decoy, credits, sizes),
            hit_row("replaced, centred on a decoy", np.ones(len(picked), bool), decoy_credits, decoy_sizes)]
    labels = np.array([test.tags[test.offsets[s] + i][2:] for s, i in targets])
    by_label = [hit_row(f"replaced {label}", ~kept & (labels == label), credits, sizes)
                for label in sorted(set(labels[~kept]))]
    decoy_labels = labels[picked]
    by_label_decoy = [{"label": label,
                       "original": hit_row(label, with_decoy & (labels == label), credits, sizes),
                       "decoy": hit_row(label, decoy_labels == label, decoy_credits, decoy_sizes)}
                      for label in sorted(set(decoy_labels))]
    return {"k": k, "rows": rows, "labels": [row for row in by_label if row["count"] >= MIN_LABEL_TOKENS],
            "label_decoys": [row for row in by_label_decoy if row["decoy"]["count"] >= MIN_LABEL_TOKENS]}


def beyond_the_shape(original: dict, decoy: dict) -> bool:
    """Whether the export names its original more often than chance and than the attack names a
    decoy of the same label and shape: the original's interval's lower end above both rates."""
    return original["ci"][0] > max(decoy["rate"], original["chance"])


def table(result: dict) -> str:
    """The results page."""
    scheme = result["pseudonymization"] if result["pseudonymization"] == "surrogates" else \
        f"{result['pseudonymization']}, N = {result['neighbours']}"
    rows = {row["tokens"]: row for row in result["attack"]["rows"]}
    replaced, paired, decoy = (rows[name] for name in ("replaced", "replaced, those with a decoy",
                                                        "replaced, centred on a decoy"))
    verdict = "-" if replaced["rate"] is None else (
        "met" if replaced["ci"][1] <= TARGET_TIMES_CHANCE * replaced["chance"] else "not shown")
    lines = [f"# Candidate search on the PHI of an export ({result['test']})", "",
             f"{result['date']}, commit {result['commit']}; command `{result['command']}` ({result['seconds']:.0f} s). "
             f"Representer: `{result['representer']}` (noise on, as exported); embeddings `{result['embeddings']}`. "
             f"Exported as `client export` computes the vectors: gold PHI pseudonymized ({scheme}; safety net off). "
             f"For each sampled gold PHI token the attacker tries the original and its {result['attack']['k'] - 1} "
             "nearest vocabulary neighbours at the position, every other word as the export's copy has it, "
             "represents each with the public representer's noise off and picks the candidate whose vector lies "
             "nearest the exported one (ties share the credit). Chance: 1 / candidates. Kept as written: function "
             "words a span keeps (the bound counts them as named). Centred on a decoy: the same "
             "search for the replaced tokens around another gold PHI word of the token's label and visible shape (a "
             "number's shape set, a word's casing, another token's character classes) that the export never carried, "
             "for the replaced tokens that have one; its rate is the attack's floor from the candidate set's geometry "
             "(the tested word is the set's centre) and from the shape every surrogate shows.", "",
             "| tokens | sampled | hit rate | 95% CI | chance |", "|---|---|---|---|---|"]
    lines += [hit_line(row) for row in rows.values()]
    lines += ["", f"Target (issue #37): the replaced tokens' rate at most {TARGET_TIMES_CHANCE:g} x chance, read on "
              f"the interval's upper end: **{verdict}**"
              + ("." if replaced["rate"] is None else
                 f" ({replaced['rate'] / replaced['chance']:.1f} x chance)")
              + ("" if not decoy["count"] else
                 f"; on the {decoy['count']} replaced tokens with a decoy the original is named {share(paired['rate'])}"
                 f" of the time and the decoy {share(decoy['rate'])}: the export adds "
                 + ("more than the shape." if beyond_the_shape(paired, decoy) else "nothing beyond the shape."))]
    labels = result["attack"].get("labels", [])
    if labels:
        above = [row["tokens"].removeprefix("replaced ") for row in labels
                 if row["rate"] > TARGET_TIMES_CHANCE * row["chance"]]
        lines += ["", f"Per label (replaced tokens, labels with at least {MIN_LABEL_TOKENS} sampled; judged on the "
                      "rate, the intervals of so few tokens being wide): "
                  + (f"**{len(above)} of {len(labels)} above {TARGET_TIMES_CHANCE:g} x chance** ({', '.join(above)})."
                     if above else f"**none of {len(labels)} above {TARGET_TIMES_CHANCE:g} x chance**."), "",
                  "| tokens | sampled | hit rate | 95% CI | chance |", "|---|---|---|---|---|",
                  *(hit_line(row) for row in labels)]
    decoyed = result["attack"].get("label_decoys", [])
    if decoyed:
        beyond = [row["label"] for row in decoyed if beyond_the_shape(row["original"], row["decoy"])]
        lines += ["", f"Per label against its decoys (replaced tokens with a decoy, labels with at least "
                      f"{MIN_LABEL_TOKENS}): the original's rate beside the decoy's on the same tokens; the export "
                      "says more than the shape where the original's interval lies above the decoy's rate and "
                      "chance: "
                  + (f"**{len(beyond)} of {len(decoyed)}** ({', '.join(beyond)})." if beyond else
                     f"**none of {len(decoyed)}**."), "",
                  "| label | tokens with a decoy | original named | 95% CI | decoy named | more than the shape |",
                  "|---|---|---|---|---|---|",
                  *(decoy_line(row) for row in decoyed)]
    return "\n".join(lines)


def decoy_line(row: dict) -> str:
    """A label's row against its decoys: tokens, the original's rate and interval, the decoy's rate, the verdict."""
    original, decoy = row["original"], row["decoy"]
    verdict = "yes" if beyond_the_shape(original, decoy) else "no"
    return (f"| {row['label']} | {original['count']} | {share(original['rate'])} | [{original['ci'][0]:.3f}, "
            f"{original['ci'][1]:.3f}] | {share(decoy['rate'])} | {verdict} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_export_options(parser, RUN)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=1000)
    parser.add_argument("--results-name", default="phi_candidate_search")
    args = parser.parse_args()
    started = time.perf_counter()
    representer_file, spec, representer, pseudonymizer, label = export_setup(args)
    documents = read_corpus(args.data_root / args.test, args.format, split=args.test_split)
    test = ExportedNotes(sentences(documents, label), pseudonymizer, reads_chars(representer))
    attack = phi_candidate_search(representer, test, k=args.candidates, tokens=args.tokens, seed=args.seed)
    command = "python experiments/phi_candidate_search.py " + " ".join(sys.argv[1:])
    result = {"date": str(date.today()), "commit": git_commit(), "command": command.strip(),
              "representer": str(representer_file), "embeddings": spec, "language": args.language,
              "test": args.test + (f" ({args.test_split})" if args.test_split else ""),
              "pseudonymization": args.pseudonymization, "neighbours": args.neighbours, "seed": args.seed,
              "attack": attack, "seconds": round(time.perf_counter() - started, 1)}
    write_results(args.results_name, table(result), result)


if __name__ == "__main__":
    main()
