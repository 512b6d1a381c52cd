"""How far the shuffled sentences of one export can be linked back to their documents
(adversary.linkage) on PhysioNet `test` and `site_a` with GloVe: the PHI surrogates of both
pseudonymization schemes at N = 10, 100 and 500 (3 seeds of draws), beside the raw PHI (no
pseudonymization, the upper reference), the PHI tags alone (which categories a sentence holds,
shared in the clear) and the non-PHI words every export carries whatever N (the PHI-free
reference). Documents are PhysioNet notes; a patient's notes share PHI, so the
patient is scored as a unit too. Writes experiments/results/privacy/document_linkage.md and .json.

    python experiments/document_linkage.py
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from deidpool.adversary.linkage import linkage_metrics, pair_scores, seen_phi
from deidpool.corpus.formats import read_corpus
from deidpool.corpus.prepare import prepare_document
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.pseudonymization.schemes import EMBEDDING_SCHEMES
from deidpool.representer.embeddings import load_embeddings
from results_files import write_results

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "physionet-deid"
UNITS = {"note": lambda note: note, "patient": lambda note: note.split("-")[0]}  # PhysioNet ids: patient-note
METRICS = ("auc", "precision_at_1", "reassembled")


def phi_sentences(split: str) -> tuple[list, list[str]]:
    """The sentences of the split that hold PHI, and the note each comes from."""
    found = [(document.id, sentence) for document in read_corpus(DATA, "physionet", split=split)
             for sentence in prepare_document(document) if any(tag != "O" for tag in sentence.tags)]
    return [sentence for _, sentence in found], [note for note, _ in found]


def context_words(sentence, embeddings, pseudonymizer: Pseudonymizer) -> list[tuple[str, str]]:
    """The sentence's non-PHI words (and numbers) that pseudonymization would replace if they
    were PHI and the representer sees, as tokens of one category "O"."""
    return [(token.text, "O") for token, tag in zip(sentence.tokens, sentence.tags)
            if tag == "O" and pseudonymizer.replaceable(token.text) and embeddings.is_known(token.text)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--splits", nargs="+", default=["test", "site_a"])
    parser.add_argument("--neighbours", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"PhysioNet deid not found at {DATA} (it lives in ../shared/data beside the repository); "
                 "nothing measured")
    glove = load_embeddings("glove")
    rows = []
    for split in args.splits:
        sentences, notes = phi_sentences(split)
        plain = Pseudonymizer(glove, 1)
        raw = [seen_phi([token.text for token in s.tokens], s.tags, glove) for s in sentences]
        views = {"raw PHI": raw, "PHI tags only": [[("*", category) for _, category in tokens] for tokens in raw],
                 "non-PHI words": [context_words(s, glove, plain) for s in sentences]}
        for name, tokens in views.items():
            rows.append(_row(split, name, None, args.seeds[0], tokens, glove, None, notes))
        for scheme in EMBEDDING_SCHEMES:
            for n in args.neighbours:
                pseudonymizer = Pseudonymizer(glove, n, scheme)
                for seed in args.seeds:
                    rng = random.Random(seed)
                    tokens = [seen_phi(pseudonymizer.sentence(s, rng), s.tags, glove) for s in sentences]
                    rows.append(_row(split, scheme, n, seed, tokens, glove, pseudonymizer, notes))
    run = {"date": str(date.today()), "commit": _commit(), "seeds": args.seeds,
           "command": "python experiments/document_linkage.py" + "".join(f" {a}" for a in sys.argv[1:])}
    write_results("document_linkage", table(rows, run), {**run, "rows": rows})


def _row(split, view, n, seed, tokens, embeddings, pseudonymizer, notes) -> dict:
    started = time.perf_counter()
    scores = pair_scores(tokens, embeddings, pseudonymizer)
    metrics = {unit: linkage_metrics(scores, [name(note) for note in notes], seed) for unit, name in UNITS.items()}
    row = {"split": split, "view": view, "neighbours": n, "seed": seed, "seen_tokens": sum(map(len, tokens)),
           "seconds": round(time.perf_counter() - started, 2), **metrics}
    print(f"{split} {view} N={n} seed {seed}: {row['seconds']} s", file=sys.stderr)
    return row


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                           text=True)
    return found.stdout.strip() or "unknown"


def table(rows: list[dict], run: dict) -> str:
    lines = [f"Linkage of the shuffled PHI sentences of one export back to their note and patient "
             f"(adversary.linkage), GloVe, seeds {', '.join(map(str, run['seeds']))} of the draws (mean ± sd; "
             f"the groups scheme does not depend on them). {run['date']}, commit {run['commit']}, "
             f"`{run['command']}`.", "",
             "Views: the PHI surrogates of one export under each scheme and N, as exactly as the text reads them; "
             "raw PHI (no pseudonymization, the upper reference); PHI tags only (which categories a sentence "
             "holds, shared in the clear); non-PHI words (content words and numbers outside PHI, in every export "
             "whatever N). The export shuffles sentences across documents, so only content links them; exporting "
             "whole documents (shuffled only among each other) would keep every link (1.0 in every column). "
             "AUC over all pairs mostly measures which categories sentences share (the tags alone reach it); "
             "precision at 1 is where "
             "surrogates add to the tags."]
    for split in dict.fromkeys(row["split"] for row in rows):
        first = next(row for row in rows if row["split"] == split)
        lines += ["", f"PhysioNet `{split}`: {first['note']['sentences']} sentences with PHI; precision at 1 over the "
                      f"{first['note']['sentences_at_1']} ({first['patient']['sentences_at_1']}) with another of their "
                      f"note (patient), chance {first['note']['chance_at_1']:.3f} "
                      f"({first['patient']['chance_at_1']:.3f}); reassembled: share of the {first['note']['units']} "
                      f"notes ({first['patient']['units']} patients) with two or more.", "",
                  "| view | N | seen tokens | note AUC | note P@1 | notes reassembled | patient AUC | patient P@1 "
                  "| patients reassembled |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        groups = {}
        for row in rows:
            if row["split"] == split:
                groups.setdefault((row["view"], row["neighbours"]), []).append(row)
        for (view, n), found in groups.items():
            cells = [_cell([row[unit][metric] for row in found]) for unit in UNITS for metric in METRICS]
            lines.append(f"| {view} | {n or '-'} | {_cell([row['seen_tokens'] for row in found], 0)} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(values: list, digits: int = 3) -> str:
    if any(v is None for v in values):
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


if __name__ == "__main__":
    main()
