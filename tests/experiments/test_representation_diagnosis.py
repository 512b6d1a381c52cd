"""experiments/representation_diagnosis.py's report on hand-made rows (nothing is trained): each
variant against the raw-text tagger and against the default, with paired intervals, and only the
variants every seed has."""

import argparse
import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest

import federation
import representation_diagnosis as diagnosis
import results_files

NOTES = 40


def rows(name: str, tp: int, fn: int) -> dict:
    notes = [[tp, 0, fn]] * NOTES
    score = federation.f1(notes)
    return {f"{name}{suffix}@test": {"entity_strict_f1": score, federation.NOTE_COUNTS: {
        measure: notes for measure in federation.MEASURES.values()}} for suffix in ("", federation.PATTERNS)}


def test_variants_are_compared_with_raw_text_and_with_the_default(tmp_path, monkeypatch):
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    seed = {**rows("raw", 10, 0), **rows(diagnosis.DEFAULT, 8, 2), **rows("3 export draws", 9, 1)}
    other = {**rows("raw", 10, 0), **rows(diagnosis.DEFAULT, 8, 2), **rows("3 export draws", 9, 1),
             **rows("tagger 256 units", 8, 2)}  # one seed only: left out
    args = argparse.Namespace(corpus="meddocan", federation="federation_meddocan", results_name=None, baseline="raw",
                              variants=list(diagnosis.VARIANTS))
    text = diagnosis.report({0: seed, 1: other}, args)
    assert "tagger 256 units" not in text
    table = [line for line in text.splitlines() if line.startswith("| 3 export draws") and "| alone |" in line]
    gap = 100 * (federation.f1([[9, 0, 1]]) - 1)
    gain = 100 * (federation.f1([[9, 0, 1]]) - federation.f1([[8, 0, 2]]))
    assert table[0].startswith(f"| 3 export draws - raw text | alone | {gap:+.1f} [{gap:+.1f}, {gap:+.1f}]")
    assert table[1].startswith(f"| 3 export draws - default | alone | {gain:+.1f} [")
    stored = json.loads((tmp_path / "federation" / "federation_meddocan_diagnosis.json").read_text())
    titles = {row["comparison"] for row in stored["paired"]["entity_strict"]}
    assert titles == {f"{diagnosis.DEFAULT} - raw text", "3 export draws - raw text", "3 export draws - default"}
    # the page is what its record renders: another day's record states that day's date and commit
    assert diagnosis.page(stored) == (tmp_path / "federation" / "federation_meddocan_diagnosis.md").read_text()
    earlier = diagnosis.page({**stored, "record": {**stored["record"], "date": "2020-01-02", "commit": "abc1234"}})
    assert "2020-01-02, commit abc1234; seeds [0, 1]. Command: `python experiments/representation_diagnosis.py " \
           "--corpus meddocan --federation federation_meddocan --seeds 0 1 --report-only --variants" in earlier
    assert "or minus the raw-text tagger trained as the row's own" not in earlier  # no like-for-like rows
    diagnosis.report({0: seed}, argparse.Namespace(**{**vars(args), "results_name": "federation_meddocan_seed0"}))
    assert (tmp_path / "federation" / "federation_meddocan_seed0.md").exists()
    # a process training seed 0 alone prints its table and leaves the three-seed page as it is
    page = (tmp_path / "federation" / "federation_meddocan_diagnosis.md").read_text()
    printed = diagnosis.report({0: seed}, args, write=False)
    assert "seeds [0]" in printed and "seeds [0, 1]" in page
    assert (tmp_path / "federation" / "federation_meddocan_diagnosis.md").read_text() == page


