"""Every module imports on its own, and module-level imports form no cycle.

A cycle hidden by import order (``cli.main`` importing ``cli.tools`` which imports
``cli.main``) only shows when a module is imported first, so each module is imported in a
fresh interpreter; the static check names the cycle when there is one.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import deckhand
import pytest

PACKAGE_DIR = Path(deckhand.__file__).parent


def _modules() -> list[str]:
    return sorted(["deckhand"] + [m.name for m in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="deckhand.")])


def _module_imports(name: str) -> set[str]:
    """Deckhand modules ``name`` imports at module level (not under TYPE_CHECKING, not inside functions)."""
    path = PACKAGE_DIR.joinpath(*name.split(".")[1:])
    file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(file.read_text(), str(file))
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
