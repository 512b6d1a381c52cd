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
Within the shape: a surrogate shows its original's visible shape (`surrogates.token_shape`, which
the bound counts as revealed), so an attacker can drop every candidate that, put at the token's
position in its span, would show another shape; each row also gives the chance within the shape (the
mean over its tokens of 1 / the candidates left, the centre always among them) and the rate of the
shape-aware attacker (the nearest of the candidates left), and the target is read against both.

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
from deidpool.pseudonymization.pseudonymize import tag_category  # noqa: E402
from deidpool.pseudonymization.surrogates import phi_spans, token_shape  # noqa: E402
from deidpool.representer.representation import reads_chars  # noqa: E402
from nonphi_readback import (  # noqa: E402
    ExportedNotes,
    add_export_options,
    candidate_distances,
    export_setup,
    exported_vectors,
    hit_line,
    hit_row,
    nearest_credit,
    sampled_targets,
    share,
)
from results_files import commit_text, git_commit, record, recorded_folder, write_results  # noqa: E402

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


def target_spans(test: ExportedNotes, targets: list[tuple[int, int]]) -> list[tuple[list[str], int, str | None]]:
    """For each target (sentence, position) of `test`: the original words of its gold PHI span, its
    position in the span and the span's label, as `Pseudonymizer.phi_tokens` reads them for the bound."""
    spans = []
    for s, i in targets:
        start, stop = test.offsets[s], test.offsets[s] + test.lengths[s]
        words, tags = test.words[start:stop], test.tags[start:stop]
        span = next(span for span in phi_spans(tags) if i in span)
        spans.append((words[span.start:span.stop], i - span.start, tag_category(tags[span.start])))
    return spans


def shown_shape(candidates: list[str], span: list[str], position: int, label: str | None, language: str) -> np.ndarray:
    """Which of `candidates` show the visible shape of the first (the search's centre) when put at
    `position` of the PHI span `span` of tag label `label`: `surrogates.token_shape`, what a surrogate
    shows of its original and the bound counts as revealed (the first always shows its own)."""
    def shape(candidate: str) -> tuple | None:
        return token_shape([*span[:position], candidate, *span[position + 1:]], position, label, language)

    own = shape(candidates[0])
    return np.array([shape(candidate) == own for candidate in candidates], bool)


def shape_search(reference, test: ExportedNotes, words: list[list[str]], targets: list[tuple[int, int]],
                 vectors: list[np.ndarray], k: int, centres: list[str]) -> dict[str, np.ndarray]:
    """The candidate search centred on `centres` (one word per target, put at the target in the copy
    `words`), as `nearest_candidate` runs it: each target's credit and number of candidates over all
    the candidates ("credits", "sizes") and over those that show the centre's shape there alone
    (`shown_shape`: "shape_credits", "shape_sizes"), from the same distances."""
    found = {name: [] for name in ("credits", "sizes", "shape_credits", "shape_sizes")}
    searched = candidate_distances(reference, test.pseudonymizer.embeddings, words, targets, vectors, k, centres,
                                   test.char_width)
    for (candidates, distances), (span, position, label) in zip(searched, target_spans(test, targets)):
        alike = shown_shape(candidates, span, position, label, test.pseudonymizer.language)
        found["credits"].append(nearest_credit(distances))
        found["sizes"].append(len(candidates))
        found["shape_credits"].append(nearest_credit(np.where(alike, distances, np.inf)))
        found["shape_sizes"].append(int(alike.sum()))
    return {name: np.array(values, float if name.endswith("credits") else int) for name, values in found.items()}


def attack_row(name: str, mask: np.ndarray, found: dict[str, np.ndarray]) -> dict:
    """`hit_row` of the targets of `mask` in `shape_search`'s `found`, with `within_shape`: the mean
    number of candidates of the centre's shape ("candidates"), the chance within the shape (the mean
    of 1 / that number, "chance") and the shape-aware attacker's "hits", "rate" and 95% Wilson "ci"."""
    row = hit_row(name, mask, found["credits"], found["sizes"])
    shaped = hit_row(name, mask, found["shape_credits"], found["shape_sizes"])
    row["within_shape"] = {"candidates": float(found["shape_sizes"][mask].mean()) if row["count"] else None,
                           "chance": shaped["chance"], "hits": shaped["hits"], "rate": shaped["rate"],
                           "ci": shaped["ci"]}
    return row


