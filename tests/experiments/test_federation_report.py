"""experiments/federation.py's report parts on hand-made rows (nothing is trained): issue #36's
targets are judged on paired intervals in every seed, the growth table lists the pools from 1 to 4
institutions, and the report reads both corpora."""

import dataclasses
import json

import pytest

import federation
import results_files
from deidpool.corpus.metrics import PRIMARY, Counts
from tests.experiments.test_result_tables import cells

NOTES = 60
HEADLINE = "entity_strict_f1"


def per_note(tp: int, fp: int, fn: int, every: int = 0) -> list[list[int]]:
    """Per-note counts as rows.json keeps them: `tp`, `fp`, `fn` in every note, one more false
    negative in every `every`-th (none when 0)."""
    return [[tp, fp, fn + (every > 0 and index % every == 0)] for index in range(NOTES)]


def rows(counts: dict[str, list[list[int]]], sentences: dict[str, int] | None = None) -> dict:
    """One seed's rows on `test`, alone and with the pattern layer (the same counts), with both
    measures' per-note counts and their F1 as the row's scores."""
    made = {"budget": {"p1": 1, "p3": 1, "tagger_epochs": 2, "patience": 1, "audit_epochs": 1}}
    for name, notes in counts.items():
        score = federation.f1(notes)
        for suffix in ("", federation.PATTERNS):
            made[f"{name}{suffix}@test"] = {PRIMARY: score, HEADLINE: score, "epochs": 3, "epoch_seconds": 2.0,
                                            "sentences": (sentences or {}).get(name, 0),
                                            federation.NOTE_COUNTS: {measure: notes for measure in
                                                                     federation.MEASURES.values()}}
    return made


def paired(per_seed: dict) -> list[dict]:
    seeds = sorted(per_seed)
    return federation.paired_rows(federation.note_counts(per_seed, seeds, "entity_strict"), seeds)


SITE_RAW = {f"raw-{site}": per_note(7, 1, 3) for site in federation.SITES}


def test_the_targets_are_judged_on_paired_intervals():
    good = {"raw": per_note(10, 0, 0), "raw-provider": per_note(8, 0, 2), "provider-only": per_note(8, 0, 2),
            "pooled": per_note(10, 0, 0, every=4), **SITE_RAW}
    lines = federation.target_lines(paired({0: rows(good), 1: rows(good)}), [0.80, 0.85, 0.88, 0.90])
    gap, gain, view, growth = lines[:3] + lines[-1:]
    assert gap.startswith("- Representation gap (alone): pooled exports - raw text = -1.2 [")
    assert gap.endswith("(target > -1.0: MISSED).")
    assert "(target >= 0.8 x with the interval above 0: met)" in gain
    assert view.endswith("(target > 0 for every site in every seed: met).")
    assert growth == ("- Growth curve (alone): 0.800 / 0.850 / 0.880 / 0.900 for 1 to 4 institutions (target: "
                      "rises with every institution: met).")
    weak = {**good, "pooled": per_note(8, 0, 2, every=2), "raw-site_b": per_note(9, 0, 1)}  # seed 1 only
    lines = federation.target_lines(paired({0: rows(good), 1: rows(weak)}), [0.80, 0.85, 0.84, 0.90])
    assert "MISSED" in lines[1] and lines[2].endswith("in every seed: MISSED).") and lines[-1].endswith("MISSED).")


def test_comparisons_whose_taggers_a_seed_lacks_are_left_out():
    old = {"raw": per_note(10, 0, 0), "provider-only": per_note(8, 0, 2), "pooled": per_note(9, 0, 1)}
    titles = {row["comparison"] for row in paired({0: rows(old)})}
    assert titles == {"representation gap: pooled exports - raw text (all notes)",
                      "pooling gain through exports: pooled - provider-only"}
    assert federation.target_lines(paired({0: rows(old)}), [])[0].startswith("- Representation gap (alone)")


def test_note_counts_split_the_pattern_layer_rows_from_the_tagger_alone():
    seed = rows({"pooled": per_note(9, 1, 0)})
    seed["pooled+patterns@test"][federation.NOTE_COUNTS]["entity_strict"] = per_note(10, 0, 0)
    found = federation.note_counts({3: seed}, [3], "entity_strict")
    assert set(found) == {(3, "pooled", ""), (3, "pooled", federation.PATTERNS)}
    assert federation.as_counts(found[3, "pooled", federation.PATTERNS])[0] == Counts(10, 0, 0)
    assert federation.as_counts(found[3, "pooled", ""])[0] == Counts(9, 1, 0)


