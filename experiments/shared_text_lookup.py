"""What pseudonymization alone leaves to a two-candidate test (issue: privacy): the lookup attack A2
on PhysioNet `test` with no representer at all, on the raw text (bare) and on its pseudonymized
copy as `client export` would make it (export path), for N in {10, 100, 500}, both
pseudonymization schemes, three seeds of five draws each.
Writes experiments/results/privacy/shared_text_lookup.{md,json}.

    python experiments/shared_text_lookup.py

On the export path the attacker holds a sentence S and S' (one PHI token o replaced by a
neighbour s) and sees the embeddings of a fresh pseudonymization of S; a surrogate is drawn
among the N neighbours of o, a set centred on o, so it tends to lie closer to o than to s. A
rate above 0.5 here is leaked by the pseudonymization itself, whatever the representer does on
top. Under the groups scheme a surrogate is drawn from a group that o and s share, so nothing
tells them apart, and a rate above 0.5 is the lookup's preference for the real word (a real PHI
word lies nearer the other members of its group than a drawn one): handed the fake sentence's
export, the lookup prefers the real word just as often, and both directions together sit at 0.5.
The re-identification bound (experiments/reidentification_bound.py) answers another
question, the recovery of o among all possible originals.
"""

from __future__ import annotations

import sys

from adversarial import DATA, load_data, sentences
from deidpool.adversary.audit import raw_embeddings
from deidpool.adversary.lookup import lookup_attack
from deidpool.adversary.pairs import PairSource
from deidpool.adversary.verdicts import chance_verdict
from deidpool.pseudonymization.pseudonymize import Pseudonymizer
from deidpool.pseudonymization.schemes import EMBEDDING_SCHEMES
from deidpool.representer.embeddings import load_glove_default
from results_files import spread, write_results

NEIGHBOURS = (10, 100, 500)
SEEDS = (0, 1, 2)
DRAWS = 5  # fakes per sentence and seed, as in the audits of held-out pairs


def main() -> None:
    if not DATA.is_dir():
        sys.exit(f"PhysioNet deid not found at {DATA} (it lives in ../shared/data beside the repository)")
    test = sentences(load_data()[2])
    embeddings = load_glove_default()
    rows = []
    for scheme in EMBEDDING_SCHEMES:
        for n in NEIGHBOURS:
            for export_path in (False, True):
                pairs = PairSource(test, Pseudonymizer(embeddings, n, scheme), export_path=export_path)
                results = [lookup_attack(raw_embeddings, pairs, seed, draws=DRAWS) for seed in SEEDS]
                rows.append(_row(scheme, n, export_path, len(pairs), results))
    lines = ["Lookup attack A2 with no representer (the text's GloVe embeddings), PhysioNet `test`, one fake "
             f"partner per PHI sentence and draw, {DRAWS} draws, seeds {', '.join(map(str, SEEDS))}. `rate` is "
             "handed the original's export (the audits' lookup), `fake's export` the fake sentence's, `both` the "
             "two together (each candidate the true one half the time): a preference for one candidate that the "
             "export does not cause raises `rate` and lowers `fake's export` alike and leaves `both` at 0.5.", "",
             "| scheme | N | path | trials | rate mean ± sd | verdicts | fake's export mean ± sd "
             "| both mean ± sd | verdicts (both) |", "|---|---:|---|---:|---|---|---|---|---|"]
    lines += [f"| {r['scheme']} | {r['neighbours']} | {r['path']} | {r['trials']} | {spread(r['rates'])} "
              f"| {', '.join(r['verdicts'])} | {spread(r['fake_rates'])} | {spread(r['both_rates'])} "
              f"| {', '.join(r['both_verdicts'])} |" for r in rows]
    write_results("shared_text_lookup", "\n".join(lines), rows)


def _row(scheme: str, n: int, export_path: bool, sentences: int, results: list[dict]) -> dict:
    return {"scheme": scheme, "neighbours": n, "path": "export" if export_path else "bare", "sentences": sentences,
            "trials": results[0]["trials"],
            "rates": [r["rate"] for r in results], "fake_rates": [r["fake_rate"] for r in results],
            "both_rates": [r["both_rate"] for r in results],
            "verdicts": [chance_verdict(r["rate"], r["trials"])["verdict"] for r in results],
            "both_verdicts": [chance_verdict(r["both_rate"], 2 * r["trials"])["verdict"] for r in results]}


if __name__ == "__main__":
    main()
