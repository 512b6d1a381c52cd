"""GET /metrics (server/metrics.py): who may read it, the values read from the database at each
scrape (two apps on one data directory report the same), and the requests and uploads each
process counts itself."""

import base64

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.exc import OperationalError

from deidpool.server.app import create_app
from deidpool.server.database import SUCCEEDED, RunEpoch, TrainingRun
from deidpool.server.initialize import rotate_metrics_token, rotate_viewer_token
from deidpool.server.metrics import DatabaseCollector

from .conftest import contribution_file, set_limits, upload


def _bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def scrape(client, token: str) -> dict:
    """{(sample name, sorted labels): value} of one scrape."""
    reply = client.get("/metrics", headers=_bearer(token))
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/plain; version=")  # the text exposition format
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(reply.text) for sample in family.samples}


def value(samples: dict, name: str, **labels) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_metrics_need_the_metrics_or_admin_token_which_opens_nothing_else(api, server_dir):
    refused = api.get("/metrics")
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"
    assert "metrics or admin token" in refused.json()["detail"]
    viewer = rotate_viewer_token(server_dir.path)
    metrics = rotate_metrics_token(server_dir.path)
    basic = base64.b64encode(f"prometheus:{metrics}".encode()).decode()
    assert [api.get("/metrics", headers=headers).status_code for headers in (
        _bearer(viewer), _bearer("not-the-token"), {"Authorization": f"Basic {basic}"})] == [401, 401, 401]
    assert api.get("/metrics", headers=_bearer(metrics)).status_code == 200
    assert api.get("/metrics", headers=_bearer(server_dir.token)).status_code == 200  # the admin's
    assert api.get("/api/runs", headers=_bearer(metrics)).status_code == 401
    assert api.get("/", headers=_bearer(metrics)).status_code == 401  # not the dashboard either
    rotated = rotate_metrics_token(server_dir.path)  # holds at once, without a restart
    assert (api.get("/metrics", headers=_bearer(metrics)).status_code,
            api.get("/metrics", headers=_bearer(rotated)).status_code) == (401, 200)


def test_stored_data_and_runs_are_read_from_the_database_at_each_scrape(api, admin, site, server_dir, pipeline_path,
                                                                        tmp_path):
    token = rotate_metrics_token(server_dir.path)
    before = scrape(api, token)
    assert value(before, "deidpool_database_up") == 1
    assert value(before, "deidpool_contributions_stored") == 0
    assert value(before, "deidpool_stored_bytes", kind="representer") == len(pipeline_path.read_bytes())
    assert value(before, "deidpool_institutions", enabled="true") == 1
    assert value(before, "deidpool_training_epoch_seconds_count") == 0
    assert value(before, "deidpool_training_last_epoch_seconds") is None  # no epoch yet

    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    assert [upload(api, body, site.key).status_code, upload(api, body, site.key).status_code,
            upload(api, body, site.key, sha256="0" * 64).status_code] == [201, 409, 400]
    assert api.post("/api/runs", headers=admin, json={}).status_code == 202
    assert api.post("/api/runs", headers=admin, json={}).status_code == 202
    with api.app.state.server.sessions.begin() as session:  # what the worker records
        session.get(TrainingRun, 1).status = SUCCEEDED
        session.add_all([RunEpoch(run_id=1, epoch=1, metrics={"loss": 1.0, "seconds": 2.0}),
                         RunEpoch(run_id=1, epoch=2, metrics={"loss": 0.5, "seconds": 4.0}),
                         RunEpoch(run_id=2, epoch=1, metrics={"loss": 1.0, "seconds": 6.0}),
                         RunEpoch(run_id=2, epoch=2, metrics={"loss": 0.9, "seconds": 10.0}),
                         RunEpoch(run_id=2, epoch=3, metrics={"loss": 0.8})])  # no time: left out

    after = scrape(api, token)
    assert value(after, "deidpool_contributions_stored") == 1
    assert value(after, "deidpool_stored_bytes", kind="contribution") == len(body)
    assert value(after, "deidpool_training_runs", status="queued") == 1
    assert value(after, "deidpool_training_runs", status="succeeded") == 1
    assert value(after, "deidpool_training_runs", status="failed") == 0
    assert value(after, "deidpool_training_queue_length") == 1
    assert value(after, "deidpool_training_epoch_seconds_count") == 4
    assert value(after, "deidpool_training_epoch_seconds_sum") == 22
    assert value(after, "deidpool_training_last_epoch_seconds") == 10
    assert value(after, "deidpool_training_mean_epoch_seconds") == 8  # of run 2, the newest
    assert value(after, "deidpool_uploads_total", outcome="accepted", status="201") == 1
    assert value(after, "deidpool_uploads_total", outcome="duplicate", status="409") == 1
    assert value(after, "deidpool_uploads_total", outcome="refused", status="400") == 1

    with TestClient(create_app(server_dir.path)) as other:  # another process on the same data
        seen = scrape(other, token)
    stored = [name for name, _ in after if name.startswith(("deidpool_contributions", "deidpool_stored",
                                                            "deidpool_training", "deidpool_institutions"))]
    assert stored and {key: seen.get(key) for key in after if key[0] in stored} == \
        {key: after[key] for key in after if key[0] in stored}
    assert value(seen, "deidpool_uploads_total", outcome="accepted", status="201") is None  # counted in process


def test_requests_are_counted_by_route_template_and_status(api, admin, server_dir):
    token = rotate_metrics_token(server_dir.path)
    assert api.get("/api/runs/5", headers=admin).status_code == 404
    assert api.get("/api/runs/6", headers=admin).status_code == 404
    assert api.get("/nothing/here-7f3a").status_code == 404
    assert api.delete("/api/health").status_code == 405
    reply = api.get("/metrics", headers=_bearer(token))
    samples = scrape(api, token)
    assert value(samples, "deidpool_http_requests_total", method="GET", route="/api/runs/{run_id}", status="404") == 2
    assert value(samples, "deidpool_http_requests_total", method="GET", route="unmatched", status="404") == 1
    assert value(samples, "deidpool_http_requests_total", method="DELETE", route="/api/health", status="405") == 1
    assert value(samples, "deidpool_http_request_duration_seconds_count", method="GET",
                 route="/api/runs/{run_id}") == 2
    assert "here-7f3a" not in reply.text and "/api/runs/5" not in reply.text  # the label set stays bounded

    set_limits(server_dir, address_request_burst=1, address_requests_per_minute=1)  # no refill between the two
    with TestClient(create_app(server_dir.path)) as limited:  # counted although answered before routing
        assert [limited.get("/api/health").status_code for _ in range(2)] == [200, 429]
        samples = scrape(limited, server_dir.token)
    assert value(samples, "deidpool_http_requests_total", method="GET", route="unmatched", status="429") == 1


def test_a_database_that_cannot_be_read_gives_database_up_0_not_an_error(api, server_dir, monkeypatch):
    def unreachable(self, session):
        raise OperationalError("SELECT", {}, Exception("connection refused"))

    monkeypatch.setattr(DatabaseCollector, "_families", unreachable)
    samples = scrape(api, server_dir.token)
    assert value(samples, "deidpool_database_up") == 0
    assert value(samples, "deidpool_contributions_stored") is None
