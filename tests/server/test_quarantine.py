"""What a training run trains on: contributions of enabled institutions that the coordinator has
not quarantined; each institution's storage quota; the safety net recorded, shown and required."""

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from deidpool.server.app import create_app
from deidpool.server.database import TrainingRun

from .conftest import contribution_file, set_limits, stored, upload


def _register_site_b(api, admin) -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    assert api.post("/api/institutions", headers=admin, json={"id": "site-b", "public_key": public}).status_code == 201
    return key


def test_runs_leave_out_disabled_institutions_and_quarantined_contributions(api, admin, site, tmp_path):
    key_b = _register_site_b(api, admin)
    mine = [upload(api, contribution_file(tmp_path / f"a{n}.dpc", site, seed=n).read_bytes(), site.key).json()
            ["sha256"] for n in range(2)]
    theirs = upload(api, contribution_file(tmp_path / "b.dpc", site, institution="site-b", signing_key=key_b)
                    .read_bytes(), key_b, institution="site-b").json()["sha256"]

    def queued() -> set[str]:
        reply = api.post("/api/runs", headers=admin, json={"max_epochs": 1})
        assert reply.status_code == 202, reply.text
        with api.app.state.server.sessions() as session:
            return set(session.get(TrainingRun, reply.json()["id"]).contributions)

    assert queued() == {*mine, theirs}
    assert api.post("/api/institutions/site-b/disable", headers=admin).status_code == 200
    assert queued() == set(mine)
    reply = api.post(f"/api/contributions/{mine[0]}/quarantine", headers=admin)
    assert reply.status_code == 200 and reply.json()["quarantined"] is True
    assert queued() == {mine[1]}
    listed = api.get("/api/contributions/of/site-a", headers=admin).json()
    assert {row["sha256"]: row["quarantined"] for row in listed} == {mine[0]: True, mine[1]: False}
    assert api.post(f"/api/contributions/{mine[1]}/quarantine", headers=admin).status_code == 200
    refused = api.post("/api/runs", headers=admin, json={"max_epochs": 1})
    assert refused.status_code == 409 and "quarantine" in refused.json()["detail"]
    assert api.post(f"/api/contributions/{mine[0]}/release", headers=admin).json()["quarantined"] is False
    assert api.post("/api/institutions/site-b/enable", headers=admin).status_code == 200
    assert queued() == {mine[0], theirs}
    assert api.post(f"/api/contributions/{'0' * 64}/quarantine", headers=admin).status_code == 404
    assert api.get("/api/contributions/of/site-z", headers=admin).status_code == 404
    assert api.post(f"/api/contributions/{mine[0]}/quarantine").status_code == 401


def test_an_upload_past_the_institutions_quota_gets_413_and_stores_nothing(server_dir, admin, site, tmp_path):
    first = contribution_file(tmp_path / "a.dpc", site, seed=0).read_bytes()
    second = contribution_file(tmp_path / "b.dpc", site, seed=1).read_bytes()
    set_limits(server_dir, max_institution_bytes=len(first) + len(second) - 1)
    with TestClient(create_app(server_dir.path)) as api:
        assert upload(api, first, site.key).status_code == 201
        before = stored(server_dir)
        reply = upload(api, second, site.key)
        assert reply.status_code == 413 and "quota" in reply.json()["detail"]
        assert stored(server_dir) == before


def test_the_safety_net_is_recorded_shown_and_can_be_required(server_dir, admin, site, tmp_path):
    netted = {"finders": ["patterns", "memory"], "flagged_tokens": 3, "categories": {"DATE": 3}}
    without = contribution_file(tmp_path / "a.dpc", site, seed=0).read_bytes()
    guarded = contribution_file(tmp_path / "b.dpc", site, seed=1, safety_net=netted).read_bytes()
    set_limits(server_dir, require_safety_net=True)
    with TestClient(create_app(server_dir.path)) as api:
        before = stored(server_dir)
        refused = upload(api, without, site.key)
        assert refused.status_code == 422 and "safety net" in refused.json()["detail"]
        assert stored(server_dir) == before
        assert upload(api, guarded, site.key).json()["safety_net"] == netted
    set_limits(server_dir, require_safety_net=False)
    with TestClient(create_app(server_dir.path)) as api:
        assert upload(api, without, site.key).status_code == 201
        listed = api.get("/api/contributions/of/site-a", headers=admin).json()
        assert sorted(bool(row["safety_net"]) for row in listed) == [False, True]
        page = api.get("/", headers=admin).text
    assert "without safety net" in page
