"""Pooled training runs as the coordinator queues them, signed audit reports, and publication
of a succeeded run as a server-signed pipeline (refused without a passing audit unless
overridden)."""

import base64
import shutil

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deidpool.adversary.verdicts import BROKEN, CHANCE
from deidpool.representer import keys
from deidpool.representer.bundle import TAGGER_FILE, BundleError, open_bundle
from deidpool.representer.ensemble import TaggerEnsemble
from deidpool.server.auth import canonical_json
from deidpool.server.database import FAILED, SUCCEEDED, RunEpoch, TrainingRun

from .conftest import contribution_file, stored, upload


@pytest.fixture
def contributed(api, site, tmp_path):
    """Two contributions of site-a accepted; returns their hashes."""
    hashes = []
    for seed in (1, 2):
        reply = upload(api, contribution_file(tmp_path / f"{seed}.dpc", site, seed=seed).read_bytes(), site.key)
        assert reply.status_code == 201
        hashes.append(reply.json()["sha256"])
    return hashes


def _finish(api, admin, server_dir, workspace, **config):
    """A run queued with `config` and faked into a succeeded one: an untrained tagger in
    D/runs/<id>/models and the row marked succeeded with two epochs (what the worker would leave)."""
    run_id = api.post("/api/runs", headers=admin, json={"max_epochs": 2, **config}).json()["id"]
    models = server_dir.layout.run_dir(run_id) / "models"
    models.mkdir(parents=True)
    shutil.copyfile(workspace / "run" / "models" / TAGGER_FILE, models / TAGGER_FILE)
    with api.app.state.server.sessions.begin() as session:
        run = session.get(TrainingRun, run_id)
        run.status, run.epochs_done, run.best_epoch = SUCCEEDED, 2, 2
        run.metrics = {"val_loss": 0.5, "val_phi_f1": 0.8}
        session.add_all([RunEpoch(run_id=run_id, epoch=epoch, metrics={"val_loss": 1 / epoch}) for epoch in (1, 2)])
    return run_id


@pytest.fixture
def finished_run(api, admin, contributed, server_dir, workspace):
    return _finish(api, admin, server_dir, workspace)


def _signed_audit(report, key=None):
    key = key or Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return {"report": report, "signature": base64.b64encode(key.sign(canonical_json(report))).decode(),
            "signer_public_key": public}


def test_a_run_needs_a_representer_and_contributions(api, admin, site):
    reply = api.post("/api/runs", headers=admin, json={})
    assert reply.status_code == 409 and "no contribution" in reply.json()["detail"]


def test_run_settings_take_whole_numbers_written_as_floats(api, admin, contributed):
    """JSON Schema counts 3.0 an integer, and so does the server (3.5 and "3" are refused, test_api)."""
    reply = api.post("/api/runs", headers=admin, json={"max_epochs": 3.0, "seed": 4e0})
    assert reply.status_code == 202
    assert reply.json()["config"] == {"max_epochs": 3, "patience": 5, "seed": 4, "valid_fraction": 0.1,
                                     "lstm_units": 128, "monitor": "val_loss"}
    assert '"max_epochs":3,' in reply.text


def test_a_queued_run_covers_every_contribution_of_the_current_representer(api, admin, contributed):
    reply = api.post("/api/runs", headers=admin, json={"max_epochs": 3, "patience": 2, "seed": 4,
                                                       "valid_fraction": 0.25})
    assert reply.status_code == 202
    run = reply.json()
    assert run["status"] == "queued" and run["contributions"] == 2
    assert run["config"] == {"max_epochs": 3, "patience": 2, "seed": 4, "valid_fraction": 0.25, "lstm_units": 128,
                             "monitor": "val_loss"}
    with api.app.state.server.sessions() as session:
        assert sorted(session.get(TrainingRun, run["id"]).contributions) == sorted(contributed)
    assert api.get(f"/api/runs/{run['id']}", headers=admin).json()["status"] == "queued"
    assert [row["id"] for row in api.get("/api/runs", headers=admin).json()] == [run["id"]]
    assert api.get("/api/runs/77", headers=admin).status_code == 404


