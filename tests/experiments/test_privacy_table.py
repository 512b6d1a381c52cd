"""experiments/privacy_table.py: the privacy experiment's table, gathered from hand-made result
files of the other experiments (nothing is trained)."""

import json
import math

import pytest

import privacy_table
import results_files
from deidpool.corpus.metrics import PRIMARY

REFERENCE = "/work/x/runs/adversarial_reference/three-phase_N100_raw_export"


def audit(target: float, *, path: str = "export", neighbours: int = 100, shared_text: float = 0.52,
          verdict: str = "consistent with chance") -> dict:
    """Audit metrics whose strongest attack on the target is `target` (its T1 head); the bound
    only on the export path, as `deidpool audit` reports it."""
    metrics = {"verdict": verdict, "path": path, "neighbours": neighbours, "held_out_pairs": 176,
            "attacks": {"target/fresh": {"heads": {"t1": {"rate": target}, "t2": {"rate": 0.45}}},
                        "raw/fresh": {"heads": {"t1": {"rate": 0.99}}}},
            "lookup": {"target": {"rate": 0.40}, "raw": {"rate": 1.0}, "shared text": {"rate": shared_text}},
            "inversion": {"target": {"top1": 0.1, "top10": 0.4}},
            "inversion_baselines": {"frequency": {"top1": 0.12, "top10": 0.35}},
            "bound": {"overall": {"mean_success": {"uniform": 0.05, "frequency": 0.06, "empirical": 0.5}}}}
    if path != "export":
        del metrics["bound"], metrics["lookup"]["shared text"]
    return metrics


def audit_file(representer: str, *metrics: dict, scheme: str = "groups") -> dict:
    """What audit_seeds.py writes for audits of `representer`."""
    return {"audits": [{"metrics": m, "config": {"representer": f"{representer}/training/models/representer.keras",
                                                 "pseudonymization": scheme}} for m in metrics]}


def tagger_file(run: str, scheme: str, neighbours: int, f1s: list[float]) -> dict:
    rows = [{"scheme": scheme, "neighbours": neighbours, "seed": seed, PRIMARY: f1, "patterns": {PRIMARY: f1 + 0.1}}
            for seed, f1 in enumerate(f1s)]
    return {"run": run, "rows": [*rows, {"scheme": scheme, "neighbours": neighbours, "seed": "ensemble", PRIMARY: 1.0}]}


def representer_rows() -> list[dict]:
    return [{"name": "three-phase N=100, raw export", "procedure": "three-phase", "train_seconds": 600.0,
             "audit": audit(0.80, path="representer", verdict="broken")},
            {"name": "three-phase N=100, raw export, seed 1", "procedure": "three-phase", "train_seconds": 1200.0,
             "audit": audit(0.90, path="representer", verdict="broken")}]


def baseline_rows() -> list[dict]:
    common = {"corpus": "physionet", "train_seconds": 60.0}
    return [{**common, "name": "GloVe + casing", "seed": 0, PRIMARY: 0.9, "patterns": {PRIMARY: 0.95}},
            {**common, "name": "pseudonymized N=100, groups", "neighbours": 100, "scheme": "groups", "seed": 0,
             PRIMARY: 0.85},
            {**common, "name": "originals + pseudonymized copies N=100, groups", "neighbours": 100,
             "scheme": "groups", "keep_originals": True, "seed": 0, PRIMARY: 0.1},
            {**common, "corpus": "meddocan", "name": "FastText + casing", "seed": 0, PRIMARY: 0.1}]


def gathered() -> privacy_table.Gathered:
    found = privacy_table.Gathered()
    found.add_representers("adversarial_reference", representer_rows())
    found.add_audits(audit_file(REFERENCE, audit(0.50), audit(0.60)))
    found.add_audits(audit_file(f"{REFERENCE}_seed_1", audit(0.45), audit(0.70, neighbours=500, shared_text=0.9)))
    found.add_taggers(tagger_file(REFERENCE, "groups", 100, [0.70, 0.80]))
    found.add_taggers(tagger_file(f"{REFERENCE}_seed_1", "groups", 100, [0.85]))
    found.add_taggers(tagger_file(REFERENCE, "raw", 1, [0.82]))
    found.add_baselines(baseline_rows())
    return found


def by_configuration(rows: list[dict]) -> dict[str, dict]:
    return {row["configuration"]: row for row in rows}


def test_run_folders_are_read_from_absolute_and_relative_paths():
    assert privacy_table.run_of(f"{REFERENCE}/training/models/representer.keras") == \
        "adversarial_reference/three-phase_N100_raw_export"
    assert privacy_table.run_of("runs/adversarial_reference/x_seed_1/training") == "adversarial_reference/x_seed_1"
    assert privacy_table.run_of("runs/adversarial_reference/x") == "adversarial_reference/x"


