"""experiments/audit_seeds.py: audits of one representer under several seeds side by side, from
hand-made report folders (nothing is trained)."""

import json

import pytest

import audit_seeds


def write_report(folder, seed: int, target: float, **config) -> None:
    """A report folder as `deidpool audit` leaves it, with the target's T2 head at `target`."""
    heads = {"t1": {"rate": 0.5, "trials": 176}, "t2": {"rate": target, "trials": 176},
             "combined": {"rate": 0.5, "trials": 176}}
    metrics = {"verdict": "consistent with chance" if target <= 0.55 else "broken", "path": "export", "neighbours": 100,
               "epochs": 20, "passes": 7, "held_out_pairs": 176, "chance_bound": 0.55, "control_threshold": 0.8,
               "attacker_design": "pooled",
               "attacks": {"target/fresh": {"heads": heads},
                           "p1/fresh": {"heads": {"t2": {"rate": 0.9, "trials": 176}}}},
               "lookup": {"target": {"rate": 0.47, "trials": 176}},
               "inversion": {"target": {"top1": 0.1, "top10": 0.4}},
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


def test_a_report_from_before_held_out_draws_were_recorded_counts_as_one_draw(tmp_path, monkeypatch):
    write_report(tmp_path / "old", 0, 0.5)
    write_report(tmp_path / "new", 1, 0.5, held_out_draws=1)
    write_report(tmp_path / "five", 2, 0.5, held_out_draws=5)
    monkeypatch.setattr("sys.argv", ["audit_seeds.py", str(tmp_path / "old"), str(tmp_path / "new"),
                                     "--results-name", str(tmp_path / "out")])
    audit_seeds.main()
    assert (tmp_path / "out.md").exists()
    monkeypatch.setattr("sys.argv", ["audit_seeds.py", str(tmp_path / "old"), str(tmp_path / "five"),
                                     "--results-name", str(tmp_path / "refused")])
    with pytest.raises(SystemExit, match="differ in held_out_draws"):
        audit_seeds.main()


def test_an_unfinished_audit_is_named(tmp_path):
    (tmp_path / "running").mkdir()
    with pytest.raises(SystemExit, match="running: no finished audit report"):
        audit_seeds.read_report(tmp_path / "running")


def test_target_outputs_are_pooled_over_seeds_and_judged_by_the_chance_rule(tmp_path):
    write_report(tmp_path / "a", 0, 97 / 176)  # over 0.55 alone
    write_report(tmp_path / "b", 1, 80 / 176)
    text = audit_seeds.table([audit_seeds.read_report(tmp_path / name) for name in "ab"], "Audits")
    pooled = text.split("## Target outputs pooled over the seeds")[1].splitlines()
    # the seeds ask about the same 176 pairs: the pooled rate, on one seed's 176 effective answers
    assert "| target/fresh (t2) | 177 / 352 | 0.503 | 176 | [0.430, 0.576] | inconclusive |" in pooled
    assert "| lookup: target | 166 / 352 | 0.472 | 176 | [0.399, 0.545] | inconclusive |" in pooled
    assert not any(line.startswith("| p1/") for line in pooled)  # controls are not target outputs
    assert "outputs: A result is broken when its 95% Wilson interval leaves out 0.5" in "\n".join(pooled)


def test_pooled_outputs_read_each_seeds_effective_answers(tmp_path):
    """Clustered answers (design effect 2) halve what the pooled interval is read on."""
    for name, seed in (("a", 0), ("b", 1)):
        write_report(tmp_path / name, seed, 0.5)
        metrics = json.loads((tmp_path / name / "metrics.json").read_text())
        heads = metrics["attacks"]["target/fresh"]["heads"]
        heads["t2"] = {"rate": 0.5, "trials": 4000, "effective_trials": 2000}
        (tmp_path / name / "metrics.json").write_text(json.dumps(metrics))
    text = audit_seeds.table([audit_seeds.read_report(tmp_path / name) for name in "ab"], "Audits")
    row = next(line for line in text.splitlines() if line.startswith("| target/fresh (t2) | 4000 / 8000"))
    assert "| 2000 | [0.478, 0.522] | consistent with chance |" in row
