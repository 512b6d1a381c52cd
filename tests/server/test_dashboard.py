"""The dashboard at `/`: only with the viewer or admin token (and the viewer token opens
nothing else), curve geometry, escaping and no secret on the page, and the page as headless
Chromium renders it, logged in, from a real server populated through the API."""

import base64
import shutil
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deidpool.client.identity import create_institution_keys
from deidpool.client.transport import upload_contribution
from deidpool.contribution.container import read_header
from deidpool.demo import ServerProcess, wait_until
from deidpool.representer import keys
from deidpool.representer.bundle import TAGGER_FILE
from deidpool.server import charts
from deidpool.server.auth import canonical_json
from deidpool.server.database import SUCCEEDED, Institution, RunEpoch, TrainingRun, open_database
from deidpool.server.initialize import rotate_viewer_token

from .conftest import contribution_file

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
EPOCHS = [{"epoch": 1, "loss": 2.0, "val_loss": 1.6, "val_f1": 0.2}, {"epoch": 2, "loss": 1.2, "val_loss": 1.1,
                                                                        "val_f1": 0.55},
          {"epoch": 3, "loss": 0.8, "val_loss": 0.9, "val_f1": 0.7}]


class Page(HTMLParser):
    """Table rows per section (the `id` of the h2 before them), the SVG polylines and the text."""

    def __init__(self, html: str):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.polylines: list[dict] = []
        self.section, self.row, self.cell, self.data = None, None, None, []
        self.feed(html)
        self.text = " ".join("".join(self.data).split())

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2":
            self.section = attrs.get("id")
        elif tag == "tr":
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = []
        elif tag == "polyline":
            self.polylines.append(attrs)

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr":
            if self.row:
                self.tables.setdefault(self.section, []).append(self.row)
            self.row = None

    def handle_data(self, data):
        self.data.append(data)
        if self.cell is not None:
            self.cell.append(data)


def test_training_curves_scale_each_metric_over_the_epochs():
    panels = charts.training_curves([EPOCHS[2], EPOCHS[0], EPOCHS[1], {"epoch": 4, "loss": float("nan")}])
    loss, f1 = panels
    x0, y0, width, height = charts.PLOT
    assert [line.label for line in loss.lines] == ["training", "validation"] and loss.epochs == (1, 4)
    training = loss.lines[0].points
    assert [x for x, _ in training] == [x0, x0 + width / 3, x0 + 2 * width / 3]  # the NaN epoch is left out
    assert training[0][1] < training[1][1] < training[2][1]  # a falling loss is drawn going down
    assert y0 <= min(y for line in loss.lines for _, y in line.points) < max(y for _, y in training) <= y0 + height
    assert [round(y, 6) for _, y in f1.lines[0].points] == [round(y0 + height * (1 - f), 6) for f in (0.2, 0.55, 0.7)]
    assert f1.left == charts.PANEL_WIDTH + charts.GAP and f1.ticks[-1][1] == "1"
    only_val_loss = charts.training_curves([{"epoch": 5, "val_loss": 0.4}])
    assert [panel.title for panel in only_val_loss] == ["loss"]
    assert only_val_loss[0].lines[0].points == [(x0 + width / 2, y0 + height / 2)]
    assert charts.training_curves([]) == []


def _basic(token: str) -> dict:
    """The Authorization header a browser sends once its user typed `token` as the password."""
    return {"Authorization": "Basic " + base64.b64encode(f"anyone:{token}".encode()).decode()}


