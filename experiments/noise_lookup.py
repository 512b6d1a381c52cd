"""How much output noise would the lookup attack (A2) need, and what would it cost the tagger?
(issue: privacy). Every trained representer so far fails the A2 lookup attack: a fresh noisy
representation of a sentence lies closer to a stored one of the same sentence than to that of
its one-token-replaced neighbour in 92-95% of the cases. This sweeps the representer's output
noise (its learned per-dimension std times a factor) on a trained three-phase run and measures,
at every level: the lookup rate on held-out `test` pairs, the run's own tagger on `test`, and
a tagger retrained from scratch on exports at that noise level (what the pooling server gets).
The lookup stores noise-free representations, as the audit's attacker does (the committed
noise_lookup.md, of 2026-11-22, stored noisy ones: a weaker attacker).

    python experiments/noise_lookup.py [--run runs/federation/seed-0/representer]
        [--factors 1 2 4 8 16 32] [--retrain-epochs 5]

The run must be one of experiments/federation.py (trained on the provider split, whose 10%
validation split with the run's seed is rebuilt here). Writes results/privacy/noise_lookup.{md,json},
and every noise level's representer to runs/noise_lookup/<seed>/x<factor>-representer.keras
(audit one with `deidpool audit`, as in results/privacy/noise_x10_audit.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import keras

from adversarial import (
    DATA,
    ROOT,
    TAGGER_COLUMNS,
    joint_predictor,
    retrained_predictor,
    retrained_tagger,
    sentences,
    test_scores,
)
from deidpool.adversary.audit import attacker_reference
from deidpool.adversary.lookup import lookup_attack
from deidpool.adversary.pairs import PairSource
from deidpool.corpus.formats import read_corpus
from deidpool.corpus.metrics import COLUMN_TITLES
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.representer.embeddings import load_embeddings
from deidpool.representer.representation import load_representer
from deidpool.representer.tagger_runs import split_documents
from results_files import over_seeds, results_file


def sweep(run: Path, factors: list[float], args) -> list[dict]:
    config = json.loads((run / "config.json").read_text())
    vocabulary, seed = config["tags"], config["seed"]
    embeddings = load_embeddings(config["embeddings"])
    provider_train, provider_valid = split_documents(read_corpus(DATA, "physionet", split="provider"), 0.1, seed)
    test_docs = read_corpus(DATA, "physionet", split="test")
    labeled = [sentences(docs) for docs in (provider_train, provider_valid)]
    held_out = PairSource(sentences(test_docs), Pseudonymizer(embeddings, config["neighbours"]))
    representer = load_representer(run / "models" / "representer.keras")
    tagger = keras.saving.load_model(run / "models" / "tagger.keras", compile=False)
    noise = representer.get_layer("output_noise")
    learned = noise.stddev.numpy()
    reference = attacker_reference(representer)  # the audit's attacker: its stored side without noise
    retrain_args = SimpleNamespace(seed=seed, tagger_units=config["units"]["tagger"],
                                   retrain_epochs=args.retrain_epochs, retrain_patience=args.retrain_epochs)
    rows = []
    for factor in factors:
        noise.assign_stddev(learned * factor)
        joint = test_scores(test_docs, joint_predictor(representer, tagger, embeddings), vocabulary)
        folder = ROOT / "runs" / "noise_lookup" / run.parent.name / f"x{factor:g}"
        folder.mkdir(parents=True, exist_ok=True)
        representer.save(folder.parent / f"x{factor:g}-representer.keras")  # for `deidpool audit`
        retrained, metrics = retrained_tagger(folder, representer, labeled, vocabulary, embeddings, 1, retrain_args)
        predict = retrained_predictor(representer, retrained, embeddings)
        rows.append({"factor": factor, "mean_output_stddev": float((learned * factor).mean()),
                     "lookup": lookup_attack(representer, held_out, seed, reference=reference),
                     "joint": joint, "retrained": test_scores(test_docs, predict, vocabulary),
                     "retrain_epochs": metrics["epochs"]})
        print(table(rows, run), flush=True)
    return rows


def table(rows: list[dict], run: Path) -> str:
    """One row per noise factor; the taggers' scores as in experiments/adversarial.py (on `test`)."""
    scores = [f"{COLUMN_TITLES[key]}, {tagger}" for tagger in ("run's tagger", "tagger retrained on exports")
              for key in TAGGER_COLUMNS]
    lines = [f"Representer: `{run.relative_to(ROOT)}`; lookup attack on held-out `test` pairs "
             f"({rows[0]['lookup']['sentences']} sentences); taggers scored on `test`.", "",
             "| output noise factor | mean output std | lookup rate | " + " | ".join(scores) + " |",
             "|---:|---:|---:|" + "---:|" * len(scores)]
    lines += [f"| {r['factor']:g} | {r['mean_output_stddev']:.3f} | {r['lookup']['rate']:.3f} | "
              + " | ".join(over_seeds([r[tagger]], key) for tagger in ("joint", "retrained") for key in TAGGER_COLUMNS)
              + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "federation" / "seed-0" / "representer")
    parser.add_argument("--factors", type=float, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--retrain-epochs", type=int, default=5)
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"PhysioNet data not found at {DATA} (it lives in ../shared/data beside the repository)")
    if not (args.run / "config.json").exists():
        sys.exit(f"{args.run}: not a run folder (no config.json); run experiments/federation.py first")
    run = args.run.resolve()
    rows = sweep(run, args.factors, args)
    results_file("noise_lookup", ".json").write_text(json.dumps(rows, indent=2) + "\n")
    results_file("noise_lookup", ".md").write_text(f"# Output noise vs the lookup attack\n\n{table(rows, run)}\n")


if __name__ == "__main__":
    main()
