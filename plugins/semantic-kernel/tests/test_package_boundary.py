"""The package's two products stay apart: the kernel functions (:mod:`deckhand_semantic_kernel.plugin`) and
the store bridge (:mod:`deckhand_semantic_kernel.stores`) never import each other, so either can become a
distribution of its own by moving its files (see the README's "One package, two products")."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "deckhand_semantic_kernel"


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (relative imports resolved within the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = ["deckhand_semantic_kernel", *path.relative_to(PACKAGE).with_suffix("").parts[:-1]]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_the_store_bridge_does_not_import_the_kernel_functions() -> None:
    for path in sorted((PACKAGE / "stores").rglob("*.py")):
        reached = {m for m in _imports(path) if m.startswith("deckhand_semantic_kernel")}
        outside = {m for m in reached if not m.startswith("deckhand_semantic_kernel.stores")}
        assert not outside, f"{path.name} imports {sorted(outside)}: the store bridge stands on deckhand alone"


def test_the_kernel_functions_do_not_import_the_store_bridge() -> None:
    for path in [PACKAGE / "__init__.py", PACKAGE / "plugin.py"]:
        bridge = {m for m in _imports(path) if m.startswith("deckhand_semantic_kernel.stores")}
        assert not bridge, f"{path.name} imports {sorted(bridge)}: the kernel functions do not need the store bridge"


def test_the_entry_point_loads_only_the_store_bridge() -> None:
    text = (PACKAGE.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert 'semantic-kernel = "deckhand_semantic_kernel.stores.register"' in text
