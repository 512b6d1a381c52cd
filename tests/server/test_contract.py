"""The OpenAPI document as the API's contract: each route declares the statuses its kind
implies (any: 429, credentials: 401, a body: 400 and 413, a binary body: 415 and 507, ...), every
refusal with the `{"detail": message}` model, every success with its body (JSON: a response
model), and the statuses the server answers are among those declared for the route (the
schemathesis test checks the same, and the bodies, for generated requests)."""

import errno
import hashlib

from fastapi.testclient import TestClient

from deidpool.contribution.signed_requests import signed_headers
from deidpool.server.app import create_app
from deidpool.server.deps import MAX_JSON_BYTES

from .conftest import contribution_file, set_limits, stored, upload

REFUSAL = {"$ref": "#/components/schemas/RefusalBody"}


def _operations(app) -> dict:
    """{"METHOD /path": operation} of the app's OpenAPI document."""
    return {f"{method.upper()} {path}": operation for path, operations in app.openapi()["paths"].items()
            for method, operation in operations.items()}


def test_every_route_declares_the_statuses_its_kind_implies(api):
    operations = _operations(api.app)
    assert len(operations) >= 19
    for label, operation in operations.items():
        declared = {int(status) for status in operation["responses"]}
        parameters = {parameter["name"] for parameter in operation.get("parameters", [])}
        bodies = set(operation.get("requestBody", {}).get("content", {}))
        implied = {429}  # rate limits (server/limits.py) answer before any route
        if operation.get("security"):
            implied.add(401)
        if parameters or "application/json" in bodies:
            implied.add(422)
        if bodies:
            implied |= {400, 413}
        if bodies - {"application/json"}:
            implied |= {415, 507}
        if "{" in label:
            implied.add(404)
        assert implied <= declared, f"{label} does not declare {sorted(implied - declared)}"
        for status in declared:
            if status >= 400:
                response = operation["responses"][str(status)]
                assert response["description"] and response["content"]["application/json"]["schema"] == REFUSAL, label
    assert "HTTPValidationError" not in api.app.openapi()["components"]["schemas"]
    assert set(operations["GET /metrics"]["responses"]["200"]["content"]) == {"text/plain"}  # Prometheus text format


def test_every_success_declares_its_body(api):
    """A JSON 2xx answer has a response model (a named schema), a file or text its media type."""
    document = api.app.openapi()
    for label, operation in _operations(api.app).items():
        for status, response in operation["responses"].items():
            if not status.startswith("2"):
                continue
            assert response.get("content"), f"{label} {status} declares no body"
            for media_type, body in response["content"].items():
                schema = body["schema"]
                if media_type == "application/json":
                    reference = schema.get("items", schema)["$ref"]
                    assert document["components"]["schemas"][reference.rsplit("/", 1)[-1]]["properties"], label
                else:
                    assert schema["type"] == "string", label


def test_exactly_the_operations_that_need_credentials_declare_their_security_scheme(api, site):
    """Without credentials an operation answers 401 if and only if the document declares what it
    needs: the admin token, the metrics token, or an institution's signed request. Clients, and
    schemathesis's ignored_auth, read it there."""
    document = api.app.openapi()
    assert set(document["components"]["securitySchemes"]) == {"AdminToken", "MetricsToken", "Institution"}
    for label, operation in _operations(api.app).items():
        method, path = label.split(" ")
        reply = api.request(method, path.format(run_id=1, institution="site-a", sha256="0" * 64))
        assert (reply.status_code == 401) == bool(operation.get("security")), f"{label}: {reply.status_code}"


def test_a_method_a_path_lacks_gets_405_allowing_every_method_it_has(api):
    """GET and POST /api/runs are two routes: Allow names both, not only the first's."""
    for path, allowed in [("/api/runs", "GET, POST"), ("/api/audits", "GET, POST"), ("/api/runs/1", "GET"),
                          ("/api/contributions", "GET, POST"), ("/metrics", "GET")]:
        reply = api.delete(path)
        assert reply.status_code == 405 and reply.headers["Allow"] == allowed, path


