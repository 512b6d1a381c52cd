"""experiments/audit_seeds.py: audits of one representer under several seeds side by side, from
hand-made report folders (nothing is trained)."""

import json

import pytest

import audit_seeds


def write_report(folder, seed: int, target: float, **config) -> None:
    """A report folder as `deidpool audit` leaves it, with the target's T2 head at `target`."""
    heads = {"t1": {"rate": 0.5}, "t2": {"rate": target}, "combined": {"rate": 0.5}}
    metrics = {"verdict": "consistent with chance" if target <= 0.55 else "broken", "path": "export", "neighbours": 100,
               "epochs": 20, "passes": 7, "held_out_pairs": 176, "chance_bound": 0.55, "control_threshold": 0.8,
               "attacker_design": "pooled",
               "attacks": {"target/fresh": {"heads": heads}, "p1/fresh": {"heads": {"t2": {"rate": 0.9}}}},
               "lookup": {"target": {"rate": 0.47}}, "inversion": {"target": {"top1": 0.1, "top10": 0.4}},
               "inversion_baselines": {"frequency": {"top1": 0.12, "top10": 0.35}},
               "bound": {"overall": {"mean_success": {"uniform": 0.05}}}}
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps(metrics))
    (folder / "config.json").write_text(json.dumps({"seed": seed, "representer": "rep.keras", "neighbours": 100,
                                                    **config}))


def test_each_seed_gets_a_column_and_every_measurement_its_mean_and_sd(tmp_path):
    write_report(tmp_path / "a", 0, 0.50)
    write_report(tmp_path / "b", 1, 0.60)
    text = audit_seeds.table([audit_seeds.read_report(tmp_path / name) for name in "ab"], "Audits")
    lines = text.splitlines()
    assert "| overall | consistent with chance | broken |" in lines
    assert "| target/fresh (t2) | 0.500 | 0.600 | 0.550 ± 0.071 |" in lines
    assert "| lookup: target | 0.470 | 0.470 | 0.470 ± 0.000 |" in lines
    assert "| inversion baseline frequency top-10 | 0.350 | 0.350 | 0.350 ± 0.000 |" in lines
    assert "| bound, uniform prior | 0.050 | 0.050 | 0.050 ± 0.000 |" in lines
    assert "attacker design pooled" in text


def test_audits_that_differ_in_more_than_the_seed_are_refused(tmp_path, monkeypatch):
    write_report(tmp_path / "a", 0, 0.5)
    write_report(tmp_path / "b", 1, 0.5, neighbours=500)
    monkeypatch.setattr("sys.argv", ["audit_seeds.py", str(tmp_path / "a"), str(tmp_path / "b"),
                                     "--results-name", str(tmp_path / "out")])
    with pytest.raises(SystemExit, match="differ in neighbours"):
        audit_seeds.main()
    assert not (tmp_path / "out.md").exists()


def test_an_unfinished_audit_is_named(tmp_path):
    (tmp_path / "running").mkdir()
    with pytest.raises(SystemExit, match="running: no finished audit report"):
        audit_seeds.read_report(tmp_path / "running")
