"""The computed re-identification bound of pseudonymize-then-represent exports (pseudonymization.bound)
of PhysioNet's `test` split and of all its training splits, per PHI category, for N = 10, 100
and 500 with GloVe: the best attacker's success at naming an original PHI token from an exactly
recovered surrogate, under a uniform, a word-frequency and the export's own (empirical) prior
(the training splits pooled as one export). Writes
experiments/results/privacy/reidentification_bound.md and .json (reidentification_bound_groups.* with
`--pseudonymization groups`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from deidpool.corpus.formats import read_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.pseudonymization.bound import reidentification_bound
from deidpool.pseudonymization.pseudonymize import SCHEMES, Pseudonymizer
from deidpool.pseudonymization.schemes import PRIORS
from deidpool.representer.embeddings import load_embeddings
from results_files import write_results

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "physionet-deid"
PARTS = {"test": ["test"], "training splits": ["provider", "site_a", "site_b", "site_c"]}


def phi_tokens(splits: list[str], pseudonymizer: Pseudonymizer) -> list[tuple]:
    """The bound's tokens (`Pseudonymizer.phi_tokens`) of every gold PHI token of the splits, as
    `client export` sees them."""
    return [token for split in splits for document in read_corpus(DATA, "physionet", split=split)
            for sentence in prepare_document(document)
            for token in pseudonymizer.phi_tokens([t.text for t in sentence.tokens], sentence.tags)]


def table(rows: list[dict]) -> str:
    head = ["data", "N", "category", "PHI tokens", "hidden",
            *(f"{what} {p}" for what in ("mean", "worst") for p in PRIORS), "1/N"]
    lines = ["| " + " | ".join(head) + " |", "|---|---:|---|" + "---:|" * (len(head) - 3)]
    for row in rows:
        for name, summary in [*row["bound"]["categories"].items(), ("all", row["bound"]["overall"])]:
            cells = [summary[f"{what}_success"][p] for what in ("mean", "worst") for p in PRIORS]
            lines.append(f"| {row['data']} | {row['neighbours']} | {name} | {summary['occurrences']:,} | "
                         f"{summary['hidden']:,} | " + " | ".join("-" if c is None else f"{c:.4f}" for c in cells)
                         + f" | {1 / row['neighbours']:.4f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--neighbours", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--pseudonymization", choices=SCHEMES, default="neighbours")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"PhysioNet deid not found at {DATA} (it lives in ../shared/data beside the repository)")
    glove = load_embeddings("glove")
    rows = []
    for data, splits in PARTS.items():
        tokens = phi_tokens(splits, Pseudonymizer(glove, 1, args.pseudonymization))  # the same for every N
        for n in args.neighbours:
            started = time.perf_counter()
            bound = reidentification_bound(tokens, Pseudonymizer(glove, n, args.pseudonymization))
            rows.append({"data": data, "neighbours": n, "bound": bound,
                         "seconds": round(time.perf_counter() - started, 1)})
            print(f"{data}, N = {n}: {rows[-1]['seconds']} s", file=sys.stderr)
    suffix = "" if args.pseudonymization == "neighbours" else f"_{args.pseudonymization}"
    write_results(f"reidentification_bound{suffix}", table(rows), rows)


if __name__ == "__main__":
    main()