def test_the_dashboard_needs_the_viewer_or_admin_token_and_the_viewer_token_opens_nothing_else(api, server_dir, admin):
    refused = api.get("/")
    assert refused.status_code == 401 and "viewer or admin token" in refused.json()["detail"]
    assert refused.headers["www-authenticate"].startswith('Basic realm="deidpool dashboard"')  # a browser asks
    assert "Institutions" not in refused.text
    assert api.get("/", headers={"Authorization": "Bearer not-the-token"}).status_code == 401
    assert api.get("/", headers=_basic("")).status_code == 401
    assert api.get("/", headers=admin).status_code == 200
    assert api.get("/", headers=_basic(server_dir.token)).status_code == 200
    viewer = rotate_viewer_token(server_dir.path)
    for headers in (_basic(viewer), {"Authorization": f"Bearer {viewer}"}):
        page = api.get("/", headers=headers)
        assert page.status_code == 200 and "Institutions" in page.text and page.headers["cache-control"] == "no-store"
    for method, path in (("GET", "/api/institutions"), ("GET", "/api/runs"), ("POST", "/api/runs")):
        for headers in ({"Authorization": f"Bearer {viewer}"}, _basic(viewer)):
            assert api.request(method, path, headers=headers).status_code == 401, (method, path)
    rotated = rotate_viewer_token(server_dir.path)
    assert api.get("/", headers=_basic(viewer)).status_code == 401  # the old viewer token stops at once
    assert api.get("/", headers=_basic(rotated)).status_code == 200


def test_the_page_escapes_what_it_shows_and_holds_no_secret(api, server_dir):
    viewer = _basic(rotate_viewer_token(server_dir.path))
    empty = api.get("/", headers=viewer)
    assert empty.status_code == 200 and empty.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in empty.headers["content-security-policy"]
    assert "No institution registered yet" in empty.text and "No training run yet" in empty.text
    with api.app.state.server.sessions.begin() as session:
        session.add(Institution(id="<script>alert(1)</script>", public_key="-----BEGIN PUBLIC KEY-----",
                                fingerprint='"><img src=x>', enabled=True))
    page = api.get("/", headers=viewer).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&#34;&gt;&lt;img src=x&gt;" in page
    assert "<script" not in page and "<img" not in page
    assert server_dir.token not in page and "PUBLIC KEY" not in page


