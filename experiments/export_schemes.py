"""What each pseudonymization scheme costs the pooled tagger (issue: privacy): for one trained
three-phase run, a fresh tagger is trained on exports of the training sentences made as
`client export` makes them (raw, and every PHI token pseudonymized among N under `neighbours`
and under `groups`), as the pooling server trains on contributions, and scored on PhysioNet
`test` (official i2b2 2014 token HIPAA F1 with its bootstrap interval over notes). Seeds of the
retraining vary the tagger's initialisation and the export's draws.

    python experiments/export_schemes.py [--run runs/adversarial_reference/three-phase_N100_raw_export]
        [--neighbours 100] [--seeds 0 1 2] [--retrain-epochs 20] [--retrain-patience 3]
        [--schemes raw neighbours groups] [--results-name export_schemes]

Each scheme is also scored merged with the pattern layer (`client deidentify --patterns`) and
as the seed ensemble of its retrained taggers (representer/ensemble.py). Retrained taggers go to
<run>/<results name>/<scheme>_seed<k> (a rerun resumes them). Writes results/privacy/<results name>.{md,json}.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import keras
import numpy as np

from adversarial import (
    DATA,
    ROOT,
    load_data,
    retrained_predictor,
    retrained_tagger,
    sentences,
    test_predictions,
)
from deidpool.client.patterns import with_patterns
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, evaluate_corpus, format_score, score_row
from deidpool.corpus.tagging import tag_vocabulary
from deidpool.pseudonymization.schemes import EMBEDDING_SCHEMES, SCHEMES
from deidpool.representer.embeddings import load_glove_default
from deidpool.representer.ensemble import TaggerEnsemble
from deidpool.representer.representation import load_representer
from deidpool.representer.threads import configure_threads
from results_files import write_results

RAW = "raw"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path,
                        default=ROOT / "runs" / "adversarial_reference" / "three-phase_N100_raw_export")
    parser.add_argument("--neighbours", type=int, default=100)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--retrain-epochs", type=int, default=20)
    parser.add_argument("--retrain-patience", type=int, default=3)
    parser.add_argument("--tagger-units", type=int, default=128)
    parser.add_argument("--schemes", nargs="+", choices=(RAW, *SCHEMES), default=[RAW, *EMBEDDING_SCHEMES])
    parser.add_argument("--results-name", default="export_schemes",
                        help="results/<name>.{md,json}; the retrained taggers in <run>/<name>/")
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"PhysioNet deid not found at {DATA} (it lives in ../shared/data beside the repository)")
    configure_threads()
    train_docs, valid_docs, test_docs = load_data()
    vocabulary = tag_vocabulary({span.source_type for d in train_docs + valid_docs for span in d.spans})
    embeddings = load_glove_default()
    representer = load_representer(args.run / "training" / "models" / "representer.keras")
    labeled = [sentences(docs) for docs in (train_docs, valid_docs)]
    rows = []

    def scored(scheme: str, tagger, **row) -> dict:
        predicted = test_predictions(test_docs, retrained_predictor(representer, tagger, embeddings), vocabulary)
        return {"scheme": scheme, **row, **score_row(evaluate_corpus(test_docs, predicted)),
                "patterns": score_row(evaluate_corpus(test_docs, [with_patterns(d) for d in predicted]))}

    for scheme in args.schemes:
        taggers = []
        neighbours = 1 if scheme == RAW else args.neighbours
        for seed in args.seeds:
            folder = args.run / args.results_name / f"{scheme}_seed{seed}"
            settings = argparse.Namespace(**{**vars(args), "seed": seed})
            tagger, metrics = retrained_tagger(folder, representer, labeled, vocabulary, embeddings, neighbours,
                                               settings, scheme="neighbours" if scheme == RAW else scheme)
            rows.append(scored(scheme, tagger, neighbours=neighbours, seed=seed, epochs=metrics["epochs"]))
            print(f"{scheme} seed {seed}: {rows[-1][PRIMARY]:.4f}", flush=True)
            taggers.append(tagger)
        if len(taggers) > 1:
            rows.append(scored(scheme, TaggerEnsemble(taggers), neighbours=neighbours, seed="ensemble"))
            print(f"{scheme} ensemble of {len(taggers)}: {rows[-1][PRIMARY]:.4f}", flush=True)
        keras.backend.clear_session()
    write_results(args.results_name, table(rows, args), {"run": str(args.run), "rows": rows, "command": sys.argv})


def table(rows: list[dict], args) -> str:
    """Per scheme: the official token HIPAA F1 per seed with its interval, and mean ± sd."""
    run = args.run.resolve().relative_to(ROOT) if args.run.resolve().is_relative_to(ROOT) else args.run
    lines = [f"Tagger retrained on exports of the training splits made with the representer of `{run}`, "
             f"N = {args.neighbours}, scored on PhysioNet `test`; seeds {', '.join(map(str, args.seeds))} "
             "(tagger initialisation and export draws).", "",
             f"| export | tagger | {COLUMN_TITLES[PRIMARY]}, mean ± sd | per seed [95% bootstrap CI over notes] | "
             f"{COLUMN_TITLES['token_hipaa_f1']}, mean | seed ensemble, {COLUMN_TITLES[PRIMARY]} [95% CI] |",
             "|---|---|---|---|---|---|"]
    for scheme in dict.fromkeys(row["scheme"] for row in rows):
        own = [row for row in rows if row["scheme"] == scheme and row["seed"] != "ensemble"]
        ensemble = [row for row in rows if row["scheme"] == scheme and row["seed"] == "ensemble"]
        for tagger, pick in (("alone", lambda row: row), ("+ patterns", lambda row: row.get("patterns"))):
            if any(pick(row) is None for row in own + ensemble):
                continue  # rows of an earlier version, scored without the patterns
            f1 = [pick(row)[PRIMARY] for row in own]
            spread = f" ± {np.std(f1, ddof=1):.4f}" if len(f1) > 1 else ""
            cells = "; ".join(f"{pick(row)[PRIMARY]:.4f} {format_score(pick(row)[PRIMARY + '_interval'])}"
                              for row in own)
            together = "; ".join(f"{pick(row)[PRIMARY]:.4f} {format_score(pick(row)[PRIMARY + '_interval'])}"
                                 for row in ensemble) or "-"
            lines.append(f"| {scheme} | {tagger} | {np.mean(f1):.4f}{spread} | {cells} | "
                         f"{np.mean([pick(r)['token_hipaa_f1'] for r in own]):.4f} | {together} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