def test_variants_are_compared_with_a_text_variant_as_baseline(tmp_path, monkeypatch):
    """--baseline names a text variant: every other row minus it; a text variant is not compared
    with the default pooled tagger."""
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    text = "raw text, tagger stops on validation loss"
    seed = {**rows("raw", 10, 0), **rows(diagnosis.DEFAULT, 8, 2), **rows("tagger stops on validation loss", 9, 1),
            **rows(text, 10, 0)}
    args = argparse.Namespace(corpus="meddocan", federation="federation_meddocan", results_name=None, baseline=text,
                              variants=list(diagnosis.VARIANTS))
    page = diagnosis.report({0: seed}, args)
    titles = {row["comparison"] for row in json.loads(
        (tmp_path / "federation" / "federation_meddocan_diagnosis.json").read_text())["paired"]["entity_strict"]}
    assert titles == {f"{diagnosis.DEFAULT} - {text}", f"tagger stops on validation loss - {text}",
                      "tagger stops on validation loss - default"}
    assert f"--baseline '{text}'" in page
    with pytest.raises(SystemExit, match="has no rows"):
        diagnosis.report({0: seed}, argparse.Namespace(**{**vars(args), "baseline": "tagger 256 units"}))


def test_every_variant_changes_one_thing_against_the_default():
    default = diagnosis.Variant()
    for name, variant in diagnosis.VARIANTS.items():
        changed = [field.name for field in dataclasses.fields(variant)
                   if getattr(variant, field.name) != getattr(default, field.name)]
        if name == "no pseudonymization at export":  # N = 1 under groups (surrogates ignore N)
            assert changed == ["neighbours", "scheme"] and (variant.neighbours, variant.scheme) == (1, "groups")
        elif name == "groups N500 at export":  # the scheme, and its N
            assert changed == ["neighbours", "scheme"] and (variant.neighbours, variant.scheme) == (500, "groups")
        elif name == "client export --draws 3":  # 3 export draws, in one contribution
            assert changed == ["draws", "one_export"] and variant.draws == diagnosis.VARIANTS["3 export draws"].draws
        elif variant.continues:  # a run carried on to more epochs: the run it continues, and the epochs
            base = diagnosis.Variant(text=True) if variant.continues == "raw" else diagnosis.VARIANTS[variant.continues]
            assert variant == dataclasses.replace(base, epochs=variant.epochs, continues=variant.continues)
            assert variant.epochs > 10
        elif variant.text:  # the raw-text baseline under another stopping rule or capacity, or reading characters
            assert changed in (["monitor", "text"], ["units", "text"], ["text", "chars"], ["text", "kind", "chars"])
        elif "," in name:  # two variants at once: the second's tagger setting on the first
            first, second = (diagnosis.VARIANTS[part.strip()] for part in name.split(","))
            assert variant == dataclasses.replace(first, monitor=second.monitor, units=second.units)
        else:
            assert len(changed) == 1, name
        assert diagnosis.folder_name(name) == name.replace(" ", "-")


def test_variants_that_change_only_the_tagger_train_on_the_federation_s_own_exports():
    tagger_only = {"tagger 256 units", "tagger word dropout 0.2", "tagger every epoch", "tagger stops on PHI F1",
                   "tagger stops on tag F1", "tagger stops on validation loss",
                   "raw text, tagger stops on validation loss", "raw text, tagger 256 units",
                   "raw text, tagger 25 epochs", "raw text, tagger reads characters",
                   *(f"{site} raw text, tagger reads characters" for site in federation.SITES)}
    assert {name for name, variant in diagnosis.VARIANTS.items() if diagnosis.same_exports(variant)} == tagger_only
    assert diagnosis.VARIANTS["tagger word dropout 0.2"].word_dropout == 0.2


