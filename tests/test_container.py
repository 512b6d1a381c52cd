"""The container files (Dockerfile, .dockerignore, compose.yaml; docs/server.md, Running in
containers), checked without a container runtime: the image installs every package from files
that exist and the build context keeps, runs `deidpool` as a non-root user with a health check
on /api/health; the compose services share the data volume and the PostgreSQL URL, and every
command they run is a valid `deidpool` command line. hadolint and `docker compose config` run
when installed, and skip saying so otherwise."""

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import typer
import yaml
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from deidpool.cli import app as cli
from deidpool.server.settings import normalized_url

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE, COMPOSE, DOCKERIGNORE = ROOT / "Dockerfile", ROOT / "compose.yaml", ROOT / ".dockerignore"
DEIDPOOL_SERVICES = ("init", "server", "worker")
runner = CliRunner()


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments left out."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in path.read_text().splitlines()
                                          if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in joined.splitlines()
            if line.strip()]


def final_stage(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    last_from = max(index for index, (name, _) in enumerate(steps) if name == "FROM")
    return steps[last_from:]


def exec_form(arguments: str) -> list[str]:
    return yaml.safe_load(arguments)  # a JSON array is YAML


def copied_sources(steps) -> list[str]:
    """The build-context paths of COPY/ADD steps (not those copying from another stage)."""
    sources = []
    for name, arguments in steps:
        if name in ("COPY", "ADD"):
            words = [word for word in shlex.split(arguments) if not word.startswith("--")]
            assert "--from=" in arguments or len(words) >= 2, arguments
            if "--from=" not in arguments:
                sources += words[:-1]
    return sources


def ignored(path: str) -> bool:
    """Whether .dockerignore leaves `path` out of the build context (its plain patterns)."""
    patterns = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    path = path.strip("/")
    return any(fnmatch.fnmatch(path, pattern.strip("/")) or path.startswith(pattern.strip("/") + "/")
               for pattern in patterns if not pattern.startswith("!"))


def check_deidpool_command(args: list[str]) -> None:
    """`args` parse as a `deidpool` command line: its `--help` answers, and every option and
    value (choices, ranges, required ones) is accepted, without running the command."""
    result = runner.invoke(cli, [*args, "--help"])
    assert result.exit_code == 0, f"deidpool {' '.join(args)} --help: {result.output}"
    command, context, rest = typer.main.get_command(cli), None, list(args)
    while True:
        try:  # parses and converts every parameter as a run would, without calling the command
            context = command.make_context(context.info_name if context else "deidpool", rest, parent=context)
            if not hasattr(command, "resolve_command"):  # a command, not a group
                return
            protected = getattr(context, "_protected_args", None)  # Click >= 8.2; `protected_args` before
            protected = context.protected_args if protected is None else protected
            _, command, rest = command.resolve_command(context, [*protected, *context.args])
        except Exception as error:  # Typer's (vendored) Click errors
            raise AssertionError(f"deidpool {' '.join(args)}: {error}") from None


def test_the_image_installs_every_package_and_runs_deidpool_as_a_non_root_user():
    steps = instructions(DOCKERFILE)
    bases = [arguments.split()[0] for name, arguments in steps if name == "FROM"]
    assert bases and all(re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", base) for base in bases), bases
    for source in copied_sources(steps):
        assert list(ROOT.glob(source)), f"COPY {source}: no such file in {ROOT}"
        assert not ignored(source), f"COPY {source}: .dockerignore leaves it out of the build context"
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    copied = {source.strip("/") for source in copied_sources(steps)}
    assert {folder.split("/")[0] for folder in folders} <= copied  # every folder the packages come from
    assert {"pyproject.toml", "README.md"} <= copied  # the build reads the readme

    final = final_stage(steps)
    users = [arguments for name, arguments in final if name == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert [exec_form(arguments) for name, arguments in final if name == "ENTRYPOINT"] == [["deidpool"]]
    (command,) = [exec_form(arguments) for name, arguments in final if name == "CMD"]
    check_deidpool_command(command)
    (health,) = [arguments for name, arguments in final if name == "HEALTHCHECK"]
    port = command[command.index("--port") + 1]
    assert f"http://127.0.0.1:{port}/api/health" in health and f"EXPOSE {port}" in [
        f"{name} {arguments}" for name, arguments in final]


def test_compose_runs_the_server_and_a_worker_on_postgresql_sharing_the_data_volume():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    assert set(services) == {"postgres", *DEIDPOOL_SERVICES}
    assert set(compose["volumes"]) == {"data", "postgres"}
    postgres = services["postgres"]
    assert postgres["image"].startswith("postgres:") and "postgres:/var/lib/postgresql/data" in postgres["volumes"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])

    for name in DEIDPOOL_SERVICES:
        service = services[name]
        assert service["build"] == "." and service["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert "data:/data" in service["volumes"], name
        url = make_url(normalized_url(re.sub(r"\$\{[^}]*\}", "password", service["environment"]["DATABASE_URL"])))
        assert (url.drivername, url.host, url.username, url.database) == (
            "postgresql+psycopg", "postgres", postgres["environment"]["POSTGRES_USER"],
            postgres["environment"]["POSTGRES_DB"]), name
        assert url.password == "password"  # from the environment, never written in the file
        command = service["command"]
        check_deidpool_command(command)
        assert command[command.index("--data-dir") + 1] == "/data", name

    assert services["server"]["command"][:2] == ["server", "run"] and "--no-worker" in services["server"]["command"]
    assert services["worker"]["command"][:2] == ["server", "worker"]
    assert services["worker"]["healthcheck"] == {"disable": True}  # the image's check asks the API
    assert services["init"]["command"][:2] == ["server", "init"] and services["init"]["profiles"] == ["init"]
    server = services["server"]["command"]
    assert services["server"]["ports"] == [f"127.0.0.1:{server[server.index('--port') + 1]}:8000"]


def test_the_command_check_refuses_what_deidpool_would():
    check_deidpool_command(["server", "worker", "--data-dir", "/data", "--once"])
    for wrong in (["server", "serve", "--data-dir", "/data"], ["server", "run", "--data-dir", "/data", "--bogus"],
                  ["server", "run", "--data-dir", "/data", "--port", "0"],
                  ["server", "worker", "--data-dir", "/data", "--log-format", "xml"], ["server", "run"]):
        with pytest.raises(AssertionError):
            check_deidpool_command(wrong)


def test_hadolint_accepts_the_dockerfile():
    if shutil.which("hadolint") is None:
        pytest.skip("hadolint is not installed: the Dockerfile was not linted (the checks above still ran)")
    result = subprocess.run(["hadolint", str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_docker_compose_accepts_the_compose_file(tmp_path):
    if shutil.which("docker") is None or subprocess.run(["docker", "compose", "version"],
                                                        capture_output=True).returncode != 0:
        pytest.skip("docker compose is not installed: compose.yaml was not validated by it (the checks above ran)")
    result = subprocess.run(["docker", "compose", "-f", str(COMPOSE), "--profile", "init", "config", "--quiet"],
                            capture_output=True, text=True, cwd=ROOT,
                            env={"PATH": os.environ["PATH"], "POSTGRES_PASSWORD": "checked-not-used",
                                 "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
