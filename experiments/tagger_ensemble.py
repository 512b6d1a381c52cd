"""Seed ensembles of the taggers that experiments/tagger_baselines.py trained (issue: quality):
each configuration's seed runs decoded as one (representer/ensemble.py: mean unary scores under
the mean CRF transitions), beside each seed alone, on PhysioNet `test` (with and without the
English pattern layer, overall and per i2b2 category) and MEDDOCAN dev; writes
experiments/results/quality/<results name>_ensemble.{md,json}, the JSON with the ensembles'
predicted spans (tagger_layers.py scores them with the pattern layer and the PHI memory).

    python experiments/tagger_ensemble.py [--results-name baselines_f1_stopping]
"""

from __future__ import annotations

import argparse
import json
import sys

from deidpool.client.patterns import with_patterns
from deidpool.corpus.metrics import evaluate_corpus, format_score, score_row
from deidpool.representer.ensemble import TaggerEnsemble
from deidpool.representer.tagger_runs import load_tagger_run, predict_documents
from pattern_layer import scores as category_scores
from results_files import SCORE_COLUMNS, over_seeds, record, results_file, score_header, write_results
from tagger_baselines import DATA, RUNS, SCORED, load_data, run_folder, stored_predictions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-name", default="baselines_f1_stopping",
                        help="the tagger_baselines results whose runs to ensemble")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"reference corpora not found at {DATA} (they live in ../shared/data beside the repository)")
    rows = json.loads(results_file(args.results_name, ".json").read_text())
    results = []
    for corpus, name in dict.fromkeys((r["corpus"], r["name"]) for r in rows):
        seeds = [r for r in rows if (r["corpus"], r["name"]) == (corpus, name)]
        if len(seeds) < 2:
            continue
        test = load_data(corpus)[2]
        members = [load_tagger_run(run_folder(RUNS / args.results_name, r)) for r in seeds]
        tagger, setup, vectors = members[0]
        if any(config["tag_vocabulary"] != setup["tag_vocabulary"] for _, config, _ in members):
            sys.exit(f"the runs of {name} have different tag vocabularies")
        ensemble = TaggerEnsemble([member for member, _, _ in members])
        predicted = predict_documents(ensemble, setup, vectors, test)
        scored = evaluate_corpus(test, predicted)
        alone = [{key: value for key, value in r.items() if key != "predicted"} for r in seeds]
        result = {"corpus": corpus, "name": name, "seeds": [r["seed"] for r in seeds], "alone": alone,
                  "ensemble": score_row(scored, SCORED), "per_type": scored["entity_strict"]["per_type"],
                  "predicted": stored_predictions(predicted)}  # for tagger_layers.py
        if corpus == "physionet":  # the pattern layer and the i2b2 categories are English notes'
            merged = [with_patterns(d) for d in predicted]
            result.update({"patterns": score_row(evaluate_corpus(test, merged), SCORED),
                           "per_category": {"ensemble": category_scores(test, predicted)["per_category"],
                                            "ensemble + patterns": category_scores(test, merged)["per_category"]}})
        results.append(result)
        print(f"{corpus} {name}: ensemble of {len(seeds)} seeds done", flush=True)
    data = {"results": results, "record": record(results_name=args.results_name)}
    write_results(f"{args.results_name}_ensemble", table(data), data)


def table(data: dict) -> str:
    """The page of results JSON `data`: its results and the run's record (commit, command, the
    results name of the ensembled taggers)."""
    results, run = data["results"], data["record"]
    lines = [f"Seed ensembles of the taggers of {run['results_name']}.md (commit {run['commit']}; command "
             f"`{run['command']}`): mean unary scores of the seeds' taggers under their mean CRF "
             "transitions, on PhysioNet `test` and MEDDOCAN dev; the single seeds as mean ± sd. '+ patterns' "
             "(PhysioNet): merged with the pattern layer as `client deidentify --patterns` does.", "",
             "| corpus | configuration | decoding | " + score_header(), "|---|---|---|" + "---:|" * len(SCORE_COLUMNS)]
    for result in results:
        alone = result["alone"]
        rows = [("seeds alone", alone), (f"ensemble of {len(alone)}", [result["ensemble"]])]
        if all("patterns" in r for r in alone) and "patterns" in result:
            rows += [("seeds alone + patterns", [r["patterns"] for r in alone]),
                     (f"ensemble of {len(alone)} + patterns", [result["patterns"]])]
        lines += [f"| {result.get('corpus', 'physionet')} | {result['name']} | {what} | "
                  + " | ".join(over_seeds(scored, c) for c in SCORE_COLUMNS) + " |" for what, scored in rows]
    lines += ["", "Per i2b2 category (official i2b2 2014 tokens of HIPAA types, spans of the category on both sides; "
              "found: recall of the category's tokens under any predicted label).", "",
              "| configuration | decoding | category | P | R | F1 | F1 95% CI | tp | fp | fn | found |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for result in results:
        for decoding, categories in result.get("per_category", {}).items():
            for category, c in categories.items():
                cells = [_share(c["precision"]), _share(c["recall"]), _share(c["f1"]), format_score(c["f1_interval"]),
                         str(c["tp"]), str(c["fp"]), str(c["fn"]), _share(c["found_recall"])]
                lines.append(f"| {result['name']} | {decoding} | {category} | " + " | ".join(cells) + " |")
    lines += ["", "Entity strict per type of the seed ensemble (i2b2 2014 types; MEDDOCAN's mapped to them).", "",
              "| corpus | configuration | type | P | R | F1 | tp | fp | fn |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for result in results:
        for kind, c in result.get("per_type", {}).items():
            cells = [_share(c["precision"]), _share(c["recall"]), _share(c["f1"]), str(c["tp"]), str(c["fp"]),
                     str(c["fn"])]
            lines.append(f"| {result.get('corpus', 'physionet')} | {result['name']} | {kind} | " + " | ".join(cells)
                         + " |")
    return "\n".join(lines)


def _share(value) -> str:
    return "-" if value is None else f"{value:.4f}"


if __name__ == "__main__":
    main()
