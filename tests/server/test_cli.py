"""`deidpool server`, `deidpool coordinator` and the client's server commands end to end
against an app in process (the HTTP client is swapped for a TestClient), plus one real
`server run`."""

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import httpx
import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from deidpool.cli import app as cli
from deidpool.cli import http, server_commands
from deidpool.cli.http import ServerError, checked_server_url
from deidpool.cli.server_commands import KEEP_ALIVE_SECONDS
from deidpool.client.server_url import ALLOW_INSECURE_HTTP
from deidpool.representer import keys
from deidpool.representer.bundle import TAGGER_FILE
from deidpool.server.app import create_app
from deidpool.server.database import SUCCEEDED, TrainingRun
from deidpool.server.settings import Layout

from .conftest import contribution_file, upload

runner = CliRunner()
SERVER = "https://testserver"  # served in process; plain http:// beyond loopback needs --allow-insecure-http


def _run(*args, token=None):
    env = {"DEIDPOOL_ADMIN_TOKEN": token} if token else {}
    return runner.invoke(cli, [str(arg) for arg in args], env=env)


@pytest.fixture
def served(tmp_path, database, key_files, monkeypatch):
    """`deidpool server init` run, its app served in process; (data dir, token, app)."""
    data_dir = tmp_path / "server"
    result = _run("server", "init", "--data-dir", data_dir, "--provider-key", key_files.provider.public)
    assert result.exit_code == 0, result.output
    token = re.search(r"admin token: (\S+)", result.output).group(1)
    assert "shown only once" in result.output
    again = _run("server", "init", "--data-dir", data_dir, "--provider-key", key_files.provider.public)
    assert again.exit_code == 2 and "already a server data directory" in again.output
    with TestClient(create_app(data_dir)) as client:
        monkeypatch.setattr(http, "httpx_client", lambda server: TestClient(client.app, base_url=server))
        yield data_dir, token, client


def test_coordinator_and_client_commands(served, key_files, pipeline_path, workspace, tmp_path):
    data_dir, token, client = served
    outputs = []

    def run(*args, code=0, admin=True):
        result = _run(*args, "--server", SERVER, token=token if admin else None)
        outputs.append(result.output)
        assert result.exit_code == code, result.output
        return result.output

    assert "registered site-a" in run("coordinator", "register", "--institution", "site-a", "--public-key",
                                      key_files.institution.public)
    assert "already registered" in run("coordinator", "register", "--institution", "site-a", "--public-key",
                                       key_files.institution.public, code=2)
    assert "disabled site-a" in run("coordinator", "disable", "site-a")
    assert "enabled site-a" in run("coordinator", "enable", "site-a")
    assert "current representer: rep-" in run("coordinator", "set-representer", pipeline_path)
    assert "0 contributions" in run("client", "contributions", "--key", key_files.institution.private, admin=False)

    state = client.app.state.server
    site = SimpleNamespace(representer=client.get("/api/representers/current").json()["representer_id"],
                           key=keys.load_private_key(key_files.institution.private, keys.SIGNING),
                           server_key=keys.load_public_key(state.layout.encryption_public_key, keys.ENCRYPTION))
    assert upload(client, contribution_file(tmp_path / "a.dpc", site).read_bytes(), site.key).status_code == 201
    listing = run("client", "contributions", "--key", key_files.institution.private, admin=False)
    assert "1 contributions" in listing and site.representer in listing
    (sha256,) = [row["sha256"] for row in client.get("/api/contributions/of/site-a",
                                                     headers={"Authorization": f"Bearer {token}"}).json()]
    assert f"quarantined {sha256}" in run("coordinator", "quarantine", sha256)
    assert "QUARANTINED" in run("coordinator", "contributions", "site-a")
    assert "quarantine" in run("coordinator", "start-run", code=2)
    assert f"released {sha256}" in run("coordinator", "quarantine", sha256, "--release")
    assert "QUARANTINED" not in run("coordinator", "contributions", "site-a")

    run_id = int(run("coordinator", "start-run", "--max-epochs", "2", "--seed", "3", "--monitor", "val_tag_f1",
                     "--lstm-units", "64").strip())
    assert f"run {run_id}: queued" in run("coordinator", "runs")
    with state.sessions() as session:
        config = session.get(TrainingRun, run_id).config
        assert (config["monitor"], config["lstm_units"]) == ("val_tag_f1", 64)
    models = state.layout.run_dir(run_id) / "models"
    models.mkdir(parents=True)
    shutil.copyfile(workspace / "run" / "models" / TAGGER_FILE, models / TAGGER_FILE)
    with state.sessions.begin() as session:
        row = session.get(TrainingRun, run_id)
        row.status, row.epochs_done = SUCCEEDED, 2
    assert f"run {run_id}: succeeded, epoch 2/2" in run("coordinator", "wait-run", run_id, "--interval", "0.1")
    assert "consistent with chance" in run("coordinator", "publish", run_id, code=2)

    report = tmp_path / "report.json"
    report.write_text(json.dumps({"verdict": "consistent with chance", "path": "export", "held_out_pairs": 10}))
    recorded = run("coordinator", "record-audit", report, "--key", key_files.provider.private)
    assert f"of {site.representer}: consistent with chance" in recorded
    assert "lists run" in run("coordinator", "publish", run_id, "--ensemble-with", run_id, code=2)
    assert "published pipeline 1" in run("coordinator", "publish", run_id)

    pipeline = tmp_path / "pipeline.tar"
    downloaded = run("client", "download", "--pipeline", "--out", pipeline, admin=False)
    assert "downloaded pipeline" in downloaded and "signature valid" in downloaded
    representer = tmp_path / "representer.tar"
    run("client", "download", "--representer", "--provider-key", key_files.provider.public, "--out", representer,
        admin=False)
    assert representer.read_bytes() == pipeline_path.read_bytes()
    wrong = tmp_path / "wrong.tar"
    assert "signature" in run("client", "download", "--pipeline", "--server-key", key_files.provider.public,
                              "--out", wrong, admin=False, code=2)
    assert not wrong.exists()
    saved = run("client", "server-keys", "--out", tmp_path / "server-keys", admin=False)
    for kind in (keys.ENCRYPTION, keys.SIGNING):
        pinned = keys.load_public_key(tmp_path / "server-keys" / f"server-{kind}.pub", kind)
        assert keys.fingerprint(pinned) in saved
        assert pinned.public_bytes_raw() == keys.load_public_key(state.layout.keys / f"server-{kind}.pub",
                                                                 kind).public_bytes_raw()
    assert token not in "".join(outputs)


