"""What an install puts on the import path: the one package `deidpool` (pyproject's package-dir maps
the repository's top-level folders under it), in a built wheel and in this editable install; and
the wheel installed in a fresh virtual environment runs the container image's command (the
Dockerfile's ENTRYPOINT and CMD) from a neutral folder: init, serve, the image's health check,
the dashboard's template, the worker."""

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from .test_container import DOCKERFILE, exec_form, final_stage, instructions

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("adversary", "baselines", "client", "contribution", "corpus", "pseudonymization", "representer", "server")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the tracked files (a build/ folder left in the checkout
    would lend the wheel files the package list misses)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (path,) = out.glob("deidpool-*.whl")
    return path


def test_the_wheel_holds_one_top_level_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"deidpool"}
    for folder in FOLDERS:  # every folder travels, under its new name, with its data files
        assert f"deidpool/{folder}/__init__.py" in names
    assert "deidpool/client/integrations/presidio_recognizer.py" in names
    assert "deidpool/server/migrations/script.py.mako" in names
    assert any(name.startswith("deidpool/server/templates/") and name.endswith(".html") for name in names)


def test_the_editable_install_maps_the_folders_under_deidpool():
    for folder in FOLDERS:
        spec = importlib.util.find_spec(f"deidpool.{folder}")
        assert spec is not None and Path(spec.origin) == ROOT / folder / "__init__.py"
    code = "import importlib.util, sys; print([n for n in sys.argv[1:] if importlib.util.find_spec(n)])"
    found = subprocess.run([sys.executable, "-c", code, *FOLDERS], capture_output=True, text=True, cwd="/",
                           timeout=60)
    assert found.stdout.strip() == "[]", found.stdout + found.stderr  # outside the repository: no bare `client`


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed and nothing of the checkout. Its
    dependencies are this environment's: a .pth file lists our site-packages, whose lines Python
    appends to sys.path without processing the .pth files found there (the editable install's
    finder among them), and the wheel is installed without dependencies."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site_packages,) = venv.glob("lib/python*/site-packages")
    ours = dict.fromkeys(sysconfig.get_paths()[name] for name in ("purelib", "platlib"))
    (site_packages / "dependencies.pth").write_text("".join(f"{path}\n" for path in ours))
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                           "--no-deps", "--disable-pip-version-check", str(wheel)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return venv


def _image_environment(venv: Path, home: Path) -> dict[str, str]:
    """The environment of the image's final stage, /opt/deidpool being `venv`: the Dockerfile's ENV
    over ours, without PYTHONPATH, a virtual environment or a database URL of ours."""
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "DATABASE_URL")}
    environment["HOME"] = str(home)
    for name, arguments in final_stage(instructions(DOCKERFILE)):
        if name == "ENV":
            for pair in arguments.split():
                key, value = pair.split("=", 1)
                environment[key] = value.replace("/opt/deidpool", str(venv)).replace("$PATH", os.environ["PATH"])
    return environment


def _replace_values(command: list[str], values: dict[str, str]) -> list[str]:
    """`command` with the value after each option of `values` replaced by its value there."""
    command = list(command)
    for option, value in values.items():
        command[command.index(option) + 1] = value
    return command


def test_the_fresh_environment_imports_the_wheel_not_the_checkout(installed, tmp_path):
    code = ("import importlib.util, deidpool.server, deidpool.client; print(deidpool.server.__file__); "
            "print([name for name in ('server', 'client', 'corpus') if importlib.util.find_spec(name)])")
    found = subprocess.run([str(installed / "bin" / "python"), "-c", code], capture_output=True, text=True,
                           cwd=tmp_path, env=_image_environment(installed, tmp_path), timeout=60)
    assert found.returncode == 0, found.stderr
    origin, bare = found.stdout.splitlines()
    assert Path(origin).is_relative_to(installed) and not Path(origin).is_relative_to(ROOT), origin
    assert bare == "[]"


def test_the_image_command_serves_from_the_installed_wheel(installed, key_files, tmp_path):
    """`deidpool server init`, then the image's ENTRYPOINT + CMD (its data dir and port moved to
    this test's, on loopback), answering the image's own health check; the dashboard renders its
    packaged template, the worker the command starts comes up, SIGTERM stops both."""
    final = final_stage(instructions(DOCKERFILE))
    (entrypoint,) = [exec_form(arguments) for name, arguments in final if name == "ENTRYPOINT"]
    (command,) = [exec_form(arguments) for name, arguments in final if name == "CMD"]
    (health,) = [exec_form(arguments.split(" CMD ", 1)[1]) for name, arguments in final if name == "HEALTHCHECK"]
    environment, data_dir = _image_environment(installed, tmp_path), tmp_path / "data"
    assert shutil.which(entrypoint[0], path=environment["PATH"]) == str(installed / "bin" / entrypoint[0])
    init = subprocess.run([*entrypoint, "server", "init", "--data-dir", str(data_dir), "--provider-key",
                           str(key_files.provider.public)], capture_output=True, text=True, cwd=tmp_path,
                          env=environment, timeout=120)
    assert init.returncode == 0, init.stderr
    token = init.stdout.split("admin token: ", 1)[1].split()[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    image_port = command[command.index("--port") + 1]
    health = [word.replace(f"127.0.0.1:{image_port}/", f"127.0.0.1:{port}/") for word in health]
    log = tmp_path / "server.log"
    with log.open("wb") as output:
        server = subprocess.Popen([*entrypoint, *_replace_values(command, {"--data-dir": str(data_dir),
                                                                           "--host": "127.0.0.1", "--port": port})],
                                  stdout=output, stderr=subprocess.STDOUT, cwd=tmp_path, env=environment)
    try:
        deadline = time.monotonic() + 45
        while subprocess.run(health, cwd=tmp_path, env=environment, capture_output=True).returncode != 0:
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        page = httpx.get(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {token}"})
        assert page.status_code == 200 and "<html" in page.text, page.text
        while not any(line.get("message", "").startswith("worker ") for line in _json_lines(log)):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    lines = _json_lines(log)  # the image's DEIDPOOL_LOG_FORMAT=json holds for the worker too
    assert any(line["message"].startswith("started training worker") for line in lines)
    assert not [line for line in lines if line["level"] in ("ERROR", "CRITICAL")], lines


def _json_lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