def _signed_audit(report: dict) -> dict:
    key = Ed25519PrivateKey.generate()
    return {"report": report, "signature": base64.b64encode(key.sign(canonical_json(report))).decode(),
            "signer_public_key": key.public_key().public_bytes(serialization.Encoding.PEM,
                                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()}


def _fake_finished_run(server_dir, run_id: int, workspace: Path) -> None:
    """What the worker leaves after three epochs: the tagger file and the run marked succeeded."""
    models = server_dir.layout.run_dir(run_id) / "models"
    models.mkdir(parents=True)
    shutil.copyfile(workspace / "run" / "models" / TAGGER_FILE, models / TAGGER_FILE)
    sessions = open_database(server_dir.path, migrate=False)
    with sessions.begin() as session:
        run = session.get(TrainingRun, run_id)
        run.status, run.epochs_done, run.best_epoch = SUCCEEDED, 3, 3
        run.metrics = {"val_loss": 0.9, "val_f1": 0.7}
        session.add_all([RunEpoch(run_id=run_id, epoch=record["epoch"], metrics=record) for record in EPOCHS])
    sessions.kw["bind"].dispose()


def test_the_dashboard_in_headless_chromium(server_dir, database, key_files, pipeline_path, workspace, chromium,
                                            tmp_path):
    viewer = rotate_viewer_token(server_dir.path)
    server = ServerProcess(server_dir.path, tmp_path / "server.log", worker=False)
    try:
        wait_until(server.healthy, 120, "the server to answer /api/health")
        admin = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server_dir.token}"}, timeout=60)
        site_b = create_institution_keys(tmp_path / "site-b", "site-b")
        for name, pair in (("site-a", key_files.institution), ("site-b", site_b)):
            reply = admin.post("/api/institutions", json={"id": name, "public_key": pair.public.read_text()})
            assert reply.status_code == 201, reply.text
        representer = admin.post("/api/representers", content=pipeline_path.read_bytes()).json()["representer_id"]
        server_key = keys.load_public_key(server_dir.layout.encryption_public_key, keys.ENCRYPTION)
        uploads = {"site-a": [], "site-b": []}
        for number, name, pair in ((1, "site-a", key_files.institution), (2, "site-a", key_files.institution),
                                   (3, "site-b", site_b)):
            site = SimpleNamespace(representer=representer, server_key=server_key,
                                   key=keys.load_private_key(pair.private, keys.SIGNING))
            means = {"uniform": 0.01, "frequency": 0.01 * number, "empirical": 0.1 * number}
            bound = {"overall": {"mean_success": means}}
            path = contribution_file(tmp_path / f"{number}.dpc", site, institution=name, sentences=4 + number,
                                     seed=number, bound=bound if name == "site-a" else None)
            upload_contribution(path, server.url, signing_key=site.key, retries=0)
            uploads[name].append(path)
        assert admin.post("/api/institutions/site-b/disable").status_code == 200
        finished = admin.post("/api/runs", json={"max_epochs": 5}).json()["id"]
        _fake_finished_run(server_dir, finished, workspace)
        queued = admin.post("/api/runs", json={}).json()["id"]
        audit = admin.post("/api/audits", json=_signed_audit({"representer_id": representer, "path": "export",
                                                              "verdict": "consistent with chance"}))
        assert audit.status_code == 201, audit.text
        assert admin.post(f"/api/runs/{finished}/publish", json={}).status_code == 201
        screenshot = tmp_path / "dashboard.png"
        logged_in = server.url.replace("http://", f"http://viewer:{viewer}@")  # as if typed in the login prompt
        page = Page(chromium(logged_in + "/", screenshot))
    finally:
        server.stop()
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(screenshot, ARTIFACTS / ("dashboard.png" if database == "sqlite" else f"dashboard-{database}.png"))

    institutions = {row[0]: row for row in page.tables["institutions"]}
    assert institutions["site-a"][1:4] == [key_files.institution.fingerprint, "yes", "2"]
    assert institutions["site-b"][1:4] == [site_b.fingerprint, "no", "1"]
    for name, paths in uploads.items():
        headers = [read_header(path) for path in paths]
        expected = [name, representer, str(len(paths)), f"{sum(h.sentences for h in headers):,}",
                    f"{sum(h.tokens for h in headers):,}", f"{sum(path.stat().st_size for path in paths):,}",
                    "100", *(("0.0200", "0.2000") if name == "site-a" else ("-", "-")),  # least N, highest bounds
                    str(len(paths)), "0"]  # every file exported without safety net, none quarantined
        assert expected in page.tables["contributions"]
    assert [row[:3] for row in page.tables["pipelines"]] == [["1", str(finished), representer]]
    assert page.tables["pipelines"][0][4] == "passed"
    assert [row[1:3] for row in page.tables["audits"]] == [[representer, "consistent with chance"]]
    lines = [(line["class"], len(line["points"].split())) for line in page.polylines]
    assert lines == [("train", 3), ("valid", 3), ("f1", 3)]  # the finished run; the queued one has no epoch
    assert f"Run {queued}: queued" in page.text and f"Run {finished}: succeeded" in page.text
    assert "val PHI F1 0.700" in page.text and server_dir.token not in page.text and viewer not in page.text
    assert server_dir.token not in (tmp_path / "server.log").read_text()
    assert viewer not in (tmp_path / "server.log").read_text()
    assert _drawn(screenshot, (0x25, 0x63, 0xEB)) > 100 and _drawn(screenshot, (0x16, 0xA3, 0x4A)) > 100


def _drawn(png: Path, colour: tuple[int, int, int]) -> int:
    """How many pixels of the screenshot have (nearly) this colour: the curves were painted."""
    import matplotlib.image

    pixels = matplotlib.image.imread(png)[..., :3] * 255
    return int((abs(pixels - colour).max(axis=-1) < 24).sum())
