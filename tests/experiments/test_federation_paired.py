"""experiments/federation_paired.py's table on hand-made per-note counts (nothing is trained): each
seed's difference gets a paired interval, and the mean over seeds one of its own."""

import federation
import federation_paired
from deidpool.corpus.metrics import COLUMN_TITLES, PRIMARY, Counts
from federation import PATTERNS

NOTES = 60


def counts(tp: int, fp: int, fn: int, every: int = 1) -> list[Counts]:
    """Per-note counts: `tp`, `fp`, `fn` in every note, one more false negative in every `every`-th."""
    return [Counts(tp, fp, fn + (index % every == 0)) for index in range(NOTES)]


def test_a_consistent_gain_is_resolved_and_a_gain_in_one_seed_only_is_not():
    made = {}
    for seed in (0, 1):
        for suffix in ("", PATTERNS):
            made[seed, "raw", suffix] = counts(10, 0, 0)
            made[seed, "raw-provider", suffix] = counts(9, 0, 1)
            made[seed, "provider-only", suffix] = counts(8, 1, 1, every=2)
            # seed 0: pooled finds more in every note; seed 1: pooled equals provider-only
            made[seed, "pooled", suffix] = counts(9, 1, 0, every=3) if seed == 0 else counts(8, 1, 1, every=2)
    rows = federation_paired.paired_rows(made, [0, 1], federation_paired.COMPARISONS)
    assert [(row["comparison"], row["patterns"]) for row in rows] == [
        ("pooled - provider-only", False), ("pooled - provider-only", True),
        ("non-private - pooled", False), ("non-private - pooled", True),
        ("non-private: all notes - provider's notes", False), ("non-private: all notes - provider's notes", True)]
    gain = rows[0]
    low, high = gain["seeds"][0]["interval"]
    assert 0 < low < gain["seeds"][0]["difference"] < high
    assert gain["seeds"][1] == {"difference": 0.0, "interval": [0.0, 0.0]}
    assert gain["mean"]["difference"] == gain["seeds"][0]["difference"] / 2
    assert gain["mean"]["interval"][1] < high  # half the gain, and no wider
    lines = federation.paired_table(rows, [0, 1], COLUMN_TITLES[PRIMARY])
    assert lines[0].startswith("| difference (token HIPAA F1 (official i2b2 2014 tokenization), points) | tagger |")
    assert lines[2].startswith(f"| pooled - provider-only | alone | {gain['seeds'][0]['difference']:+.1f} [")
    assert lines[2].endswith("| target >= +3 in every seed |")
    assert lines[-1].startswith("A single seed's paired 95% interval spans 0.0 to ")


def test_a_baseline_experiment_adds_each_representation_tagger_against_its_namesake():
    compared = federation_paired.comparisons("federation_reference")
    assert compared[:3] == list(federation_paired.COMPARISONS)
    made = {}
    for suffix in ("", PATTERNS):
        made[0, "raw", suffix] = made[0, "raw-provider", suffix] = counts(10, 0, 0)
        made[0, "provider-only", suffix] = made[0, "provider-only (federation_reference)", suffix] = counts(8, 1, 1)
        made[0, "pooled", suffix] = counts(9, 1, 0, every=3)
        made[0, "pooled (federation_reference)", suffix] = counts(8, 1, 1, every=2)
    rows = federation_paired.paired_rows(made, [0], compared)
    titles = [row["comparison"] for row in rows if not row["patterns"]]
    assert titles[3:] == ["pooled - pooled (federation_reference)",
                          "provider-only - provider-only (federation_reference)"]
    against = {row["comparison"]: row for row in rows if not row["patterns"]}
    assert against["pooled - pooled (federation_reference)"]["seeds"][0]["interval"][0] > 0
    assert against["provider-only - provider-only (federation_reference)"]["seeds"][0] == {
        "difference": 0.0, "interval": [0.0, 0.0]}
    assert federation_paired.comparisons(None) == list(federation_paired.COMPARISONS)


def test_the_page_states_the_records_date_commit_command_and_baseline():
    made = {(0, name, suffix): counts(9, 1, 0) for name in ("raw", "raw-provider", "pooled", "provider-only",
                                                            "pooled (base)", "provider-only (base)")
            for suffix in ("", PATTERNS)}
    rows = federation_paired.paired_rows(made, [0], federation_paired.comparisons("base"))
    run = {"command": "python experiments/federation_paired.py --seeds 0 --results-name fed --baseline base",
           "commit": "abc1234", "date": "2020-01-02", "seeds": [0], "results_name": "fed", "baseline": "base"}
    page = federation_paired.report({"notes": NOTES, "rows": rows, "record": run}).splitlines()
    assert page[0] == "# Federation experiment: paired differences on PhysioNet `test` (fed)"
    assert page[2].startswith(f"2020-01-02, commit abc1234; {NOTES} test notes. Command: `{run['command']}`. ")
    assert page[2].endswith("Every rescored F1 equals the one in fed.json and base.json.")
    assert page[4].endswith("| seed 0 | mean over seeds | target |")
    trained = federation_paired.report({"notes": NOTES, "rows": rows, "record": {**run, "trained_at": ["0aa0000"]}})
    assert trained.splitlines() == [page[2].replace("commit abc1234", "trained at 0aa0000; reported at abc1234")
                                    if index == 2 else line for index, line in enumerate(page)]
