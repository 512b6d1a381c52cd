"""experiments/type_breakdown.py's report on hand-made counts (nothing is tagged): per-type F1
with counts pooled over seeds, types by gold spans, differences to the reference."""

import results_files
import type_breakdown


def test_types_pool_their_counts_over_seeds_and_compare_with_the_reference():
    reference = [{"CITY": {"tp": 9, "fp": 1, "fn": 1}, "HOSPITAL": {"tp": 1, "fp": 0, "fn": 1}},
                 {"CITY": {"tp": 8, "fp": 0, "fn": 2}, "HOSPITAL": {"tp": 2, "fp": 0, "fn": 0}}]
    other = [{"CITY": {"tp": 5, "fp": 5, "fn": 5}, "HOSPITAL": {"tp": 0, "fp": 2, "fn": 2}},
             {"CITY": {"tp": 5, "fp": 0, "fn": 5}}]  # no HOSPITAL predicted or missed in seed 1
    numbers = type_breakdown.breakdown({"run:raw": reference, "run:pooled": other})
    assert numbers["gold"] == {"CITY": 20, "HOSPITAL": 4}
    assert numbers["f1"]["CITY"]["run:raw"] == 2 * 17 / (2 * 17 + 1 + 3)
    assert numbers["f1"]["HOSPITAL"]["run:pooled"] == 0.0
    assert numbers["f1"]["all"]["run:pooled"] == 2 * 10 / (2 * 10 + 7 + 12)
    run = {"command": "python experiments/type_breakdown.py --taggers run:raw run:pooled --results-name x",
           "commit": "abc1234", "date": "2020-01-02", "corpus": "meddocan", "test_notes": "notes/test"}
    text = type_breakdown.report({"seeds": [0, 1], **numbers, "record": run})
    assert f"2020-01-02, commit abc1234; seeds [0, 1]; test notes `notes/test`. Command: `{run['command']}`." in text
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert [line.split(" | ")[0] for line in lines[1:]] == ["| CITY", "| HOSPITAL", "| **all types**"]
    city = 100 * (20 / 35 - 34 / 38)
    assert lines[1].endswith(f"| 0.895 | 0.571 ({city:+.1f}) |")
    assert lines[0] == "| type | gold spans | `run:raw` | `run:pooled` |"


def test_a_taggers_found_spans_are_kept_until_the_tagger_or_the_test_notes_change(tmp_path, monkeypatch):
    import os

    from deidpool.corpus.document import Document, Span

    folder = tmp_path / "runs" / "run" / "seed-0"
    (folder / "taggers" / "raw").mkdir(parents=True)
    monkeypatch.setattr(type_breakdown, "REPO", tmp_path)
    monkeypatch.setattr(type_breakdown.federation, "provider_embeddings", lambda *args: (None, None))
    calls = []

    def predictions(seed_folder, name, splits, vectors):
        calls.append(name)
        return {"test": [Document(d.id, d.text, (Span(0, 4, "CITY", d.text[:4]),)) for d in splits["test"]]}

    monkeypatch.setattr(type_breakdown.federation, "predictions", predictions)
    notes = [Document("a", "Vigo y Lugo"), Document("b", "Ourense")]
    first = type_breakdown.found_documents(None, "run:raw", 0, notes)
    assert [d.spans[0].text for d in first] == ["Vigo", "Oure"] and calls == ["raw"]
    assert type_breakdown.found_documents(None, "run:raw", 0, notes) == first and calls == ["raw"]
    type_breakdown.found_documents(None, "run:raw", 0, notes[:1])  # other test notes: tagged anew
    assert calls == ["raw", "raw"]
    later = max(path.stat().st_mtime for path in (folder / "found").iterdir()) + 10
    os.utime(folder / "taggers" / "raw", (later, later))  # the tagger retrained
    type_breakdown.found_documents(None, "run:raw", 0, notes)
    assert calls == ["raw", "raw", "raw"]


def test_a_page_from_run_folders_with_run_records_says_which_commits_trained_them(tmp_path, monkeypatch):
    """The seed folders and a diagnosis variant's own folder are the tagger's run folders; without
    run records the page names the reporting commit alone, as before."""
    monkeypatch.setattr(type_breakdown, "REPO", tmp_path)
    seed_0, seed_1 = (tmp_path / "runs" / "fed" / f"seed-{seed}" for seed in (0, 1))
    folders = type_breakdown.tagger_folders(["fed:raw", "fed:diagnosis/surrogates-at-export"], [0, 1])
    assert folders == [seed_0, seed_1, seed_0, seed_0 / "diagnosis" / "surrogates-at-export", seed_1,
                       seed_1 / "diagnosis" / "surrogates-at-export"]
    numbers = type_breakdown.breakdown({"fed:raw": [{"CITY": {"tp": 1, "fp": 0, "fn": 0}}]})

    def page() -> str:
        run = results_files.record(run_folders=folders, corpus="meddocan", test_notes="notes/test")
        return type_breakdown.report({"seeds": [0, 1], **numbers, "record": {**run, "date": "2020-01-02"}})

    monkeypatch.setattr(results_files, "git_commit", lambda: "ccc3333")
    assert "2020-01-02, commit ccc3333; seeds [0, 1]" in page()
    monkeypatch.setattr(results_files, "git_commit", lambda: "aaa1111")
    results_files.write_run_record(seed_0, seed=0)
    monkeypatch.setattr(results_files, "git_commit", lambda: "bbb2222")
    results_files.write_run_record(seed_1 / "diagnosis" / "surrogates-at-export", seed=1)
    monkeypatch.setattr(results_files, "git_commit", lambda: "ccc3333")
    assert "2020-01-02, trained at aaa1111, bbb2222; reported at ccc3333; seeds [0, 1]" in page()