def write_provider_contribution(seed_dir, scheme: str) -> None:
    """A federation seed's provider contribution (one sentence) exported under `scheme`."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from deidpool.contribution.container import write_contribution
    from deidpool.contribution.records import encode_sentence

    (seed_dir / "contributions").mkdir(parents=True, exist_ok=True)
    write_contribution(seed_dir / "contributions" / "provider.dpc",
                       [encode_sentence(np.zeros((2, 4)), np.zeros(2, int), np.zeros(2, int))],
                       institution="provider", representer_id="rep-test", dim=4, neighbours=100,
                       pseudonymization=scheme, signing_key=Ed25519PrivateKey.generate(),
                       server_key=X25519PrivateKey.generate().public_key())


def test_the_default_variant_exports_under_the_federation_seed_s_own_scheme(tmp_path):
    """A federation seed exported under groups is diagnosed under groups, whatever the export default."""
    write_provider_contribution(tmp_path, "groups")
    assert diagnosis.Variant().scheme is None and diagnosis.seed_scheme(tmp_path) == "groups"


def test_an_export_variant_runs_the_federation_s_chain_through_the_product_api(tmp_path, monkeypatch):
    """Keys, bundle, exports and the server's round come from deidpool.federation, as the
    federation's: a variant that exports gets one contribution per party and draw, named by both;
    one that changes only the tagger pools the seed's own contributions, named by party."""
    from deidpool import federation as api
    from deidpool.representer import keys

    keys.create_provider_keys(tmp_path / "keys")
    write_provider_contribution(tmp_path, "groups")
    exported, rounds, bundles = [], [], []
    monkeypatch.setattr(api.Provider, "bundle",
                        lambda provider, audit=None: bundles.append(provider.bundle_path) or SimpleNamespace(
                            tags=("O", "B-NAME")))

    def export(notes, bundle, vectors, path, party, settings, *, server_key, progress):
        exported.append((path.name, party.institution, len(notes), settings.scheme))

    def pooled_round(contributions, key, bundle, run_dir, pipeline, *, tags, signing_key, settings):
        rounds.append(([(c.sha256, c.path.name, c.institution) for c in contributions], run_dir, pipeline, settings))
        return api.PooledRound({"epochs": 4, "best_epoch": 2}, 7, run_dir, pipeline)

    monkeypatch.setattr(diagnosis, "export_party", export)
    monkeypatch.setattr(diagnosis, "train_pooled_round", pooled_round)
    monkeypatch.setattr(federation, "pipeline_predictions", lambda pipeline, provider, splits, vectors: {"test": []})
    monkeypatch.setattr(federation, "test_rows", lambda corpus, gold, found, extra: {"": extra})
    documents = {party: [SimpleNamespace(id=f"{party}-{i}") for i in range(10)] for party in federation.PARTIES}
    documents["test"] = []
    args = argparse.Namespace(tagger_epochs=10, patience=3)
    for name in ("3 export draws", "tagger word dropout 0.2"):
        rows = diagnosis.variant_rows(federation.CORPORA["meddocan"], tmp_path, 0, name, diagnosis.VARIANTS[name],
                                      documents, ("glove", None), args, {"monitor": "val_loss"})
        assert rows == {f"{name}@test": {"epochs": 4, "best_epoch": 2, "sentences": 7}}
    assert exported == [(f"{party}-{draw}.dpc", party, 10, "groups") for party in federation.PARTIES
                        for draw in range(3)]
    assert bundles == [tmp_path / "bundle.tar"] * 2
    (draws, out, pipeline, settings), (own, _, _, tagger_only) = rounds
    assert draws == [(f"{party}-{draw}", f"{party}-{draw}.dpc", party) for party in federation.PARTIES
                     for draw in range(3)]
    assert out == tmp_path / "diagnosis" / "3-export-draws" / "tagger" and pipeline == out.parent / "pipeline.tar"
    assert settings == api.PooledSettings(max_epochs=10, patience=3, lstm_units=128, monitor="val_loss", seed=0)
    assert own == [(party, f"{party}.dpc", party) for party in federation.PARTIES]
    assert tagger_only.word_dropout == 0.2
    assert all((tmp_path / "keys" / party / "institution.pub").exists() for party in federation.PARTIES)


def test_the_p1_variant_publishes_the_seed_s_first_representer_with_the_provider_s_key(tmp_path):
    from deidpool import federation as api

    (tmp_path / "representer" / "models").mkdir(parents=True)
    (tmp_path / "representer" / "config.json").write_text("{}")
    (tmp_path / "representer" / "models" / "representer_p1.keras").write_text("p1")
    out = tmp_path / "diagnosis" / "representer-after-P1"
    provider = diagnosis.variant_provider(tmp_path, diagnosis.VARIANTS["representer after P1"], out)
    assert provider == api.Provider(out / "representer", api.SigningKeys(tmp_path / "keys", api.PROVIDER),
                                    out / "bundle.tar")
    assert (provider.run / "models" / "representer.keras").read_text() == "p1"
    assert diagnosis.variant_provider(tmp_path, diagnosis.Variant(), out) == api.provider_at(tmp_path, "representer")