def phi_candidate_search(representer, test: ExportedNotes, *, k: int, tokens: int, seed: int = 0) -> dict:
    """The attack on `tokens` sampled PHI tokens of `test` (one export drawn with `seed`): hit rates
    with Wilson intervals and chance, for every token, the replaced ones and the kept ones, and the
    same search centred on a decoy (`decoys`) for the replaced ones; each row with its chance within
    the shape and the shape-aware attacker's rate (`attack_row`)."""
    targets = phi_targets(test, tokens, seed)
    exported = test.draw(seed)
    dim = test.pseudonymizer.embeddings.dim
    originals = [test.words[test.offsets[s] + i] for s, i in targets]
    vectors = exported_vectors(compile_representer(representer, dim), test, exported, targets)
    print(f"[phi_candidate_search] {len(targets)} PHI tokens x {k} candidates, centred on the original and on a decoy",
          flush=True)
    reference = compile_representer(attacker_reference(representer), dim)
    found = shape_search(reference, test, exported.words, targets, vectors, k, originals)
    chosen = decoys(test, targets, seed)
    kept = np.array([exported.words[s][i] == original for (s, i), original in zip(targets, originals)], bool)
    with_decoy = ~kept & np.array([decoy is not None for decoy in chosen], bool)
    picked = np.flatnonzero(with_decoy)
    decoy_found = shape_search(reference, test, exported.words, [targets[i] for i in picked],
                               [vectors[i] for i in picked], k, [chosen[i] for i in picked])
    rows = [attack_row("PHI tokens", np.ones(len(targets), bool), found),
            attack_row("replaced", ~kept, found), attack_row("kept as written", kept, found),
            attack_row("replaced, those with a decoy", with_decoy, found),
            attack_row("replaced, centred on a decoy", np.ones(len(picked), bool), decoy_found)]
    labels = np.array([test.tags[test.offsets[s] + i][2:] for s, i in targets])
    by_label = [attack_row(f"replaced {label}", ~kept & (labels == label), found)
                for label in sorted(set(labels[~kept]))]
    decoy_labels = labels[picked]
    by_label_decoy = [{"label": label,
                       "original": attack_row(label, with_decoy & (labels == label), found),
                       "decoy": attack_row(label, decoy_labels == label, decoy_found)}
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
    made = commit_text(result.get("record", result))  # where the results were trained and reported
    lines = [f"# Candidate search on the PHI of an export ({result['test']})", "",
             f"{result['date']}, {made}; command `{result['command']}` ({result['seconds']:.0f} s). "
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
    if "within_shape" in replaced:
        lines += within_shape_lines(result["attack"])
    return "\n".join(lines)


def within_shape_lines(attack: dict) -> list[str]:
    """The page's section on the chance within the shape (rows that `attack_row` wrote)."""
    rows = {row["tokens"]: row for row in attack["rows"]}
    replaced = rows["replaced"]
    within = replaced["within_shape"]
    verdict = "-" if replaced["rate"] is None else (
        "met" if replaced["ci"][1] <= TARGET_TIMES_CHANCE * within["chance"] else "not shown")
    lines = ["", "## Within the shape", "",
             "A surrogate shows its original's visible shape (`surrogates.token_shape`, which the bound counts as "
             "revealed: a number's shape set, a word's casing and place among its span's words, another token's "
             "character classes), so an attacker can drop every candidate that, put at the token's position in its "
             "span, would show another shape. Candidates of the shape: those left, the centre (the original, or the "
             "decoy) always among them; chance within the shape: the mean over the tokens of 1 / their number, what "
             "guessing uniformly among them gets (1 for a kept word, which shows itself); shape-aware attacker: the "
             "same search naming the nearest of them alone (ties share the credit).", "",
             "| tokens | sampled | hit rate | chance | candidates of the shape | chance within the shape "
             "| shape-aware attacker | 95% CI |", "|---|---|---|---|---|---|---|---|",
             *(within_line(row) for row in rows.values())]
    aware = "-" if within["rate"] is None else (
        "met" if within["ci"][1] <= TARGET_TIMES_CHANCE * within["chance"] else "not shown")
    lines += ["", f"Target against the chance within the shape: the replaced tokens' rate at most "
              f"{TARGET_TIMES_CHANCE:g} x their chance within the shape, read on the interval's upper end: "
              f"**{verdict}**"
              + ("." if replaced["rate"] is None else
                 f" ({replaced['rate'] / within['chance']:.1f} x the chance within the shape, "
                 f"{replaced['rate'] / replaced['chance']:.1f} x chance); the shape-aware attacker's: **{aware}** "
                 f"({within['rate'] / within['chance']:.1f} x the chance within the shape).")]
    labels = attack.get("labels", [])
    if labels:
        names = [label_name(row) for row in labels]
        above = {"chance": [row["rate"] > TARGET_TIMES_CHANCE * row["chance"] for row in labels],
                 "within": [row["rate"] > TARGET_TIMES_CHANCE * row["within_shape"]["chance"] for row in labels],
                 "aware": [row["within_shape"]["rate"] > TARGET_TIMES_CHANCE * row["within_shape"]["chance"]
                           for row in labels]}
        which = {key: [name for name, yes in zip(names, flags) if yes] for key, flags in above.items()}
        chance_only = [name for name in which["chance"] if name not in which["within"]]
        shape_only = [name for name in which["within"] if name not in which["chance"]]
        yes = {True: "yes", False: "no"}
        lines += ["", f"Per label (replaced tokens, labels with at least {MIN_LABEL_TOKENS} sampled; judged on the "
                      f"rate): above {TARGET_TIMES_CHANCE:g} x chance {above_list(which['chance'], len(names))}; "
                      f"above {TARGET_TIMES_CHANCE:g} x the chance within the shape "
                      f"{above_list(which['within'], len(names))}."
                  + (f" Above {TARGET_TIMES_CHANCE:g} x chance only: {', '.join(chance_only)}." if chance_only else "")
                  + (f" Above {TARGET_TIMES_CHANCE:g} x the chance within the shape only: {', '.join(shape_only)}."
                     if shape_only else "")
                  + f" The shape-aware attacker above {TARGET_TIMES_CHANCE:g} x the chance within the shape: "
                    f"{above_list(which['aware'], len(names))}.", "",
                  f"| label | sampled | hit rate | chance | above {TARGET_TIMES_CHANCE:g} x chance | chance within the "
                  f"shape | above {TARGET_TIMES_CHANCE:g} x that | shape-aware attacker | 95% CI | "
                  f"shape-aware above {TARGET_TIMES_CHANCE:g} x the chance within the shape |",
                  "|---|---|---|---|---|---|---|---|---|---|",
                  *(f"| {name} | {row['count']} | {share(row['rate'])} | {share(row['chance'])} | {yes[by_chance]} | "
                    f"{share(row['within_shape']['chance'])} | {yes[by_within]} | "
                    f"{share(row['within_shape']['rate'])} | {interval(row['within_shape']['ci'])} | {yes[by_aware]} |"
                    for name, row, by_chance, by_within, by_aware in zip(names, labels, *above.values()))]
    return lines


def within_line(row: dict) -> str:
    """An `attack_row`'s line of the within-the-shape table."""
    within = row["within_shape"]
    return (f"| {row['tokens']} | {row['count']} | {share(row['rate'])} | {share(row['chance'])} | "
            + ("-" if within["candidates"] is None else f"{within['candidates']:.1f}")
            + f" | **{share(within['chance'])}** | {share(within['rate'])} | {interval(within['ci'])} |")


def label_name(row: dict) -> str:
    """The label of a per-label row ("replaced CALLE" -> "CALLE")."""
    return row["tokens"].removeprefix("replaced ")


def above_list(names: list[str], total: int) -> str:
    """"**2 of 16** (A, B)": how many of `total` labels `names` holds, and which."""
    return f"**{len(names)} of {total}**" + (f" ({', '.join(names)})" if names else "")


def interval(ci) -> str:
    """A 95% interval as the tables print it, "-" where there is none."""
    return "-" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


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
              "attack": attack, "seconds": round(time.perf_counter() - started, 1),
              "record": record(recorded_folder(args.run))}
    write_results(args.results_name, table(result), result)


if __name__ == "__main__":
    main()
