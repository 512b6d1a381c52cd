"""The experiments' result tables and files (built from hand-made result rows, nothing is
trained): the headline is the official i2b2 2014 token HIPAA F1, every score column names its
measure, the bootstrap interval has a column, and the project tokenizer's F1 stays beside it."""

import argparse
import json

import pytest

import adversarial
import classic_baselines
import export_schemes
import federation
import noise_lookup
import results_files
import tagger_baselines
import tagger_ensemble
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY
from results_files import SCORE_COLUMNS, over_seeds, results_file, score_header

OFFICIAL = COLUMN_TITLES[PRIMARY]  # "token HIPAA F1 (official i2b2 2014 tokenization)"
PROJECT = COLUMN_TITLES["token_hipaa_f1"]  # "token HIPAA F1 (project tokenizer)"


def scores(official: float, project: float) -> dict:
    """A `deidpool.corpus.metrics.score_row` whose official and project numbers differ, so a table that
    shows the wrong one is caught."""
    row = {}
    for measure, f1 in (("token_official_hipaa", official), ("token_hipaa", project), ("token_all", project),
                        ("entity_strict", 0.25)):
        row.update({f"{measure}_precision": f1 + 0.01, f"{measure}_recall": f1 - 0.01, f"{measure}_f1": f1,
                    f"{measure}_f1_interval": [f1 - 0.05, f1 + 0.05]})
    return row


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def column(lines: list[str], title: str) -> list[str]:
    """The cells under `title` in a Markdown table."""
    index = cells(lines[0]).index(title)
    return [cells(line)[index] for line in lines[2:]]


def test_over_seeds_gives_mean_and_sd_intervals_per_seed_and_marks_unscored_rows():
    rows = [scores(0.8, 0.5), scores(0.9, 0.6)]
    assert over_seeds(rows, PRIMARY) == "0.8500 ± 0.0707"
    assert over_seeds(rows[:1], PRIMARY) == "0.8000"
    assert over_seeds(rows, "token_official_hipaa_f1_interval") == "[0.7500, 0.8500] [0.8500, 0.9500]"
    assert over_seeds([*rows, {"token_hipaa_f1": 0.7}], PRIMARY) == "n/a"
    assert score_header().split(" | ")[2:5] == [OFFICIAL, COLUMN_TITLES["token_official_hipaa_f1_interval"], PROJECT]


def baseline_row(seed: int, official: float, project: float, **extra) -> dict:
    return {"corpus": "physionet", "name": "GloVe + casing", "seed": seed,
            "key": f"physionet/GloVe + casing/seed{seed}",
            "epochs": 3, "train_seconds": 60.0, "epoch_seconds": 20.0, "test_sentences": 100, "predict_seconds": 1.0,
            **scores(official, project), **extra}


def table_lines(text: str, number: int = 0) -> list[str]:
    """The lines of the `number`th Markdown table in `text` (paragraphs around it left out)."""
    tables, previous = [], ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    return tables[number]


def test_tagger_baselines_table_reports_the_official_f1_over_seeds():
    text = tagger_baselines.table([baseline_row(0, 0.8, 0.5, commit="abc1234", max_epochs=25, patience=5),
                                   baseline_row(1, 0.9, 0.6, commit="abc1234", max_epochs=25, patience=5)])
    assert text.startswith("Commits abc1234; 25 epochs max, patience 5;")
    lines = table_lines(text)
    assert column(lines, OFFICIAL) == ["0.8500 ± 0.0707"]
    assert column(lines, PROJECT) == ["0.5500 ± 0.0707"]
    assert column(lines, COLUMN_TITLES["token_official_hipaa_f1_interval"]) == ["[0.7500, 0.8500] [0.8500, 0.9500]"]


def test_tagger_baselines_table_adds_the_pattern_layer_row_once_every_seed_has_it():
    lines = table_lines(tagger_baselines.table([baseline_row(0, 0.8, 0.5, patterns=scores(0.9, 0.85)),
                                                baseline_row(1, 0.9, 0.6, patterns=scores(0.95, 0.9))]))
    assert column(lines, "configuration") == ["GloVe + casing", "GloVe + casing + patterns"]
    assert column(lines, OFFICIAL) == ["0.8500 ± 0.0707", "0.9250 ± 0.0354"]
    lines = table_lines(tagger_baselines.table([baseline_row(0, 0.8, 0.5, patterns=scores(0.9, 0.85)),
                                                baseline_row(1, 0.9, 0.6)]))
    assert column(lines, "configuration") == ["GloVe + casing"]


