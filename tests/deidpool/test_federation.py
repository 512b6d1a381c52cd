"""deidpool.federation on the demo's tiny notes: a whole federation (provider, two institutions, an
in-process pooling server) leaves the benchmark's layout, and run again it reuses every file."""

import dataclasses
import subprocess
import sys
from types import SimpleNamespace

import pytest

from deidpool import federation as api
from deidpool.demo import DemoSettings, demo_documents, tag_set
from deidpool.representer.bundle import open_bundle
from deidpool.representer.embeddings import load_embeddings
from tests.adversary.conftest import fast_graph_compilation  # noqa: F401 (an autouse fixture)

SETTINGS = DemoSettings.tiny()
PARTIES = ("provider", "site_a")
POOLED = api.PooledSettings(max_epochs=1, patience=1, lstm_units=4, monitor="val_loss")


def federate(folder, documents, tags, vectors) -> dict:
    """One round into `folder`, as experiments/federation.py lays it out; what each step returned."""
    provider = api.train_provider(documents["provider"][:6], documents["provider"][6:], folder, SETTINGS.representer,
                              run="representer", tags=tags, embeddings=SETTINGS.embeddings, loaded_embeddings=vectors,
                              data={"role": "provider"}, progress=False)
    bundle = provider.bundle()
    server_key = api.pooling_server_key(folder / "keys")
    contributions, exported = [], {}
    for institution in PARTIES:
        party = api.party_keys(folder / "keys" / institution, institution)
        path = folder / "contributions" / f"{institution}.dpc"
        if not path.exists():
            exported[institution] = api.export_party(documents[institution], bundle, vectors, path, party,
                                                 server_key=server_key.public_key(), progress=False)
        contributions.append(party.contribution(path))
    pooled = api.train_pooled_round(contributions, server_key, bundle, folder / "taggers" / "pooled",
                                folder / "pipelines" / "pooled.tar", tags=tags, signing_key=provider.keys.private(),
                                settings=POOLED)
    return {"provider": provider, "bundle": bundle, "exported": exported, "pooled": pooled}


@pytest.fixture(scope="module")
def federation(tmp_path_factory):
    """(the seed folder, the first round's results, the second round's, the keys, bundle,
    contributions and pipeline after the first)."""
    folder = tmp_path_factory.mktemp("federation") / "seed-0"
    documents = demo_documents(None, None, SETTINGS)
    tags, vectors = tag_set(None, documents), load_embeddings(SETTINGS.embeddings)
    first = federate(folder, documents, tags, vectors)
    files = {path: path.read_bytes() for part in ("keys", "bundle.tar", "contributions", "pipelines")
             for path in [folder / part, *(folder / part).rglob("*")] if path.is_file()}
    return folder, first, federate(folder, documents, tags, vectors), files


def test_a_round_leaves_the_benchmarks_layout(federation):
    folder, first, _, _ = federation
    keys = folder / "keys"
    for path in (keys / "provider.key", keys / "provider.pub", keys / "server-encryption.key",
                 keys / "server-signing.key", *(keys / party / name for party in PARTIES
                                                for name in ("institution.key", "institution.pub")),
                 folder / "representer" / "config.json", folder / "bundle.tar",
                 *(folder / "contributions" / f"{party}.dpc" for party in PARTIES),
                 folder / "taggers" / "pooled" / "history.json", folder / "pipelines" / "pooled.tar"):
        assert path.is_file(), path
    provider, pooled = first["provider"], first["pooled"]
    assert provider.run == folder / "representer" and provider.bundle_path == folder / "bundle.tar"
    assert 0 <= provider.metrics["val_f1"] <= 1
    assert set(first["exported"]) == set(PARTIES)
    assert all(exported.header.sentences > 0 for exported in first["exported"].values())
    assert sum(exported.header.sentences for exported in first["exported"].values()) >= pooled.sentences > 0
    assert pooled.training["epochs"] == 1 and pooled.run_dir == folder / "taggers" / "pooled"
    pipeline = open_bundle(pooled.pipeline, provider.keys.public())
    assert pipeline.is_pipeline and pipeline.representer_id == first["bundle"].representer_id


def test_a_second_round_reuses_every_file(federation):
    folder, first, second, files = federation
    assert second["exported"] == {}  # the benchmark's callers skip a contribution that is there
    assert {path: path.read_bytes() for path in files} == files  # keys, bundle, contributions, pipeline
    assert second["provider"].metrics["val_f1"] == first["provider"].metrics["val_f1"]
    assert second["bundle"].representer_id == first["bundle"].representer_id
    assert second["pooled"].training == first["pooled"].training
    assert second["pooled"].sentences == first["pooled"].sentences


def test_a_provider_trained_before_is_read_from_its_folder(federation):
    folder, first, _, _ = federation
    assert api.provider_at(folder, "representer") == dataclasses.replace(first["provider"], metrics={})


def test_a_round_names_each_contribution_and_trains_as_its_settings_say(tmp_path, monkeypatch):
    """A party with several contributions names each; the settings reach the server's trainer."""
    from deidpool.server import pooled

    trained = {}
    monkeypatch.setattr(pooled, "open_pooled_data", lambda contributions, key, **options: SimpleNamespace(train=[1]))
    monkeypatch.setattr(pooled, "train_pooled", lambda data, run_dir, **options: trained.update(options) or {})
    (tmp_path / "pipeline.tar").write_text("published before")
    party = api.party_keys(tmp_path / "site_a", "site_a")
    contributions = [party.contribution(tmp_path / "site_a.dpc"), party.contribution(tmp_path / "b.dpc", "site_a-1")]
    api.train_pooled_round(contributions, None, SimpleNamespace(representer_id="r"), tmp_path / "run",
                           tmp_path / "pipeline.tar", tags=["O"], signing_key=None,
                           settings=dataclasses.replace(POOLED, word_dropout=0.2))
    assert trained["contributions"] == ["site_a", "site_a-1"] and trained["word_dropout"] == 0.2


def test_importing_the_api_imports_no_heavy_framework():
    code = "import sys, deidpool.federation; print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip() == "[]"