def test_a_wrong_or_missing_token_is_refused_without_echoing_it(served):
    result = _run("coordinator", "runs", "--server", SERVER, token="not-the-token")
    assert result.exit_code == 2 and "401" in result.output and "not-the-token" not in result.output
    assert _run("coordinator", "runs", "--server", SERVER).exit_code != 0


@pytest.mark.parametrize("url", ["https://pool.example.org", "https://10.0.0.1:8443/", "http://127.0.0.1:8000",
                                 "http://127.1.2.3", "http://[::1]:8000", "http://localhost:8000", "http://LocalHost"])
def test_https_anywhere_and_http_on_this_machine_need_no_option(url):
    assert checked_server_url(url) == url


@pytest.mark.parametrize("url", ["http://pool.example.org", "http://10.0.0.1:8000", "http://[::ffff:127.0.0.1]",
                                 "http://localhost.example.org", "http://[2001:db8::1]"])
def test_plain_http_beyond_this_machine_needs_the_option(url):
    with pytest.raises(ServerError, match=f"^{re.escape(url)}: plain http:// .* pass {ALLOW_INSECURE_HTTP}$"):
        checked_server_url(url)
    assert checked_server_url(url, allow_insecure_http=True) == url


@pytest.mark.parametrize("url", ["pool.example.org:8000", "ftp://pool.example.org", "http://", "https:///api"])
def test_what_is_no_server_url_is_refused_option_or_not(url):
    with pytest.raises(ServerError, match="is not a server URL"):
        checked_server_url(url, allow_insecure_http=True)


def test_every_command_that_takes_a_server_takes_the_option():
    def commands(group, names=()):
        for name, command in group.commands.items():
            yield from commands(command, (*names, name)) if hasattr(command, "commands") else [((*names, name),
                                                                                                 command)]

    taking = {names: {option for parameter in command.params for option in parameter.opts}
              for names, command in commands(typer.main.get_command(cli)) if any(
                  "--server" in parameter.opts for parameter in command.params)}
    assert len(taking) == 16 and all(ALLOW_INSECURE_HTTP in options for options in taking.values()), taking


