"""Every module imports on its own, module-level imports form no cycle, and every import goes down the layers.

A cycle hidden by import order (``cli.main`` importing ``cli.tools`` which imports
``cli.main``) only shows when a module is imported first, so each module is imported in a
fresh interpreter; the static check names the cycle when there is one.

The layers are the import-linter contract in the workspace's pyproject.toml (``lint-imports``, run by
``nox -s lint``; docs/architecture.md draws them). The direction test here reads the same contract and
checks every direct import (module level, under ``TYPE_CHECKING`` and inside functions alike), so a
test run catches an upward import too, and names it.
"""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import deckhand
import pytest

PACKAGE_DIR = Path(deckhand.__file__).parent
WORKSPACE = Path(__file__).resolve().parents[2]


def _modules() -> list[str]:
    return sorted(["deckhand"] + [m.name for m in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="deckhand.")])


def _tree(name: str) -> ast.Module:
    path = PACKAGE_DIR.joinpath(*name.split(".")[1:])
    file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return ast.parse(file.read_text(), str(file))


def _module_imports(name: str) -> set[str]:
    """Deckhand modules ``name`` imports at module level (not under TYPE_CHECKING, not inside functions)."""
    tree = _tree(name)
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                found.add(sub.module)
                found.update(f"{sub.module}.{a.name}" for a in sub.names)
            elif isinstance(sub, ast.Import):
                found.update(a.name for a in sub.names)
    return found


def test_no_import_cycle() -> None:
    modules = set(_modules())
    graph = {m: {i for i in _module_imports(m) if i in modules and i != m} for m in modules}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(modules):
        if module not in state:
            visit(module)


@pytest.mark.slow
def test_each_module_imports_alone() -> None:
    """Each module in a fresh process: a forked child of an interpreter holding the libraries but no deckhand
    module (``_fork_import.py``; an interpreter per module took over the 300 s timeout on a busy machine)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("_fork_import.py"))],
        input=" ".join(_modules()),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    results = dict(line.split("\t", 1) for line in done.stdout.splitlines())
    assert sorted(results) == _modules()
    assert {m: r for m, r in results.items() if r != "ok"} == {}


# -- direction: the layer contract ---------------------------------------------------------------


def _contract(contract_id: str) -> dict[str, Any]:
    path = WORKSPACE / "pyproject.toml"
    if not path.is_file():
        pytest.skip("not run from the workspace: the layer contract lives in its pyproject.toml")
    contracts = tomllib.loads(path.read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["id"] == contract_id)


def _all_imports(name: str) -> dict[str, int]:
    """Every module ``name`` imports, wherever the import is (module level, TYPE_CHECKING, functions), with its line."""
    found: dict[str, int] = {}
    package = name if (PACKAGE_DIR.joinpath(*name.split(".")[1:])).is_dir() else name.rsplit(".", 1)[0]
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.setdefault(module, node.lineno)
            for alias in node.names:
                found.setdefault(f"{module}.{alias.name}", node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, node.lineno)
    return found


def _layers(contract: dict[str, Any]) -> tuple[dict[str, int], dict[str, bool]]:
    """Each top-level name's layer (0 = top) and whether its layer's siblings are independent (``|``)."""
    index: dict[str, int] = {}
    independent: dict[str, bool] = {}
    for i, layer in enumerate(contract["layers"]):
        names = [n.strip() for n in re.split(r"[|:]", layer)]
        for n in names:
            index[n] = i
            independent[n] = "|" in layer
    return index, independent


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "deckhand" and len(parts) > 1 else None


def test_every_top_level_module_has_a_layer() -> None:
    index, _ = _layers(_contract("layers"))
    tops = {m.split(".")[1] for m in _modules() if m != "deckhand"}
    assert sorted(tops - set(index)) == [], "place these in the layers contract of pyproject.toml"
    assert sorted(set(index) - tops) == [], "the layers contract names modules that are gone"


def test_imports_go_down_the_layers() -> None:
    """No module imports from a layer above its own, nor from an independent sibling of its layer."""
    contract = _contract("layers")
    index, independent = _layers(contract)
    ignored = {tuple(part.strip() for part in rule.split("->")) for rule in contract.get("ignore_imports", [])}
    modules = set(_modules())
    wrong: list[str] = []
    for name in sorted(modules):
        low = _top(name)
        if low is None:
            continue
        for imported, line in sorted(_all_imports(name).items()):
            high = _top(imported)
            if high is None or high == low or imported not in modules or (name, imported) in ignored:
                continue
            if index[high] < index[low]:
                wrong.append(f"{name}:{line} imports {imported} (layer {high!r} is above {low!r})")
            elif index[high] == index[low] and independent[low]:
                wrong.append(f"{name}:{line} imports {imported} ({high!r} and {low!r} are independent siblings)")
    assert wrong == []


def test_the_direction_check_sees_an_upward_import() -> None:
    """The check above would fail on the reaches this contract removed (bases -> tools, config -> ingest)."""
    index, _ = _layers(_contract("layers"))
    assert index["tools"] < index["bases"] and index["ingest"] < index["config"]
    assert index["retrieval"] < index["stores"] and index["stores"] < index["config"] < index["bases"]
    assert _top("deckhand.tools.tool_io") == "tools" and _top("deckhand") is None


def test_core_never_imports_a_plugin() -> None:
    """Every workspace plugin's package is in the forbidden contract, and no core module imports one."""
    forbidden = set(_contract("no-plugins")["forbidden_modules"])
    packages = {p.name for p in (WORKSPACE / "plugins").glob("*/src/deckhand_*") if p.is_dir()}
    assert packages and packages <= forbidden, f"add {sorted(packages - forbidden)} to the no-plugins contract"
    wrong = [
        f"{name}:{line} imports {imported}"
        for name in _modules()
        for imported, line in sorted(_all_imports(name).items())
        if imported.split(".")[0] in forbidden
    ]
    assert wrong == []


def test_the_lint_session_runs_the_contract() -> None:
    noxfile = (WORKSPACE / "noxfile.py").read_text()
    assert '"lint-imports"' in noxfile.split("def lint(", 1)[1].split("\n@nox.session", 1)[0]