def test_a_variant_s_tagger_watches_its_own_monitor_else_the_federation_s(tmp_path, monkeypatch):
    watched = []
    monkeypatch.setattr(federation, "text_tagger_rows", lambda *a, monitor, **k: watched.append(monitor) or {})
    corpus = federation.CORPORA["meddocan"]
    for name, federation_monitor in (("raw text, tagger stops on validation loss", "val_f1"),
                                     ("raw text, tagger stops on validation loss", "val_loss")):
        diagnosis.variant_rows(corpus, tmp_path, 0, name, diagnosis.VARIANTS[name], {}, ("glove", None), None,
                               {"monitor": federation_monitor})
    diagnosis.variant_rows(corpus, tmp_path, 0, "raw", diagnosis.Variant(text=True), {}, ("glove", None), None,
                           {"monitor": "val_loss"})
    assert watched == ["val_loss", "val_loss", "val_loss"]


def test_a_variant_s_tagger_has_its_own_units_else_the_federation_s():
    """A budget without pooled_units is a run from before it was recorded: 128 units, PHI F1."""
    wide, default = diagnosis.VARIANTS["tagger 256 units"], diagnosis.Variant()
    assert diagnosis.tagger_settings(default, {}) == ("val_f1", 128)
    assert diagnosis.tagger_settings(default, {"monitor": "val_loss", "pooled_units": 256}) == ("val_loss", 256)
    assert diagnosis.tagger_settings(wide, {"monitor": "val_loss"}) == ("val_loss", 256)
    assert diagnosis.VARIANTS["tagger stops on PHI F1"].monitor == "val_f1"


def test_a_raw_text_variant_has_its_own_units_else_those_of_the_federation_s_text_taggers(tmp_path, monkeypatch):
    """The raw-text baseline keeps the federation's text-tagger size whatever the pooled tagger's;
    "raw text, tagger 256 units" is the like-for-like baseline of a 256-unit pooled tagger."""
    sizes = []
    monkeypatch.setattr(federation, "text_tagger_rows", lambda *a, lstm_units, **k: sizes.append(lstm_units) or {})
    corpus, budget = federation.CORPORA["meddocan"], {"monitor": "val_loss", "pooled_units": 256}
    for name in ("raw text, tagger stops on validation loss", "raw text, tagger 256 units"):
        diagnosis.variant_rows(corpus, tmp_path, 0, name, diagnosis.VARIANTS[name], {}, ("glove", None), None, budget)
    assert sizes == [federation.TEXT_TAGGER_UNITS, 256] and federation.TEXT_TAGGER_UNITS == 128


def test_the_character_variants_train_all_notes_or_one_site_s_raw_text_tagger_reading_characters(tmp_path,
                                                                                                 monkeypatch):
    trained = []
    monkeypatch.setattr(federation, "text_tagger_rows",
                        lambda *a, kind, chars, **k: trained.append((kind, chars)) or {})
    for name, variant in diagnosis.VARIANTS.items():
        if variant.chars:
            diagnosis.variant_rows(federation.CORPORA["meddocan"], tmp_path, 0, name, variant, {}, ("glove", None),
                                   None, {})
    assert trained == [("raw", True), ("raw-site_a", True), ("raw-site_b", True), ("raw-site_c", True)]
    assert all(kind in federation.TEXT_TAGGERS for kind, _ in trained)
    assert diagnosis.like_for_like([diagnosis.DEFAULT, "surrogates at export", "raw text, tagger reads characters",
                                    "site_a raw text, tagger reads characters"]) == []