def test_the_commands_refuse_plain_http_beyond_this_machine_unless_told(served, key_files, tmp_path):
    data_dir, token, _ = served
    plain = "http://testserver"
    refusals = [_run("coordinator", "runs", "--server", plain, token=token),
                _run("client", "server-keys", "--server", plain, "--out", tmp_path / "keys"),
                _run("client", "upload", tmp_path / "none.dpc", "--server", plain, "--key", tmp_path / "none.key")]
    for result in refusals:
        assert result.exit_code == 2, result.output
        assert f"error: {plain}: plain http:// beyond this machine" in result.output
        assert f"pass {ALLOW_INSECURE_HTTP}" in result.output
    assert not (tmp_path / "keys").exists()
    told = _run("coordinator", "runs", "--server", plain, ALLOW_INSECURE_HTTP, token=token)
    assert told.exit_code == 0, told.output
    told = _run("client", "server-keys", "--server", plain, "--out", tmp_path / "keys", ALLOW_INSECURE_HTTP)
    assert told.exit_code == 0 and (tmp_path / "keys" / "server-encryption.pub").exists(), told.output


def test_server_run_starts_and_stops_the_worker_and_sets_up_its_logs(tmp_path, key_files, monkeypatch):
    import uvicorn

    from deidpool.server import logs

    assert _run("server", "init", "--data-dir", tmp_path, "--provider-key", key_files.provider.public).exit_code == 0
    events = []

    class Worker:
        pid = 1

        def __init__(self, command, preexec_fn=None):
            events.append(("start", command[1:]))

        def terminate(self):
            events.append(("terminate",))

        def wait(self, timeout):
            events.append(("wait",))

    monkeypatch.setattr(subprocess, "Popen", Worker)
    monkeypatch.setattr(logs, "configure_logging", lambda log_format: events.append(("logs", log_format)))
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: events.append(("serve", host, port, kw)))
    result = _run("server", "run", "--data-dir", tmp_path, "--port", "8123", "--log-format", "json")
    assert result.exit_code == 0, result.output
    worker = ["-m", "deidpool", "server", "worker", "--data-dir", str(tmp_path), "--log-format", "json"]
    # access lines come from deidpool.server.metrics.RequestMetrics; idle connections outlive httpx's pooled ones
    options = {"log_config": None, "access_log": False, "timeout_keep_alive": KEEP_ALIVE_SECONDS}
    assert events == [("logs", "json"), ("start", worker), ("serve", "127.0.0.1", 8123, options),
                      ("terminate",), ("wait",)]
    events.clear()
    assert runner.invoke(cli, ["server", "run", "--data-dir", str(tmp_path), "--no-worker"],
                         env={"DEIDPOOL_LOG_FORMAT": "json"}).exit_code == 0
    assert events[0] == ("logs", "json")
    refused = _run("server", "worker", "--data-dir", tmp_path, "--log-format", "xml")
    assert refused.exit_code == 2 and "--log-format" in refused.output


def _token(result) -> str:
    assert result.exit_code == 0, result.output
    return re.search(r"admin token: (\S+)", result.output).group(1)


def test_server_run_serves_http_and_honours_a_rotated_admin_token_at_once(tmp_path, key_files):
    tokens = [_token(_run("server", "init", "--data-dir", tmp_path, "--provider-key", key_files.provider.public))]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "deidpool", "server", "run", "--data-dir", str(tmp_path),
                                "--port", str(port), "--no-worker", "--log-format", "json"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env={**os.environ, "DATABASE_URL": ""})
    try:
        for _ in range(200):
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/api/health").json() == {"status": "ok"}
                break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail("the server did not answer within 20 s")

        def status(token):
            return httpx.get(f"http://127.0.0.1:{port}/api/institutions",
                             headers={"Authorization": f"Bearer {token}"}).status_code

        assert status(tokens[0]) == 200
        tokens.append(_token(_run("server", "rotate-admin-token", "--data-dir", tmp_path)))
        assert (status(tokens[0]), status(tokens[1])) == (401, 200)
        tokens.append(_token(_run("server", "init", "--data-dir", tmp_path, "--provider-key", key_files.provider.public,
                                  "--force")))
        assert (status(tokens[1]), status(tokens[2])) == (401, 200)
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0].decode()
    assert "admin token" not in output.lower() and not any(token in output for token in tokens)
    lines = [json.loads(line) for line in output.splitlines()]  # JSON only: no TensorFlow line either
    assert {"Uvicorn running on http://127.0.0.1:%d (Press CTRL+C to quit)" % port, "GET /api/institutions 401"} <= \
        {line["message"] for line in lines}