def test_answered_statuses_are_declared(api, admin, site, server_dir, key_files, tmp_path, monkeypatch):
    operations = _operations(api.app)
    answered = []

    def expect(label: str, status: int, reply) -> None:
        answered.append((label, status, reply.status_code, reply.text[:200]))

    body = contribution_file(tmp_path / "a.dpc", site).read_bytes()
    sha256 = {"X-Deidpool-Content-SHA256": hashlib.sha256(body).hexdigest()}
    json_admin = {**admin, "Content-Type": "application/json"}
    big_json = b" " * (MAX_JSON_BYTES + 1)

    expect("GET /api/health", 200, api.get("/api/health"))
    expect("GET /api/keys", 200, api.get("/api/keys"))
    expect("GET /api/institutions", 401, api.get("/api/institutions"))
    expect("POST /api/institutions", 401, api.post("/api/institutions", json={}))
    expect("POST /api/institutions", 409, api.post("/api/institutions", headers=admin, json={
        "id": "site-a", "public_key": key_files.institution.public.read_text()}))
    expect("POST /api/institutions", 422, api.post("/api/institutions", headers=admin, json={"id": 7}))
    expect("POST /api/institutions", 413, api.post("/api/institutions", headers=json_admin, content=big_json))
    expect("POST /api/institutions", 400, api.post("/api/institutions", headers=json_admin, content=b"\xff"))
    expect("POST /api/institutions/{institution}/disable", 404, api.post("/api/institutions/site-z/disable",
                                                                         headers=admin))
    expect("POST /api/representers", 401, api.post("/api/representers", content=b"x"))
    expect("POST /api/representers", 400, api.post("/api/representers", headers=admin, content=b"junk"))
    expect("POST /api/representers", 415, api.post("/api/representers", headers={**admin, "Content-Type": "text/plain"},
                                                   content=b"x"))
    expect("GET /api/representers/current", 200, api.get("/api/representers/current"))
    expect("GET /api/representers/current/bundle", 200, api.get("/api/representers/current/bundle"))
    expect("POST /api/contributions", 201, upload(api, body, site.key))
    expect("POST /api/contributions", 409, upload(api, body, site.key))
    expect("POST /api/contributions", 401, upload(api, body, site.key, institution="site-z"))
    expect("POST /api/contributions", 400, upload(api, body, site.key, sha256="0" * 64))
    expect("POST /api/contributions", 415, api.post("/api/contributions", content=body, headers={
        "Content-Type": "text/plain", **signed_headers(site.key, "site-a", "POST", "/api/contributions",
                                                       host="testserver",
                                                       content_sha256=sha256["X-Deidpool-Content-SHA256"])}))
    expect("POST /api/contributions", 422, upload(api, contribution_file(tmp_path / "b.dpc", site, neighbours=1)
                                                  .read_bytes(), site.key))
    expect("GET /api/contributions", 401, api.get("/api/contributions"))
    stored_sha256 = hashlib.sha256(body).hexdigest()
    expect("GET /api/contributions/of/{institution}", 200, api.get("/api/contributions/of/site-a", headers=admin))
    expect("GET /api/contributions/of/{institution}", 404, api.get("/api/contributions/of/site-z", headers=admin))
    expect("POST /api/contributions/{sha256}/quarantine", 404, api.post(f"/api/contributions/{'0' * 64}/quarantine",
                                                                        headers=admin))
    expect("POST /api/contributions/{sha256}/quarantine", 200, api.post(
        f"/api/contributions/{stored_sha256}/quarantine", headers=admin))
    expect("POST /api/contributions/{sha256}/release", 200, api.post(f"/api/contributions/{stored_sha256}/release",
                                                                     headers=admin))
    expect("POST /api/runs", 401, api.post("/api/runs", json={}))
    expect("POST /api/runs", 422, api.post("/api/runs", headers=admin, json={"seed": -1}))
    expect("POST /api/runs", 413, api.post("/api/runs", headers=json_admin, content=big_json))
    expect("POST /api/runs", 202, api.post("/api/runs", headers=admin, json={}))
    expect("GET /api/runs", 200, api.get("/api/runs", headers=admin))
    expect("GET /api/runs/{run_id}", 404, api.get("/api/runs/99", headers=admin))
    expect("GET /api/runs/{run_id}", 422, api.get("/api/runs/0", headers=admin))
    expect("POST /api/runs/{run_id}/publish", 404, api.post("/api/runs/99/publish", headers=admin))
    expect("POST /api/runs/{run_id}/publish", 409, api.post("/api/runs/1/publish", headers=admin))
    expect("POST /api/audits", 401, api.post("/api/audits", json={}))
    expect("POST /api/audits", 422, api.post("/api/audits", headers=admin, json={"report": 1}))
    expect("GET /api/audits", 200, api.get("/api/audits"))
    expect("GET /api/pipelines/latest", 404, api.get("/api/pipelines/latest"))
    expect("GET /api/pipelines/latest/bundle", 404, api.get("/api/pipelines/latest/bundle"))
    expect("GET /metrics", 401, api.get("/metrics"))
    expect("GET /metrics", 200, api.get("/metrics", headers=admin))
    expect("POST /api/institutions/{institution}/disable", 200, api.post("/api/institutions/site-a/disable",
                                                                         headers=admin))
    expect("POST /api/contributions", 403, upload(api, body, site.key))
    expect("GET /api/contributions", 403, api.get("/api/contributions", headers=signed_headers(
        site.key, "site-a", "GET", "/api/contributions", host="testserver")))
    api.post("/api/institutions/site-a/enable", headers=admin)

    # One request a minute: the second health check must find the bucket still empty however slowly
    # the first was answered (at the default 600 a minute it refilled in 0.1 s on a loaded machine).
    set_limits(server_dir, max_upload_bytes=10, address_request_burst=1, address_requests_per_minute=1)
    with TestClient(create_app(server_dir.path)) as small:
        expect("POST /api/representers", 413, small.post("/api/representers", headers=admin, content=b"x" * 11))
        expect("POST /api/contributions", 413, upload(small, body, site.key))
        expect("GET /api/health", 200, small.get("/api/health"))
        expect("GET /api/health", 429, small.get("/api/health"))
        expect("GET /metrics", 429, small.get("/metrics"))

    def full(limit=None):
        raise OSError(errno.ENOSPC, "No space left on device")

    before = stored(server_dir)
    monkeypatch.setattr(api.app.state.server.payloads, "stage", full)
    expect("POST /api/representers", 507, api.post("/api/representers", headers=admin, content=b"x"))
    expect("POST /api/contributions", 507, upload(api, body, site.key))
    assert stored(server_dir) == before

    wrong = [row for row in answered if row[1] != row[2]]
    assert not wrong, wrong
    undeclared = [(label, status) for label, status, _, _ in answered
                  if str(status) not in operations[label]["responses"]]
    assert not undeclared, undeclared