def test_publish_refuses_unfinished_runs_and_runs_without_a_passing_audit(api, admin, contributed, finished_run,
                                                                        server_dir):
    queued = api.post("/api/runs", headers=admin, json={}).json()["id"]
    before = stored(server_dir)
    reply = api.post(f"/api/runs/{queued}/publish", headers=admin, json={"override_audit": True})
    assert reply.status_code == 409 and "queued" in reply.json()["detail"]
    reply = api.post(f"/api/runs/{finished_run}/publish", headers=admin, json={})
    assert reply.status_code == 409 and "consistent with chance" in reply.json()["detail"]
    assert api.post("/api/runs/99/publish", headers=admin).status_code == 404
    assert stored(server_dir) == before
    assert api.get("/api/pipelines/latest").status_code == 404


def test_publish_with_override_signs_a_pipeline_with_the_server_key(api, admin, finished_run, server_dir, site):
    reply = api.post(f"/api/runs/{finished_run}/publish", headers=admin, json={"override_audit": True})
    assert reply.status_code == 201, reply.text
    assert reply.json()["audit_override"] is True
    latest = api.get("/api/pipelines/latest").json()
    assert latest["run_id"] == finished_run and latest["training"]["metrics"]["val_phi_f1"] == 0.8
    assert [epoch["epoch"] for epoch in latest["epochs"]] == [1, 2]
    bundle_path = server_dir.path.parent / "pipeline.tar"
    bundle_path.write_bytes(api.get("/api/pipelines/latest/bundle").content)
    signing = keys.load_public_key(server_dir.layout.signing_public_key, keys.SIGNING)
    bundle = open_bundle(bundle_path, signing)
    assert bundle.is_pipeline and bundle.representer_id == site.representer
    assert bundle.manifest["pipeline"]["training"]["audit"] == {"override": True}
    with pytest.raises(BundleError, match="signature"):
        open_bundle(bundle_path, keys.load_public_key(server_dir.layout.provider_key, keys.SIGNING))


def test_publish_after_a_signed_passing_audit(api, admin, finished_run, site, server_dir):
    broken = api.post("/api/audits", headers=admin, json=_signed_audit({"representer_id": site.representer,
                                                                        "verdict": BROKEN}))
    assert broken.status_code == 201 and broken.json()["verdict"] == BROKEN
    assert api.post(f"/api/runs/{finished_run}/publish", headers=admin, json={}).status_code == 409
    bare = {"representer_id": site.representer, "verdict": CHANCE, "path": "representer"}
    assert api.post("/api/audits", headers=admin, json=_signed_audit(bare)).status_code == 201
    refused = api.post(f"/api/runs/{finished_run}/publish", headers=admin, json={})
    assert refused.status_code == 409 and "export path" in refused.json()["detail"]
    report = {"representer_id": site.representer, "verdict": CHANCE, "path": "export", "held_out_pairs": 400,
              "attacks": {"x": 1}}
    passed = api.post("/api/audits", headers=admin, json=_signed_audit(report))
    assert passed.status_code == 201
    assert passed.json()["summary"] == {"representer_id": site.representer, "verdict": CHANCE, "path": "export",
                                        "held_out_pairs": 400}
    assert [audit["verdict"] for audit in api.get("/api/audits").json()] == [BROKEN, CHANCE, CHANCE]
    reply = api.post(f"/api/runs/{finished_run}/publish", headers=admin)
    assert reply.status_code == 201 and reply.json()["audit_override"] is False
    assert reply.json()["training"]["audit"] == {"id": passed.json()["id"], "verdict": CHANCE}