def test_the_growth_table_goes_from_one_to_four_institutions():
    f1 = {"provider-only": per_note(7, 0, 3), "pooled-2": per_note(8, 0, 2), "pooled-no-c": per_note(9, 0, 1),
          "pooled": per_note(10, 0, 0)}
    sentences = {"provider-only": 7000, "pooled-2": 12000, "pooled-no-c": 19000, "pooled": 27000}
    table = [line for line in federation.growth_lines({0: rows(f1, sentences)}, [0], HEADLINE, "F1")
             if line.startswith("| ")]
    assert [line.split(" | ")[:3] for line in table[1:]] == [
        ["| 1", "provider", "7,000"], ["| 2", "provider + site_a", "12,000"],
        ["| 3", "provider + site_a + site_b", "19,000"], ["| 4", "provider + site_a + site_b + site_c", "27,000"]]
    assert table[-1].endswith(f"| {federation.f1(f1['pooled']):.3f} | {federation.f1(f1['pooled']):.3f} |")


def test_the_report_keeps_the_seeds_stored_in_its_results_file_and_unfinished_runs_wait(tmp_path):
    stored = tmp_path / "federation_reference.json"
    stored.write_text(json.dumps({"seeds": {"0": {"from": "file"}, "1": {"from": "file"}}}))
    finished = {f"{name}@test": {} for name in federation.POOLS}
    for seed, made in ((1, finished), (2, finished), (3, {"raw@test": {}})):
        (tmp_path / "runs" / f"seed-{seed}").mkdir(parents=True)
        (tmp_path / "runs" / f"seed-{seed}" / "rows.json").write_text(json.dumps(made))
    per_seed = federation.finished_seeds([1, 2, 3], tmp_path / "runs", stored)
    assert per_seed == {0: {"from": "file"}, 1: finished, 2: finished}
    assert federation.finished_seeds([0], tmp_path / "absent", tmp_path / "absent.json") == {}