def test_numbers_are_averaged_per_representer_then_over_representers():
    rows = by_configuration(privacy_table.summarise(gathered()))
    groups = rows["paper representer, groups export N=100"]
    assert (groups["representers"], groups["audits"], groups["taggers"]) == (2, 3, 3)
    assert groups["attack"] == pytest.approx([0.55, 0.45])  # seed 0's two audits averaged first
    assert groups["f1"] == pytest.approx([0.75, 0.85])
    assert groups["f1_patterns"] == pytest.approx([0.85, 0.95])  # the ensemble row is left out
    assert groups["verdicts"] == {"consistent with chance": 3}
    assert groups["bound"]["empirical"] == pytest.approx([0.5, 0.5])
    assert groups["train_minutes"] == pytest.approx([10.0, 20.0])
    raw = rows["paper representer, raw export"]
    assert raw["attack"] == pytest.approx([0.80, 0.90]) and raw["f1"] == pytest.approx([0.82])
    assert rows["paper representer, groups export N=500"]["attack"] == pytest.approx([0.70])


def test_baselines_take_the_text_lookup_of_audits_at_their_scheme_and_n():
    rows = by_configuration(privacy_table.summarise(gathered()))
    assert set(rows) >= {"non-private tagger (raw text)", "pseudonymized text, groups N=100"}
    assert not any("originals" in name or "FastText" in name for name in rows)
    assert rows["non-private tagger (raw text)"]["attack"] == [privacy_table.RAW_TEXT]
    text = rows["pseudonymized text, groups N=100"]
    assert text["attack"] == pytest.approx([0.52, 0.52, 0.52])  # not the N = 500 audit's 0.9
    assert text["bound"]["uniform"] == pytest.approx([0.05] * 3)


def test_table_gives_mean_and_sd_and_says_how_many_each_cell_rests_on():
    lines = privacy_table.table(privacy_table.summarise(gathered()), {"audits": ["a"]}).splitlines()
    row = next(line for line in lines if line.startswith("| paper representer, groups export N=100 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1:6] == ["2 / 3 / 3", "0.8000 ± 0.0707", "0.9000 ± 0.0707", "0.500 ± 0.071",
                          "3 consistent with chance"]
    assert cells[8] == "0.050 ± 0.000 / 0.060 ± 0.000 / 0.500 ± 0.000"
    raw = next(line for line in lines if line.startswith("| paper representer, raw export |"))
    assert "2 broken" in raw and "| - |" in raw  # no bound for a raw export


def test_main_reads_each_file_from_its_group_and_writes_the_table_and_plot_and_names_a_missing_file(
        tmp_path, monkeypatch):
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    files = {"adversarial_reps": representer_rows(), "audit_reps": audit_file(REFERENCE, audit(0.5)),
             "export_schemes_reps": tagger_file(REFERENCE, "groups", 100, [0.8]), "baselines_reps": baseline_rows()}
    for name, data in files.items():
        results_files.results_file(name, ".json").parent.mkdir(exist_ok=True)
        results_files.results_file(name, ".json").write_text(json.dumps(data))
    arguments = ["--representers", "adversarial_reps", "--audits", "audit_reps", "--taggers", "export_schemes_reps",
                 "--baselines", "baselines_reps", "--results-name", "privacy_table_reps"]
    monkeypatch.setattr("sys.argv", ["privacy_table.py", *arguments])
    privacy_table.main()
    text = (tmp_path / "privacy" / "privacy_table_reps.md").read_text()
    assert "| paper representer, groups export N=100 | 1 / 1 / 1 | 0.8000 |" in text
    assert "the largest of 3 target rates on 176 held-out pairs each is itself expected at 0.532, not 0.5" in text
    stored = json.loads((tmp_path / "privacy" / "privacy_table_reps.json").read_text())
    assert stored["sources"]["taggers"] == ["export_schemes_reps"]
    assert (tmp_path / "privacy" / "privacy_table_reps_pareto.png").stat().st_size > 0
    monkeypatch.setattr("sys.argv", ["privacy_table.py", *arguments[:-2], "--taggers", "export_schemes_absent"])
    with pytest.raises(SystemExit, match="privacy/export_schemes_absent.json: no such results file"):
        privacy_table.main()


def test_the_strongest_of_several_rates_at_chance_is_expected_above_one_half():
    assert privacy_table.chance_maximum(1, 176) == pytest.approx(0.5)
    assert privacy_table.chance_maximum(2, 100) == pytest.approx(0.5 + 0.05 / math.sqrt(math.pi), abs=1e-4)
    assert 0.54 < privacy_table.chance_maximum(7, 176) < 0.56
    assert len(privacy_table.target_rates(audit(0.5))) == 3  # two heads of the fresh adversary and the lookup