def test_tagger_ensemble_table_sets_the_ensemble_beside_its_seeds():
    alone = [baseline_row(0, 0.8, 0.5, patterns=scores(0.9, 0.85)),
             baseline_row(1, 0.9, 0.6, patterns=scores(0.95, 0.9))]
    date = {"precision": 0.9, "recall": 0.5, "f1": 0.6429, "f1_interval": [0.5, 0.7], "tp": 5, "fp": 1, "fn": 5,
            "found_recall": 0.6}
    run = {"command": "python experiments/tagger_ensemble.py --results-name baselines", "commit": "abc1234",
           "date": "2020-01-02", "results_name": "baselines"}
    text = tagger_ensemble.table({"results": [{"name": "GloVe + casing", "alone": alone, "ensemble": scores(0.88, 0.7),
                                               "patterns": scores(0.96, 0.9),
                                               "per_category": {"ensemble": {"DATE": date}}}], "record": run})
    assert text.startswith("Seed ensembles of the taggers of baselines.md (commit abc1234; command "
                           "`python experiments/tagger_ensemble.py --results-name baselines`): ")
    lines = table_lines(text)
    assert column(lines, "decoding") == ["seeds alone", "ensemble of 2", "seeds alone + patterns",
                                         "ensemble of 2 + patterns"]
    assert column(lines, OFFICIAL) == ["0.8500 ± 0.0707", "0.8800", "0.9250 ± 0.0354", "0.9600"]
    categories = table_lines(text, 1)
    assert column(categories, "category") == ["DATE"] and column(categories, "R") == ["0.5000"]
    assert column(categories, "found") == ["0.6000"]


def test_tagger_ensemble_table_has_no_pattern_rows_for_meddocan():
    alone = [baseline_row(0, 0.8, 0.5), baseline_row(1, 0.9, 0.6)]
    fechas = {"precision": 0.99, "recall": 0.5, "f1": 0.6644, "tp": 10, "fp": 0, "fn": 10}
    run = {"command": "python experiments/tagger_ensemble.py", "commit": "abc1234", "results_name": "baselines"}
    text = tagger_ensemble.table({"results": [{"corpus": "meddocan", "name": "FastText + casing", "alone": alone,
                                               "ensemble": scores(0.88, 0.7), "per_type": {"FECHAS": fechas}}],
                                  "record": run})
    lines = table_lines(text)
    assert column(lines, "corpus") == ["meddocan", "meddocan"]
    assert column(lines, "decoding") == ["seeds alone", "ensemble of 2"]
    types = table_lines(text, 2)
    assert column(types, "type") == ["FECHAS"] and column(types, "R") == ["0.5000"] and column(types, "fn") == ["10"]


def test_export_schemes_table_reports_seeds_patterns_and_the_ensemble(tmp_path):
    rows = [{"scheme": "groups", "seed": seed, **scores(f1, f1 - 0.1), "patterns": scores(f1 + 0.05, f1)}
            for seed, f1 in ((0, 0.8), (1, 0.9))]
    rows.append({"scheme": "groups", "seed": "ensemble", **scores(0.88, 0.8), "patterns": scores(0.93, 0.9)})
    args = argparse.Namespace(run=tmp_path, neighbours=100, seeds=[0, 1])
    lines = table_lines(export_schemes.table(rows, args))
    assert column(lines, "tagger") == ["alone", "+ patterns"]
    assert column(lines, f"{OFFICIAL}, mean ± sd") == ["0.8500 ± 0.0707", "0.9000 ± 0.0707"]
    assert [cell.split()[0] for cell in column(lines, f"seed ensemble, {OFFICIAL} [95% CI]")] == ["0.8800", "0.9300"]
    old = [{k: v for k, v in row.items() if k != "patterns"} for row in rows]  # an earlier version's rows
    assert column(table_lines(export_schemes.table(old, args)), "tagger") == ["alone"]


def test_classic_baselines_table_reports_the_official_f1_of_its_own_and_cited_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    for stem in ("baselines", "adversarial_smoke"):
        results_file(stem, ".json").parent.mkdir(parents=True, exist_ok=True)
    results_file("baselines", ".json").write_text(json.dumps([baseline_row(0, 0.8, 0.5), baseline_row(1, 0.9, 0.6)]))
    old = {k: v for k, v in scores(0.7, 0.4).items() if not k.startswith("token_official")}  # scored before
    results_file("adversarial_smoke", ".json").write_text(json.dumps([{"name": "three-phase N=100", "train_seconds": 60,
                                                                  "budget": {"max_epochs": 1}, "retrained": old}]))
    own = {"key": "physionet/crf", "corpus": "physionet", "kind": "crf", "name": classic_baselines.NAMES["crf"],
           "note": "c2=0.1", "val_f1": 0.7, "train_seconds": 60.0, "test_notes": 10, "predict_seconds": 1.0,
           **scores(0.75, 0.45)}
    lines = classic_baselines.table([own]).splitlines()
    assert column(lines, OFFICIAL) == ["0.7500", "0.8500 ± 0.0707", "n/a"]
    assert column(lines, PROJECT) == ["0.4500", "0.5500 ± 0.0707", "0.4000"]


def audited(name: str, official: float, project: float) -> dict:
    heads = {"heads": {"same": {"rate": 0.5}}, "verdict": "chance", "accuracy": 0.5}
    return {"name": name, "procedure": "three-phase", "neighbours": 100, "train_seconds": 600,
            "joint": scores(official, project), "retrained": scores(official - 0.1, project - 0.1),
            "budget": {"pretrain_epochs": 1, "max_epochs": 1, "audit_epochs": 2},
            "audit": {"attacks": {"target/fresh": heads}, "lookup": {"target": {"rate": 0.9}},
                      "inversion": {"target": {"top1": 0.1, "top10": 0.2}}, "verdict": "broken"}}


