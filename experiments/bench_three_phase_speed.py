"""Where a three-phase epoch spends its time: one P1 epoch and the two P3 parts (a: tagger and
adversaries on the frozen representer; b: the representer on L_deid + lambda |L_adv - log 2|),
each on the same random slice of PhysioNet training sentences, with the full-size models
(representer 128, tagger 128, adversaries 64 units, GloVe, d = 50). Every part runs twice; the
second run, after tracing, is the one to compare. Writes experiments/results/three_phase_speed.{md,json}.

    python experiments/bench_three_phase_speed.py [--sentences 3200] [--train-splits provider ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import keras
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from adversarial import DATA, REPR_SIZE, RESULTS, TRAIN_SPLITS, load_data  # noqa: E402

from adversary.procedures import AdversarialData, AlternatingTraining, DeidTraining, build_models  # noqa: E402
from adversary.runs import sentences  # noqa: E402
from corpus.tagging import tag_vocabulary  # noqa: E402
from representer.dataset import BATCH_SIZE  # noqa: E402
from representer.embeddings import load_glove_default  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=3200, help="random training sentences in the slice")
    parser.add_argument("--train-splits", nargs="+", choices=TRAIN_SPLITS, default=["provider"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"PhysioNet data not found at {DATA} (it lives in ../shared/data beside the repository)")
    train_docs, _, _ = load_data(args.train_splits)
    embeddings = load_glove_default()
    tags = tag_vocabulary({span.source_type for document in train_docs for span in document.spans})
    pool = sentences(train_docs)
    rng = np.random.default_rng(args.seed)
    chosen = [pool[i] for i in rng.choice(len(pool), min(args.sentences, len(pool)), replace=False)]
    data = AdversarialData.from_sentences(chosen, embeddings, tags, 100)
    keras.utils.set_random_seed(args.seed)
    representer, tagger, adversary = build_models(embeddings.dim, len(tags), REPR_SIZE)
    p1, p3 = DeidTraining(representer, tagger), AlternatingTraining(representer, tagger, adversary)
    parts = {"P1 epoch": lambda run: p1.train_epoch(data, run, np.random.default_rng(run)),
             "P3a part": lambda run: p3.train_part("a", data, np.random.default_rng(run)),
             "P3b part": lambda run: p3.train_part("b", data, np.random.default_rng(run))}
    seconds = {name: [] for name in parts}
    for run in (1, 2):
        for name, part in parts.items():
            started = time.perf_counter()
            part(run)
            seconds[name].append(round(time.perf_counter() - started, 1))
            print(f"run {run}, {name}: {seconds[name][-1]} s", flush=True)
    p1_seconds = seconds["P1 epoch"][1]
    lines = [f"{len(chosen)} sentences ({-(-len(chosen) // BATCH_SIZE)} batches), {len(data.pairs)} PHI sentences "
             f"giving pairs, splits {' + '.join(args.train_splits)}.", "",
             "| part | first run s (with tracing) | second run s | second run / P1 |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {first} | {second} | {second / p1_seconds:.2f} |" for name, (first, second) in seconds.items()]
    table = "\n".join(lines)
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "three_phase_speed.md").write_text(table + "\n")
    (RESULTS / "three_phase_speed.json").write_text(json.dumps(
        {"sentences": len(chosen), "pairs": len(data.pairs), "splits": args.train_splits, "seconds": seconds},
        indent=2) + "\n")


if __name__ == "__main__":
    main()
