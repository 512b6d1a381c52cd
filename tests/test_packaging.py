"""What an install puts on the import path: the one package `deidpool` (pyproject's package-dir maps
the repository's top-level folders under it), in a built wheel and in this editable install."""

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("adversary", "baselines", "client", "contribution", "corpus", "representer", "server")


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