def test_a_meddocan_report_names_source_types_and_writes_its_tables(tmp_path, monkeypatch):
    monkeypatch.setattr(federation, "REPO", tmp_path)
    monkeypatch.setattr(results_files, "RESULTS", tmp_path / "results")
    counts = {"raw": per_note(10, 0, 0), "raw-provider": per_note(8, 0, 2), "pseudo": per_note(9, 0, 1),
              "provider-only": per_note(8, 0, 2), "pooled-2": per_note(9, 0, 1), "pooled-no-c": per_note(9, 0, 1),
              "pooled": per_note(10, 0, 0, every=4), **SITE_RAW}
    monkeypatch.setattr(results_files, "git_commit", lambda: "03684e7")
    results_files.write_run_record(tmp_path / "runs" / "federation_meddocan" / "seed-1", seed=1)  # seed 0 has none
    for seed in (0, 1):
        made = rows(counts, {name: 1000 for name in federation.POOLS})
        made["budget"]["test"] = list(federation.CORPORA["meddocan"].test)
        (tmp_path / "runs" / "federation_meddocan" / f"seed-{seed}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "runs" / "federation_meddocan" / f"seed-{seed}" / "rows.json").write_text(json.dumps(made))
    monkeypatch.setattr(results_files, "git_commit", lambda: "abbea32")
    federation.report([0, 1], "federation_meddocan", "meddocan")
    text = (tmp_path / "results" / "federation" / "federation_meddocan.md").read_text()
    assert "trained at 03684e7; reported at abbea32, Python" in text
    assert "entity strict F1 (source types)" in text and "(i2b2 types)" not in text
    assert "Test notes: `shared/data/meddocan/dev/xml` (meddocan)" in text
    assert "| non-private, site_b's own notes only (raw text) | test |" in text
    assert "- Site's view (with the pattern layer): " in text
    stored = json.loads((tmp_path / "results" / "federation" / "federation_meddocan.json").read_text())
    assert stored["corpus"] == "meddocan" and set(stored["paired"]) == {"token_official_hipaa", "entity_strict"}
    assert stored["record"]["trained_at"] == stored["trained_at"] == ["03684e7"]
    assert (tmp_path / "results" / "federation" / "federation_meddocan_growth.png").exists()


def test_seeds_run_with_other_budgets_or_test_notes_are_reported_apart(tmp_path, monkeypatch):
    monkeypatch.setattr(federation, "REPO", tmp_path)
    monkeypatch.setattr(results_files, "RESULTS", tmp_path / "results")
    for seed, test in ((0, ["shared/data/meddocan/dev/xml", "meddocan", None]), (1, ["other", "brat", None])):
        made = rows({name: per_note(9, 0, 1) for name in federation.POOLS})
        made["budget"]["test"] = test
        (tmp_path / "runs" / "x" / f"seed-{seed}").mkdir(parents=True)
        (tmp_path / "runs" / "x" / f"seed-{seed}" / "rows.json").write_text(json.dumps(made))
    with pytest.raises(SystemExit, match="different budgets"):
        federation.report([0, 1], "x", "meddocan")


def test_rows_scored_with_another_language_s_pattern_layer_are_scored_again(monkeypatch, tmp_path):
    """A Spanish seed whose "+patterns" rows an earlier version scored with the English layer gets
    them anew from each tagger's predictions, merged with the Spanish layer; the training facts stay."""
    from deidpool.corpus.document import Document, Span

    text = "Tfno: 915 555 123. Ingresa el 3 de marzo de 2018."
    date = Span(text.index("3 de"), len(text) - 1, "FECHAS", "3 de marzo de 2018")
    phone = Span(6, 17, "NUMERO_TELEFONO", "915 555 123")
    gold = [Document("n1", text, (phone, date))]
    tagger_found = [Document("n1", text, (phone,))]  # the tagger misses the date; the Spanish layer finds it
    monkeypatch.setattr(federation, "predictions", lambda folder, name, splits, vectors: {
        split: tagger_found for split in splits})
    corpus = federation.CORPORA["meddocan"]
    old = rows({name: per_note(1, 0, 1) for name in (*federation.TEXT_TAGGERS, *federation.POOLS)})
    fresh = federation.layered_rows(corpus, tmp_path, {"test": gold, "site_c": gold}, old, vectors=None)
    assert set(fresh) == {f"{name}{federation.PATTERNS}@test" for name in (*federation.TEXT_TAGGERS,
                                                                           *federation.POOLS)} | {
        f"{name}{federation.PATTERNS}@site_c" for name in federation.POOLS}
    row = fresh[f"raw{federation.PATTERNS}@test"]
    assert row["entity_strict_f1"] == 1.0 and row["epochs"] == 3  # the layer found the date
    assert row[federation.NOTE_COUNTS]["entity_strict"] == [[2, 0, 0]]
    alone = federation.test_rows(corpus, gold, tagger_found, {})[""]
    assert alone["entity_strict_f1"] < 1.0


def test_a_seed_records_the_taggers_monitor_and_units_only_where_they_are_not_the_old_defaults(tmp_path):
    """Seeds run before --monitor and --pooled-units existed (val_f1, 128 units) keep matching; a
    val_loss or 256-unit run is kept apart."""
    import argparse

    args = argparse.Namespace(p1=5, p1_patience=2, p3=3, p3_patience=2, tagger_epochs=10, patience=3,
                              audit_epochs=5, selection="loss", test=["t", "meddocan", None], monitor="val_f1",
                              **federation.REPRESENTATION, pooled_units=128)
    old = federation.run_budget(args)
    assert "monitor" not in old and set(old) == set(federation.BUDGET)
    cache = tmp_path / "rows.json"
    cache.write_text(json.dumps({"budget": old}))
    assert federation.stored_rows(cache, old)["budget"] == old
    args.monitor, args.pooled_units = "val_loss", 256
    assert federation.run_budget(args) == {**old, "monitor": "val_loss", "pooled_units": 256}
    with pytest.raises(SystemExit, match="another --results-name"):
        federation.stored_rows(cache, federation.run_budget(args))


def test_a_seed_records_the_representation_size_and_noise_only_where_they_are_not_the_default(
        tmp_path, monkeypatch):
    """--repr-size 300 --representer-units 256 --input-noise 0.03 --output-noise 0.02
    --representer-data provider+copy enter the budget (a d = 50 seed is reported apart) and the
    report's title and command."""
    import argparse

    args = argparse.Namespace(p1=5, p1_patience=2, p3=3, p3_patience=2, tagger_epochs=10, patience=3,
                              audit_epochs=5, selection="loss", test=["t", "meddocan", None], monitor="val_loss",
                              **federation.REPRESENTATION, pooled_units=128)
    default = federation.run_budget(args)
    assert not set(default) & set(federation.REPRESENTATION)
    args.repr_size, args.representer_units, args.input_noise, args.output_noise = 300, 256, 0.03, 0.02
    args.representer_data = "provider+copy"
    assert federation.run_budget(args) == {**default, "repr_size": 300, "representer_units": 256,
                                           "input_noise": 0.03, "output_noise": 0.02,
                                           "representer_data": "provider+copy"}
    monkeypatch.setattr(federation, "REPO", tmp_path)
    monkeypatch.setattr(results_files, "RESULTS", tmp_path / "results")
    made = rows({name: per_note(9, 0, 1) for name in ("raw", "pooled")})
    made["budget"].update(test=list(federation.CORPORA["meddocan"].test), repr_size=300, representer_units=256,
                          input_noise=0.03, output_noise=0.02, representer_data="provider+copy")
    (tmp_path / "runs" / "federation_d300" / "seed-0").mkdir(parents=True)
    (tmp_path / "runs" / "federation_d300" / "seed-0" / "rows.json").write_text(json.dumps(made))
    federation.report([0], "federation_d300", "meddocan")
    text = (tmp_path / "results" / "federation" / "federation_d300.md").read_text()
    assert ("N = 100, d = 300, representer 256 units, initial input noise 0.03, initial output noise 0.02, "
            "representer trained on provider+copy)") in text
    assert ("--repr-size 300 --representer-units 256 --input-noise 0.03 --output-noise 0.02 "
            "--representer-data provider+copy --results-name federation_d300") in text
    # a budget that names no monitor was run with that of its day (PHI F1), which the command must name
    assert "--monitor val_f1 --repr-size 300" in text
    assert "Growth curve" not in text  # the smaller pools were skipped


def test_a_shorter_run_skips_the_stages_named_and_passes_the_monitor_to_every_tagger(tmp_path, monkeypatch):
    """--skip leaves the named text taggers and the audit for a later run; every tagger trained
    (text and pooled) watches --monitor."""
    import argparse

    import deidpool.corpus.formats
    import deidpool.representer.tagger_runs

    monkeypatch.setattr(federation, "REPO", tmp_path / "repo")
    monkeypatch.setattr(deidpool.corpus.formats, "read_corpus", lambda *a, **k: [])
    monkeypatch.setattr(deidpool.representer.tagger_runs, "split_documents", lambda *a: ([], []))
    monkeypatch.setattr(federation, "provider_embeddings", lambda *a: ("glove", None))
    trained = {}

    def text_tagger(corpus, folder, seed, name, documents, split, embeddings, args, monitor="val_f1"):
        trained[name] = monitor
        return {f"{name}@test": {}}

    def pools(corpus, folder, seed, documents, split, embeddings, done, args):
        trained["pools"] = args.monitor
        return {f"{name}@test": {} for name in federation.POOLS}

    def stack(corpus, folder, seed, party, *rest):
        trained.setdefault("stacks", []).append(party)
        return {f"stack-{party}@test": {}}

    monkeypatch.setattr(federation, "text_tagger_rows", text_tagger)
    monkeypatch.setattr(federation, "pooled_rows", pools)
    monkeypatch.setattr(federation, "stack_rows", stack)
    monkeypatch.setattr(federation, "pooled_test_predictions",
                        lambda *args: trained.setdefault("pooled predicted", []).append(1) or [])
    args = argparse.Namespace(corpus="meddocan", p1=1, p1_patience=1, p3=1, p3_patience=1, tagger_epochs=2,
                              patience=1, audit_epochs=1, selection="loss", test=["t", "meddocan", None],
                              monitor="val_loss", skip=["pseudo", "raw-site_a", "raw-site_b", "raw-site_c", "audit"],
                              results_name="x", **federation.REPRESENTATION, pooled_units=128)
    rows = federation.run_seed(0, args)
    run = json.loads((tmp_path / "repo" / "runs" / "x" / "seed-0" / results_files.RUN_RECORD).read_text())
    assert run["seed"] == 0 and run["data"] == "meddocan" and run["budget"] == rows["budget"]
    assert trained == {"raw": "val_loss", "pools": "val_loss", "raw-provider": "val_loss",
                       "stacks": ["site_a", "site_b", "site_c", "provider"], "pooled predicted": [1]}
    assert federation.run_seed(0, args) == rows and len(trained["stacks"]) == 4  # nothing twice
    args.skip.append(federation.STACK)
    (tmp_path / "repo" / "runs" / "x" / "seed-0" / "rows.json").unlink()
    assert "stack-site_a@test" not in federation.run_seed(0, args)
    assert "audit" not in rows and "pseudo@test" not in rows and rows["budget"]["monitor"] == "val_loss"


def test_a_run_that_skips_the_smaller_pools_is_done_with_its_full_pool(tmp_path, monkeypatch):
    """--skip provider-only pooled-2 pooled-no-c: the full pool is trained once; a rerun finds
    nothing to do, and the report takes the seed as finished."""
    import argparse

    import deidpool.corpus.formats
    import deidpool.representer.tagger_runs

    monkeypatch.setattr(federation, "REPO", tmp_path / "repo")
    monkeypatch.setattr(deidpool.corpus.formats, "read_corpus", lambda *a, **k: [])
    monkeypatch.setattr(deidpool.representer.tagger_runs, "split_documents", lambda *a: ([], []))
    monkeypatch.setattr(federation, "provider_embeddings", lambda *a: ("glove", None))
    calls = []
    monkeypatch.setattr(federation, "text_tagger_rows", lambda corpus, folder, seed, name, *a, **k: {
        f"{name}@test": {}})

    def pools(corpus, folder, seed, documents, split, embeddings, done, args):
        calls.append(sorted(args.skip))
        return {"pooled@test": {}}

    monkeypatch.setattr(federation, "pooled_rows", pools)
    skipped = [name for name in federation.SKIPPABLE if name != "raw-provider"]
    assert set(federation.POOLS) - set(federation.SKIPPABLE) == {"pooled"}
    args = argparse.Namespace(corpus="meddocan", p1=1, p1_patience=1, p3=1, p3_patience=1, tagger_epochs=2,
                              patience=1, audit_epochs=1, selection="loss", test=["t", "meddocan", None],
                              monitor="val_loss", skip=skipped, results_name="x", pooled_units=128,
                              **{**federation.REPRESENTATION, "repr_size": 300, "output_noise": 0.02})
    federation.run_seed(0, args)
    federation.run_seed(0, args)
    assert calls == [sorted(skipped)]
    runs = tmp_path / "repo" / "runs" / "x"
    assert set(federation.finished_seeds([0], runs, tmp_path / "absent.json")) == {0}


def test_a_run_is_compared_tagger_by_tagger_with_another_federation_on_the_seeds_both_hold():
    """--against: this run's raw tagger finds one more entity per note than the other run's; the
    pools are the same; a tagger only one run has is left out."""
    from deidpool.representer.training import MONITORS

    assert set(federation.MONITOR_TITLES) == set(MONITORS)
    mine = {seed: rows({"raw": per_note(9, 0, 1), "pooled": per_note(8, 1, 2), "raw-provider": per_note(7, 1, 3)})
            for seed in (0, 1)}
    theirs = {seed: rows({"raw": per_note(8, 0, 2), "pooled": per_note(8, 1, 2)}) for seed in (0, 2)}
    lines = federation.against_lines(mine, theirs, "other", federation.CORPORA["meddocan"])
    table = [line for line in lines if line.startswith("| raw") or line.startswith("| pooled")]
    assert len(table) == 8  # raw and pooled, alone and with the layer, on both measures
    raw = cells(next(line for line in table if line.startswith("| raw: this run - other | alone")))
    assert raw[2] == raw[3] == "+5.8 [+5.8, +5.8]"  # 0.947 - 0.889 in seed 0, the one seed both hold
    assert all(cells(line)[3].startswith("+0.0") for line in table if line.startswith("| pooled"))
    assert "seeds [0]" in lines[1]
    with pytest.raises(SystemExit, match="none of seeds"):
        federation.against_lines(mine, {2: theirs[2]}, "other", federation.CORPORA["meddocan"])


def test_a_run_is_compared_with_a_diagnosis_variant_of_another_federation(tmp_path, monkeypatch):
    """--against NAME:VARIANT: the variant's rows (runs/NAME/seed-S/diagnosis/rows.json) stand for
    NAME's full pool; seeds without the variant are left out."""
    monkeypatch.setattr(federation, "REPO", tmp_path)
    variant = {"pools@test": rows({"pooled": per_note(8, 1, 2)})["pooled@test"]}
    variant["pools+patterns@test"] = variant["pools@test"]
    (tmp_path / "runs" / "other" / "seed-0" / "diagnosis").mkdir(parents=True)
    (tmp_path / "runs" / "other" / "seed-0" / "diagnosis" / "rows.json").write_text(json.dumps(variant))
    (tmp_path / "runs" / "other" / "seed-1" / "diagnosis").mkdir(parents=True)
    (tmp_path / "runs" / "other" / "seed-1" / "diagnosis" / "rows.json").write_text("{}")
    found = federation.against_seeds("other:pools", [0, 1, 2])
    assert set(found) == {0} and set(found[0]) == {"pooled@test", "pooled+patterns@test"}
    mine = {0: rows({"raw": per_note(9, 0, 1), "pooled": per_note(9, 0, 1)})}
    lines = federation.against_lines(mine, found, "other:pools", federation.CORPORA["meddocan"])
    table = [line for line in lines if line.startswith("| pooled: this run - other:pools")]
    assert len(table) == 4 and not any(line.startswith("| raw") for line in lines)


def test_a_party_s_stack_is_scored_beside_its_own_tagger_alone_and_the_pooled_pipeline(
        tmp_path, documents, pipeline_path, key_files):
    """The stack stage on a tiny untrained pipeline: a site's stack is built once in the seed
    folder (owner-only, opened again on a rerun) and every row of the stage has the test notes'
    per-note counts and the operating point."""
    import shutil
    from types import SimpleNamespace

    from deidpool.representer import keys
    from deidpool.representer.bundle import open_bundle

    folder = tmp_path / "seed-0"
    (folder / "pipelines").mkdir(parents=True)
    (folder / "keys").mkdir()
    shutil.copyfile(pipeline_path, folder / "pipelines" / "pooled.tar")
    shutil.copyfile(key_files.provider.public, folder / "keys" / "provider.pub")
    provider_key = keys.load_public_key(key_files.provider.public, keys.SIGNING)
    vectors = open_bundle(pipeline_path, provider_key).load_embeddings()
    corpus = dataclasses.replace(federation.CORPORA["physionet"], language="en", entity_key="type")
    notes = {"site_a": documents[:8], "test": documents[8:]}
    args = SimpleNamespace(tagger_epochs=1, patience=1)
    pooled = federation.pooled_test_predictions(folder, notes["test"], vectors)
    found = federation.stack_rows(corpus, folder, 0, "site_a", notes, (), vectors, pooled, args, lstm_units=4)
    layered = f"{federation.PATTERNS}@test"
    assert set(found) == {"local-site_a@test", f"local-site_a{layered}", f"pooled-memory-site_a{layered}",
                          "stack-site_a@test", f"stack-site_a{layered}", f"stack-recall-site_a{layered}"}
    for row in found.values():
        assert len(row[federation.NOTE_COUNTS]["entity_strict"]) == len(notes["test"])
        point = row["operating_point"]
        assert point["train_notes"] + point["valid_notes"] == 8 and point["at_recall"]["min_recall"] == 0.99
        assert set(point["test_hindsight"]) == {"threshold", "precision", "recall", "reached"}
    assert (folder / "stacks" / "site_a" / "stack.json").exists()
    assert oct((folder / "stacks" / "site_a").stat().st_mode & 0o777) == "0o700"
    built = (folder / "stacks" / "site_a" / "stack.json").stat().st_mtime_ns
    again = federation.stack_rows(corpus, folder, 0, "site_a", notes, (), vectors, pooled, args, lstm_units=4)
    assert (folder / "stacks" / "site_a" / "stack.json").stat().st_mtime_ns == built
    assert again["stack-site_a@test"][federation.NOTE_COUNTS] == found["stack-site_a@test"][federation.NOTE_COUNTS]


def stack_seed(site_gain: int) -> dict:
    """One seed's stack rows: every party's stack finds `site_gain` more PHI per note than its own
    tagger (of 10), the provider's as many as the raw-text tagger."""
    counts = {"raw": per_note(10, 0, 0), "pooled": per_note(9, 0, 1)}
    for party in federation.STACK_PARTIES:
        gain = site_gain if party in federation.SITES else 0
        counts |= {f"local-{party}": per_note(10 - gain - (party == "provider"), 0, gain),
                   f"stack-{party}": per_note(10 - (party == "provider"), 0, party == "provider"),
                   f"stack-recall-{party}": per_note(10, 2, 0), f"pooled-memory-{party}": per_note(9, 0, 1)}
    made = rows(counts)
    point = {"weight": 0.5, "threshold": 0.5, "valid": {"precision": 0.9, "recall": 0.95},
             "at_recall": {"min_recall": 0.99, "reached": True, "threshold": 0.2, "precision": 0.8, "recall": 0.99},
             "test_hindsight": {"threshold": 0.3, "precision": 0.85, "recall": 0.99, "reached": True}}
    for key in made:
        if key.startswith("stack"):
            made[key] |= {"operating_point": point, "token_official_hipaa_precision": 0.8,
                          "token_official_hipaa_recall": 0.99}
    return made


def test_the_stack_targets_are_judged_on_both_measures_in_every_seed_and_the_operating_points_listed():
    seeds = {0: stack_seed(2), 1: stack_seed(2)}
    paired_rows = {measure: federation.paired_rows(federation.note_counts(seeds, [0, 1], measure), [0, 1])
                   for measure in federation.MEASURES.values()}
    lines = federation.stack_lines(seeds, [0, 1], paired_rows)
    targets = [line for line in lines if line.startswith("- ")]
    assert len(targets) == 4
    assert all(line.endswith("every seed's interval above 0: met).") for line in targets[:3])
    assert targets[3].startswith("- The provider's stack - the raw-text tagger") and targets[3].endswith("MISSED).")
    table = [line for line in lines if line.startswith("| site_a |")]
    assert table == ["| site_a | 0.5, 0.5 | 0.900 ± 0.000 / 0.950 ± 0.000 | 0.800 ± 0.000 / 0.990 ± 0.000 | 0.2, 0.2 "
                     "| 0.800 ± 0.000 / 0.990 ± 0.000 | 0.800 ± 0.000 / 0.990 ± 0.000 "
                     "| 0.3, 0.3; 0.850 ± 0.000 / 0.990 ± 0.000 |"]
    seeds[1]["stack-site_a@test"]["operating_point"] = {**seeds[1]["stack-site_a@test"]["operating_point"]}
    del seeds[1]["stack-site_a@test"]["operating_point"]["test_hindsight"]  # scored before it was recorded
    assert next(line for line in federation.stack_lines(seeds, [0, 1], paired_rows)
                if line.startswith("| site_a |")).endswith("| n/a |")
    weak = {0: stack_seed(2), 1: stack_seed(0)}
    paired_rows = {measure: federation.paired_rows(federation.note_counts(weak, [0, 1], measure), [0, 1])
                   for measure in federation.MEASURES.values()}
    assert all(line.endswith("MISSED).") for line in federation.stack_lines(weak, [0, 1], paired_rows)
               if line.startswith("- site"))
    assert federation.stack_lines({0: rows({"pooled": per_note(9, 0, 1)})}, [0], paired_rows) == []



@pytest.mark.parametrize("cut, expected", [(0.5, 0.5), (0.98, 0.98), (0.02, 0.02), (0.0, None)])
def test_the_threshold_in_hindsight_is_the_largest_whose_recall_reaches_the_minimum(documents, cut, expected):
    """A stack that finds every gold span up to the threshold `cut` and none above: the bisection
    finds `cut` in a few scorings, and says so when even the lowest threshold does not reach."""
    from deidpool.client.operating_point import THRESHOLDS
    from deidpool.corpus.document import Document

    gold = [document for document in documents if document.spans][:4]
    called = []

    def predict(threshold: float) -> list:
        called.append(threshold)
        return [Document(d.id, d.text, d.spans if threshold <= cut else []) for d in gold]

    found = federation.threshold_in_hindsight(gold, predict, 0.99)
    assert len(called) <= 7  # a bisection over the 49 thresholds, not the whole curve
    if expected is None:
        assert found == {"threshold": THRESHOLDS[0], "precision": 0.0, "recall": 0.0, "reached": False}
    else:
        assert found == {"threshold": expected, "precision": 1.0, "recall": 1.0, "reached": True}
