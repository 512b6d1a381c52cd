"""Statistics of the shared corpora (PhysioNet deid per split, MEDDOCAN train/dev) with the
GloVe OOV rate; writes experiments/results/quality/corpus_stats.md and .json."""

from __future__ import annotations

import sys
from pathlib import Path

from deidpool.corpus.formats import read_corpus
from deidpool.corpus.stats import corpus_stats
from deidpool.representer.embeddings import load_embeddings
from results_files import write_results

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PARTS = [("physionet", split, DATA / "physionet-deid", "physionet", split)
         for split in ("provider", "site_a", "site_b", "site_c", "test")]
PARTS += [("meddocan", part, DATA / "meddocan" / part / "brat", "brat", None) for part in ("train", "dev")]
COLUMNS = ("documents", "sentences", "tokens", "phi_tokens", "spans")


def main() -> None:
    if not DATA.exists():
        sys.exit(f"reference corpora not found at {DATA} (they live in ../shared/data beside the repository)")
    glove = load_embeddings("glove")
    rows = []
    for corpus, part, path, fmt, split in PARTS:
        stats = corpus_stats(read_corpus(path, fmt, split=split), glove.is_known)
        rows.append({"corpus": corpus, "part": part, **stats})
    lines = ["| corpus | part | " + " | ".join(COLUMNS) + " | GloVe OOV | GloVe OOV (PHI) | top categories |",
             "|---|---|" + "---:|" * (len(COLUMNS) + 2) + "---|"]
    for row in rows:
        top = ", ".join(f"{name} {count}" for name, count in list(row["spans_per_category"].items())[:4])
        lines.append(f"| {row['corpus']} | {row['part']} | " + " | ".join(f"{row[c]:,}" for c in COLUMNS)
                     + f" | {row['oov_rate']:.2%} | {row['oov_rate_phi']:.2%} | {top} |")
    write_results("corpus_stats", "\n".join(lines), rows)


if __name__ == "__main__":
    main()