def test_a_longer_run_carries_on_from_the_exports_and_checkpoint_of_the_run_it_continues(tmp_path, monkeypatch):
    """Its folder starts as a copy of the shorter run's (not its pipeline, which is published
    again) and its tagger trains to the variant's epochs; a folder already started is left alone."""
    short = tmp_path / "diagnosis" / "surrogates-at-export"
    for path in ("contributions/provider-0.dpc", "tagger/checkpoints/state.npz", "pipeline.tar"):
        (short / path).parent.mkdir(parents=True, exist_ok=True)
        (short / path).write_text(path)
    (tmp_path / "taggers" / "raw" / "checkpoints").mkdir(parents=True)
    (tmp_path / "taggers" / "raw" / "checkpoints" / "state.npz").write_text("raw")
    for name in ("surrogates at export, tagger 25 epochs", "raw text, tagger 25 epochs"):
        out = tmp_path / "diagnosis" / diagnosis.folder_name(name)
        diagnosis.carry_on(tmp_path, diagnosis.VARIANTS[name], out)
        assert (out / "tagger" / "checkpoints" / "state.npz").exists() and not (out / "pipeline.tar").exists()
    longer = tmp_path / "diagnosis" / diagnosis.folder_name("surrogates at export, tagger 25 epochs")
    assert (longer / "contributions" / "provider-0.dpc").read_text() == "contributions/provider-0.dpc"
    (longer / "tagger" / "checkpoints" / "state.npz").write_text("epoch 12")
    diagnosis.carry_on(tmp_path, diagnosis.VARIANTS["surrogates at export, tagger 25 epochs"], longer)
    assert (longer / "tagger" / "checkpoints" / "state.npz").read_text() == "epoch 12"
    epochs = []
    monkeypatch.setattr(federation, "text_tagger_rows", lambda *a, **k: epochs.append(a[7].tagger_epochs) or {})
    args = argparse.Namespace(tagger_epochs=10, patience=3)
    diagnosis.variant_rows(federation.CORPORA["meddocan"], tmp_path, 0, "raw text, tagger 25 epochs",
                           diagnosis.VARIANTS["raw text, tagger 25 epochs"], {}, ("glove", None), args, {})
    assert epochs == [25] and args.tagger_epochs == 10


def test_a_variant_s_gap_is_also_taken_to_the_raw_text_tagger_trained_as_its_own(tmp_path, monkeypatch):
    """A 256-unit pooled tagger against the 256-unit raw-text tagger, a 25-epoch one against the
    25-epoch raw-text tagger; the default pooled tagger has no such pair."""
    names = [diagnosis.DEFAULT, "surrogates at export", "surrogates at export, tagger 256 units",
             "raw text, tagger 256 units", "surrogates at export, tagger 25 epochs", "raw text, tagger 25 epochs",
             "tagger 256 units"]
    assert diagnosis.like_for_like(names) == [
        ("surrogates at export, tagger 256 units", "raw text, tagger 256 units"),
        ("surrogates at export, tagger 25 epochs", "raw text, tagger 25 epochs"),
        ("tagger 256 units", "raw text, tagger 256 units")]
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    seed = {**rows("raw", 10, 0), **rows(diagnosis.DEFAULT, 8, 2), **rows("tagger 256 units", 9, 1),
            **rows("raw text, tagger 256 units", 10, 0)}
    args = argparse.Namespace(corpus="meddocan", federation="federation_meddocan", results_name="units",
                              baseline="raw", variants=[*diagnosis.VARIANTS][::-1])
    page = diagnosis.report({0: seed}, args)
    assert "| tagger 256 units - raw text, tagger 256 units | alone |" in page
    assert ("--federation federation_meddocan --seeds 0 --report-only --variants 'tagger 256 units' "
            "'raw text, tagger 256 units' --results-name units`") in page
    page = diagnosis.report({0: seed}, argparse.Namespace(**{**vars(args), "variants": ["tagger 256 units"]}))
    assert "raw text, tagger 256 units" not in page and "| tagger 256 units - raw text | alone |" in page


def test_against_a_site_s_own_tagger_the_default_s_target_is_the_site_s_view(tmp_path, monkeypatch):
    monkeypatch.setattr(results_files, "RESULTS", tmp_path)
    site = "site_b raw text, tagger reads characters"
    seed = {**rows("raw", 10, 0), **rows(diagnosis.DEFAULT, 8, 2), **rows(site, 9, 1)}
    args = argparse.Namespace(corpus="meddocan", federation="federation_meddocan", results_name="site",
                              baseline=site, variants=[site])
    page = diagnosis.report({0: seed}, args)
    assert f"| {diagnosis.DEFAULT} - {site} | alone |" in page
    assert all(line.endswith("| > 0 |") for line in page.splitlines() if line.startswith(f"| {diagnosis.DEFAULT}"))
    raw = diagnosis.report({0: seed}, argparse.Namespace(**{**vars(args), "baseline": "raw"}))
    assert all(line.endswith("| > -1.0 |") for line in raw.splitlines() if line.startswith(f"| {diagnosis.DEFAULT}"))