def test_adversarial_table_reports_the_official_f1_of_both_taggers():
    lines = adversarial.table([audited("three-phase N=100", 0.8, 0.5)],
                              [baseline_row(0, 0.9, 0.6, neighbours=100)]).splitlines()
    assert len({len(cells(line)) for line in lines}) == 1
    assert column(lines, f"{OFFICIAL}, joint tagger") == ["0.9000", "0.8000"]
    assert column(lines, f"{OFFICIAL}, tagger retrained on exports") == ["", "0.7000"]
    assert column(lines, f"{PROJECT}, tagger retrained on exports") == ["", "0.4000"]
    assert column(lines, "verdict") == ["", "broken"]


def test_noise_lookup_table_reports_the_official_f1_of_both_taggers():
    row = {"factor": 2, "mean_output_stddev": 0.1, "lookup": {"rate": 0.6, "sentences": 50},
           "joint": scores(0.8, 0.5), "retrained": scores(0.7, 0.4)}
    lines = noise_lookup.table([row], noise_lookup.ROOT / "runs" / "x").splitlines()[2:]
    assert column(lines, f"{OFFICIAL}, run's tagger") == ["0.8000"]
    assert column(lines, f"{OFFICIAL}, tagger retrained on exports") == ["0.7000"]
    assert column(lines, f"{COLUMN_TITLES['token_official_hipaa_f1_interval']}, run's tagger") == ["[0.7500, 0.8500]"]


def federation_seed(official: dict[str, float]) -> dict:
    rows = {f"{name}@{split}": {**scores(official.get(name, 0.6), 1 - official.get(name, 0.6)), "epochs": 2}
            for name in ("raw", "pseudo", *federation.POOLS) for split in ("test", "site_c")}
    rows["audit"] = {"verdict": "broken", "fresh_accuracy": 0.5, "lookup_rate": 0.9, "p3_adversary_accuracy": 0.5}
    rows["budget"] = {"p1": 1, "p3": 1, "tagger_epochs": 2, "patience": 1, "audit_epochs": 2}
    return rows


def test_federation_report_and_its_targets_use_the_official_f1(tmp_path, monkeypatch):
    monkeypatch.setattr(federation, "REPO", tmp_path)
    monkeypatch.setattr(results_files, "RESULTS", tmp_path / "results")
    for seed, pooled in ((0, 0.8), (1, 0.9)):
        (tmp_path / "runs" / "federation" / f"seed-{seed}").mkdir(parents=True)
        rows = federation_seed({"pooled": pooled, "provider-only": 0.7, "raw": 0.9})
        (tmp_path / "runs" / "federation" / f"seed-{seed}" / "rows.json").write_text(json.dumps(rows))
    federation.report([0, 1], "federation", "physionet")
    text = results_file("federation", ".md").read_text()
    lines = [line for line in text.splitlines() if line.startswith("| tagger") or line.startswith("| pooled: ")]
    assert lines[0] == "| tagger | scored on | " + score_header(SCORE_COLUMNS) + " |"
    assert column([lines[0], "", lines[1]], OFFICIAL) == ["0.8500 ± 0.0707"]
    assert column([lines[0], "", lines[1]], PROJECT) == ["0.1500 ± 0.0707"]
    assert f"Headline: {OFFICIAL}." in text


def test_federation_refuses_seeds_scored_before_the_official_measure(tmp_path, monkeypatch):
    monkeypatch.setattr(federation, "REPO", tmp_path)
    monkeypatch.setattr(results_files, "RESULTS", tmp_path / "results")
    rows = federation_seed({})
    for key in rows["pooled@test"].copy():
        if key.startswith("token_official"):
            del rows["pooled@test"][key]
    (tmp_path / "runs" / "federation" / "seed-0").mkdir(parents=True)
    (tmp_path / "runs" / "federation" / "seed-0" / "rows.json").write_text(json.dumps(rows))
    with pytest.raises(SystemExit, match=r"seeds \[0\] were scored before the official i2b2 2014"):
        federation.report([0], "federation", "physionet")


def test_results_json_puts_lists_of_scalars_and_a_notes_spans_on_one_line():
    data = {"f1": [0.91, 0.92], "predicted": {"n1": [[0, 4, "FECHAS"], [9, 13, "CALLE"]], "n2": []},
            "text": "ends in [\n a bracket", "rows": [{"interval": [0.1, 0.2]}], "mixed": [[1, [2, 3]]]}
    text = results_files.json_text(data)
    assert json.loads(text) == data
    assert '"f1": [0.91, 0.92],' in text and '"n1": [[0, 4, "FECHAS"], [9, 13, "CALLE"]],' in text
    assert '"interval": [0.1, 0.2]' in text and text.endswith("}\n")