@pytest.mark.parametrize("change, status, words", [
    (lambda audit: {**audit, "signature": base64.b64encode(b"x" * 64).decode()}, 400, "does not verify"),
    (lambda audit: {**audit, "signature": "not base64!"}, 400, "does not verify"),
    (lambda audit: {**audit, "report": {**audit["report"], "verdict": "broken"}}, 400, "does not verify"),
    (lambda audit: {**audit, "signer_public_key": "junk"}, 422, "signer_public_key"),
    (lambda audit: _signed_audit({"verdict": CHANCE}), 422, "representer_id"),
    (lambda audit: _signed_audit({**audit["report"], "verdict": "fine"}), 422, "verdict"),
    (lambda audit: _signed_audit({**audit["report"], "representer_id": "rep-unknown"}), 404, "not registered"),
])
def test_bad_audits_are_refused(api, admin, site, server_dir, change, status, words):
    audit = _signed_audit({"representer_id": site.representer, "verdict": CHANCE})
    before = stored(server_dir)
    reply = api.post("/api/audits", headers=admin, json=change(audit))
    assert reply.status_code == status and words in reply.json()["detail"]
    assert stored(server_dir) == before


def test_publish_a_seed_ensemble_of_runs(api, admin, finished_run, server_dir, workspace):
    other = _finish(api, admin, server_dir, workspace, seed=1)
    reply = api.post(f"/api/runs/{finished_run}/publish", headers=admin,
                     json={"override_audit": True, "ensemble_with": [other]})
    assert reply.status_code == 201, reply.text
    assert reply.json()["run_id"] == finished_run
    training = api.get("/api/pipelines/latest").json()["training"]
    assert training["run_id"] == finished_run and training["metrics"]["val_phi_f1"] == 0.8
    assert [(run["run_id"], run["best_epoch"], run["config"]["seed"]) for run in training["ensemble"]] == [
        (finished_run, 2, 0), (other, 2, 1)]
    bundle_path = server_dir.path.parent / "pipeline.tar"
    bundle_path.write_bytes(api.get("/api/pipelines/latest/bundle").content)
    bundle = open_bundle(bundle_path, keys.load_public_key(server_dir.layout.signing_public_key, keys.SIGNING))
    assert bundle.tagger_files == ["tagger-1.keras", "tagger-2.keras"]
    assert bundle.manifest["pipeline"]["taggers"] == 2
    assert isinstance(bundle.load_tagger(), TaggerEnsemble)


def test_publish_refuses_ensembles_of_unknown_unfinished_or_repeated_runs(api, admin, finished_run, server_dir,
                                                                          workspace):
    queued = api.post("/api/runs", headers=admin, json={}).json()["id"]
    failed = _finish(api, admin, server_dir, workspace)
    with api.app.state.server.sessions.begin() as session:
        session.get(TrainingRun, failed).status = FAILED
    elsewhere = _finish(api, admin, server_dir, workspace)
    with api.app.state.server.sessions.begin() as session:
        session.get(TrainingRun, elsewhere).representer_id = "rep-other"
    untrained = _finish(api, admin, server_dir, workspace)
    (server_dir.layout.run_dir(untrained) / "models" / TAGGER_FILE).unlink()
    before = stored(server_dir)
    for members, status, words in [([99], 404, "no training run 99"), ([queued], 409, "queued"),
                                   ([failed], 409, "failed"), ([elsewhere], 409, "rep-other"),
                                   ([untrained], 409, f"run {untrained} has no tagger file"),
                                   ([finished_run], 422, "itself"), ([failed, failed], 422, "more than once"),
                                   ([0], 422, "ensemble_with"), (list(range(2, 13)), 422, "ensemble_with")]:
        reply = api.post(f"/api/runs/{finished_run}/publish", headers=admin,
                         json={"override_audit": True, "ensemble_with": members})
        assert reply.status_code == status and words in reply.json()["detail"], (members, reply.text)
    assert stored(server_dir) == before
    assert api.get("/api/pipelines/latest").status_code == 404
