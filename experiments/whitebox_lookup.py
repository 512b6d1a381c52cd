"""How much stronger is the lookup attack (A2) when the attacker drops the noise on its own side?
(issue: privacy). The representer is public: an attacker who knows a candidate sentence can
represent it without noise, so that only the shared representation is noisy. For trained
three-phase runs, this measures on PhysioNet `test` the lookup rate with the stored side noisy
(as audits did before 2026-11-24) and noise-free (as they do now), for the final and the P1
representer, on the bare path and the export path, under both pseudonymization schemes.

    python experiments/whitebox_lookup.py [--runs RUN ...] [--neighbours 100] [--seeds 0 1 2]

Writes results/privacy/whitebox_lookup.{md,json}.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from adversarial import DATA, ROOT, load_data, sentences
from deidpool.adversary.audit import attacker_reference
from deidpool.adversary.lookup import lookup_attack
from deidpool.adversary.pairs import PairSource
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.pseudonymization.schemes import EMBEDDING_SCHEMES
from deidpool.representer.embeddings import load_glove_default
from deidpool.representer.representation import load_representer
from deidpool.representer.threads import configure_threads
from results_files import write_results

RUNS = [ROOT / "runs" / "adversarial_reference" / "three-phase_N100_raw_export",
        ROOT / "runs" / "adversarial_export" / "three-phase_N100"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, nargs="+", default=RUNS)
    parser.add_argument("--neighbours", type=int, default=100)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"PhysioNet deid not found at {DATA} (it lives in ../shared/data beside the repository)")
    configure_threads()
    test, embeddings = sentences(load_data()[2]), load_glove_default()
    rows = []
    for run in args.runs:
        for model in ("representer", "representer_p1"):
            representer = load_representer(run / "training" / "models" / f"{model}.keras")
            reference = attacker_reference(representer)
            for scheme in EMBEDDING_SCHEMES:
                for export_path in (False, True):
                    pairs = PairSource(test, Pseudonymizer(embeddings, args.neighbours, scheme),
                                       export_path=export_path)
                    rows.append({"run": run.name, "model": "P1" if model.endswith("p1") else "final", "scheme": scheme,
                                 "path": "export" if export_path else "bare", "sentences": len(pairs),
                                 "noisy": [lookup_attack(representer, pairs, seed)["rate"] for seed in args.seeds],
                                 "noise_free": [lookup_attack(representer, pairs, seed, reference=reference)["rate"]
                                                for seed in args.seeds]})
                    print(rows[-1], flush=True)
    write_results("whitebox_lookup", table(rows, args), rows)


def table(rows: list[dict], args) -> str:
    def cell(rates):
        return f"{np.mean(rates):.3f} ({', '.join(f'{r:.3f}' for r in rates)})"

    lines = [f"Lookup attack A2 on PhysioNet `test` (one fake partner per PHI sentence), N = {args.neighbours}, "
             f"seeds {', '.join(map(str, args.seeds))}: rate with the attacker's stored representations noisy "
             "and noise-free (the white-box attacker audits now use). Chance 0.5.", "",
             "| run | representer | scheme | path | sentences | stored noisy: mean (seeds) "
             "| stored noise-free: mean (seeds) |",
             "|---|---|---|---|---:|---|---|"]
    lines += [f"| {r['run']} | {r['model']} | {r['scheme']} | {r['path']} | {r['sentences']} | {cell(r['noisy'])} "
              f"| {cell(r['noise_free'])} |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
