"""The packages' import graph (every import, at module level or inside a function): no two
packages import each other, directly or through others, and pseudonymization, which the client,
the adversary and the server share, imports none of them."""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("adversary", "baselines", "client", "contribution", "corpus", "pseudonymization", "representer",
            "server")


def package_imports(repo: Path = REPO) -> dict[str, set[str]]:
    """{package: the other packages of `PACKAGES` any of its modules under `repo` imports}."""
    graph = defaultdict(set)
    for package in PACKAGES:
        for path in (repo / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                    [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
                for name in names:
                    parts = name.split(".")
                    if parts[0] == "deidpool" and len(parts) > 1 and parts[1] in PACKAGES and parts[1] != package:
                        graph[package].add(parts[1])
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, stack = set(), [start]
    while stack:
        for other in graph.get(stack.pop(), ()):
            if other not in seen:
                seen.add(other)
                stack.append(other)
    return seen


def test_no_package_imports_one_that_imports_it_back():
    graph = package_imports()
    cycles = sorted(package for package in PACKAGES if package in reachable(graph, package))
    assert cycles == [], {package: sorted(graph[package]) for package in cycles}


@pytest.mark.parametrize("package, allowed", [("pseudonymization", {"corpus", "representer"}),
                                              ("corpus", set()), ("contribution", {"corpus"})])
def test_the_shared_layers_import_only_those_below_them(package, allowed):
    assert package_imports()[package] <= allowed


def test_the_graph_sees_imports_inside_functions(tmp_path):
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "corpus" / "a.py").write_text("def f():\n    from deidpool.client.x import y\n")
    (tmp_path / "client" / "b.py").write_text("import deidpool.corpus.a\n")
    graph = package_imports(tmp_path)
    assert graph["corpus"] == {"client"} and graph["client"] == {"corpus"}
    assert "corpus" in reachable(graph, "corpus")