def test_a_variant_keeps_a_run_record_of_its_own_and_not_the_one_of_the_run_it_continues(tmp_path, monkeypatch):
    monkeypatch.setattr(results_files, "git_commit", lambda: "aaa1111")
    monkeypatch.setattr(federation, "text_tagger_rows", lambda *a, **k: {})
    short, longer = "surrogates at export", "surrogates at export, tagger 25 epochs"
    diagnosis.write_run_record(tmp_path / "diagnosis" / diagnosis.folder_name(short), seed=0, variant=short)
    (tmp_path / "diagnosis" / diagnosis.folder_name(short) / "tagger").mkdir()
    (tmp_path / "diagnosis" / diagnosis.folder_name(short) / "tagger" / "state.npz").write_text("epoch 10")
    monkeypatch.setattr(results_files, "git_commit", lambda: "bbb2222")
    name = "raw text, tagger stops on validation loss"
    diagnosis.variant_rows(federation.CORPORA["meddocan"], tmp_path, 3, name, diagnosis.VARIANTS[name], {},
                           ("glove", None), None, {})
    run = json.loads((tmp_path / "diagnosis" / diagnosis.folder_name(name) / results_files.RUN_RECORD).read_text())
    assert (run["commit"], run["seed"], run["variant"]) == ("bbb2222", 3, name) and "continues" not in run
    out = tmp_path / "diagnosis" / diagnosis.folder_name(longer)
    diagnosis.write_run_record(out, seed=3, variant=longer, continues=short)
    diagnosis.carry_on(tmp_path, diagnosis.VARIANTS[longer], out)  # as variant_rows does: the record first
    assert (out / "tagger" / "state.npz").read_text() == "epoch 10"
    run = json.loads((out / results_files.RUN_RECORD).read_text())
    assert (run["commit"], run["variant"], run["continues"]) == ("bbb2222", longer, short)
    assert diagnosis.variant_folders(tmp_path, longer) == [out, tmp_path / "diagnosis" / diagnosis.folder_name(short)]
    assert diagnosis.variant_folders(tmp_path, "raw text, tagger 25 epochs") == [
        tmp_path / "diagnosis" / "raw-text,-tagger-25-epochs"]  # it continues the seed folder's own tagger


def test_a_page_from_run_folders_with_run_records_says_which_commits_trained_them(tmp_path, monkeypatch):
    """The federation's seed folders and the reported variants' folders count; without run
    records the page names the reporting commit alone, as before."""
    monkeypatch.setattr(results_files, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(diagnosis, "REPO", tmp_path)
    seed = {**rows("raw", 10, 0), **rows(diagnosis.DEFAULT, 8, 2), **rows("3 export draws", 9, 1)}
    args = argparse.Namespace(corpus="meddocan", federation="federation_x", results_name=None, baseline="raw",
                              variants=list(diagnosis.VARIANTS))
    monkeypatch.setattr(results_files, "git_commit", lambda: "ccc3333")
    before = diagnosis.report({0: seed}, args, write=False)
    assert "commit ccc3333; seeds [0]" in before
    seed_dir = tmp_path / "runs" / "federation_x" / "seed-0"
    monkeypatch.setattr(results_files, "git_commit", lambda: "aaa1111")
    results_files.write_run_record(seed_dir, seed=0)
    monkeypatch.setattr(results_files, "git_commit", lambda: "bbb2222")
    results_files.write_run_record(seed_dir / "diagnosis" / "3-export-draws", seed=0)
    monkeypatch.setattr(results_files, "git_commit", lambda: "ddd4444")
    results_files.write_run_record(seed_dir / "diagnosis" / "tagger-256-units", seed=0)  # not reported: not counted
    monkeypatch.setattr(results_files, "git_commit", lambda: "ccc3333")
    diagnosis.report({0: seed}, args)
    stored = json.loads((tmp_path / "results" / "federation" / "federation_x_diagnosis.json").read_text())
    assert stored["record"]["trained_at"] == ["aaa1111", "bbb2222"]
    trained = "trained at aaa1111, bbb2222; reported at ccc3333"
    assert diagnosis.page(stored) == before.replace("commit ccc3333", trained)