@pytest.mark.parametrize("kind, page, refused", [("viewer", "/", ["/api/runs", "/metrics"]),
                                                  ("metrics", "/metrics", ["/api/runs", "/"])])
def test_a_read_only_token_opens_its_page_only_and_is_replaced_at_once(served, kind, page, refused):
    data_dir, token, client = served
    tokens = []
    for _ in range(2):
        result = _run("server", f"rotate-{kind}-token", "--data-dir", data_dir)
        assert result.exit_code == 0 and "shown only once" in result.output, result.output
        tokens.append(re.search(rf"{kind} token: (\S+)", result.output).group(1))
    assert json.loads((data_dir / "server.json").read_text())[f"{kind}_token_sha256"] == \
        hashlib.sha256(tokens[1].encode()).hexdigest()

    def status(path, bearer):
        return client.get(path, headers={"Authorization": f"Bearer {bearer}"}).status_code

    assert (status(page, tokens[0]), status(page, tokens[1])) == (401, 200)
    assert [status(path, tokens[1]) for path in refused] == [401] * len(refused)
    assert (status(page, token), status("/api/runs", token)) == (200, 200)  # the admin token opens it all


def test_server_run_and_worker_refuse_a_data_dir_open_to_other_users(tmp_path, key_files, monkeypatch):
    """Both name every loose path and the chmod that closes them (the worker before TensorFlow
    loads); once it ran, the server starts."""
    import uvicorn

    monkeypatch.delenv("DATABASE_URL", raising=False)
    data_dir = tmp_path / "server"
    assert _run("server", "init", "--data-dir", data_dir, "--provider-key", key_files.provider.public).exit_code == 0
    layout, database = Layout(data_dir), data_dir / "deidpool.sqlite"
    for path, mode in ((data_dir, 0o755), (layout.signing_key, 0o644), (layout.settings, 0o640), (database, 0o660)):
        path.chmod(mode)
    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(app))
    monkeypatch.setattr(server_commands, "start_tensorflow", lambda: pytest.fail("the worker loaded TensorFlow"))
    for command in (["server", "run", "--no-worker"], ["server", "worker", "--once"]):
        result = _run(*command, "--data-dir", data_dir)
        assert result.exit_code == 2 and not served, result.output
        assert (f"other users may read or change {data_dir} (mode 0755), {layout.settings} (mode 0640), "
                f"{layout.signing_key} (mode 0644), {database} (mode 0660)") in result.output
    chmod = re.search(r"run `(.+)`", result.output).group(1)
    assert chmod == f"chmod 700 {data_dir} && chmod 600 {layout.settings} {layout.signing_key} {database}"
    subprocess.run(chmod, shell=True, check=True)
    result = _run("server", "run", "--no-worker", "--data-dir", data_dir)
    assert result.exit_code == 0 and len(served) == 1, result.output


def test_rotating_the_admin_token_of_a_missing_data_dir_is_a_clean_error(tmp_path):
    result = _run("server", "rotate-admin-token", "--data-dir", tmp_path / "nothing")
    assert result.exit_code == 2 and "not a server data directory" in result.output


def test_the_worker_ends_with_the_server_process(tmp_path, key_files):
    """However the server stops (here SIGTERM, which Uvicorn re-raises), its worker follows."""
    from deidpool.demo import ServerProcess, child_pids, wait_until

    assert _run("server", "init", "--data-dir", tmp_path, "--provider-key", key_files.provider.public).exit_code == 0
    server = ServerProcess(tmp_path, tmp_path / "server.log")
    try:
        wait_until(lambda: bool(child_pids(server.process.pid)), 60, "the worker to start")
        (worker,) = child_pids(server.process.pid)
        wait_until(server.healthy, 120, "the server to answer")
    finally:
        server.stop()
    wait_until(lambda: not os.path.exists(f"/proc/{worker}") or
               open(f"/proc/{worker}/status").read().count("State:\tZ"), 60, "the worker to exit")
