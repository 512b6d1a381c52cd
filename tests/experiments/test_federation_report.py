"""experiments/federation.py's report parts on hand-made rows (nothing is trained): the targets
are judged in every seed, and the growth table lists the pools from 1 to 4 institutions."""

import json

import federation
from corpus.metrics import PRIMARY


def rows(f1: dict[str, float], sentences: dict[str, int] | None = None) -> dict:
    """One seed's rows: every tagger on `test`, alone and with the pattern layer (+0.1)."""
    made = {}
    for name, value in f1.items():
        for suffix, extra in (("", 0.0), (federation.PATTERNS, 0.1)):
            made[f"{name}{suffix}@test"] = {PRIMARY: value + extra, "epochs": 3,
                                            "sentences": (sentences or {}).get(name, 0), "epoch_seconds": 2.0}
    return made


def test_the_pooled_gain_must_reach_three_points_in_every_seed():
    per_seed = {0: rows({"pooled": 0.90, "provider-only": 0.80, "raw": 0.91}),
                1: rows({"pooled": 0.82, "provider-only": 0.80, "raw": 0.91})}
    line = federation.target_lines(per_seed, [0, 1], "")[0]
    assert "= +6.0 F1 points" in line  # the mean gain passes ...
    assert "MISSED; per seed seed 0 +10.0, seed 1 +2.0" in line  # ... but seed 1 does not
    assert "non-private - pooled = 5.0 points (target <= 1.5: MISSED)." in line
    per_seed[1] = rows({"pooled": 0.85, "provider-only": 0.80, "raw": 0.86})
    assert "(target >= +3 in every seed: met;" in federation.target_lines(per_seed, [0, 1], "")[0]


def test_the_growth_table_goes_from_one_to_four_institutions():
    f1 = {"provider-only": 0.70, "pooled-2": 0.75, "pooled-no-c": 0.78, "pooled": 0.80}
    sentences = {"provider-only": 7000, "pooled-2": 12000, "pooled-no-c": 19000, "pooled": 27000}
    table = [line for line in federation.growth_lines({0: rows(f1, sentences)}, [0]) if line.startswith("| ")]
    assert [line.split(" | ")[:3] for line in table[1:]] == [
        ["| 1", "provider", "7,000"], ["| 2", "provider + site_a", "12,000"],
        ["| 3", "provider + site_a + site_b", "19,000"], ["| 4", "provider + site_a + site_b + site_c", "27,000"]]
    assert table[-1].endswith("| 0.800 | 0.900 |")


def test_the_report_keeps_the_seeds_stored_in_its_results_file(tmp_path):
    stored = tmp_path / "federation_reference.json"
    stored.write_text(json.dumps({"seeds": {"0": {"from": "file"}, "1": {"from": "file"}}}))
    for seed in (1, 2):
        (tmp_path / "runs" / f"seed-{seed}").mkdir(parents=True)
        (tmp_path / "runs" / f"seed-{seed}" / "rows.json").write_text(json.dumps({"from": "run"}))
    per_seed = federation.finished_seeds([1, 2, 3], tmp_path / "runs", stored)
    assert per_seed == {0: {"from": "file"}, 1: {"from": "run"}, 2: {"from": "run"}}
    assert federation.finished_seeds([0], tmp_path / "absent", tmp_path / "absent.json") == {}


def test_pooling_without_privacy_is_reported_only_where_every_seed_has_the_provider_text_tagger():
    per_seed = {0: rows({"pooled": 0.80, "provider-only": 0.78, "raw": 0.90, "raw-provider": 0.84}),
                1: rows({"pooled": 0.80, "provider-only": 0.78, "raw": 0.90, "raw-provider": 0.88})}
    lines = federation.target_lines(per_seed, [0, 1], "")
    assert lines[1] == ("Pooling without privacy: non-private on all training notes - non-private on the provider's "
                        "notes = +4.0 points (per seed seed 0 +6.0, seed 1 +2.0).")
    assert ("non-private, provider's notes only (raw GloVe)", "raw-provider", "test") in \
        federation.present_rows(per_seed)
    per_seed[1] = rows({"pooled": 0.80, "provider-only": 0.78, "raw": 0.90})  # run before it was added
    assert len(federation.target_lines(per_seed, [0, 1], "")) == 1
    assert "raw-provider" not in [name for _, name, _ in federation.present_rows(per_seed)]
