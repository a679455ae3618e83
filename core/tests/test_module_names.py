"""No two modules of core share a basename (``__init__.py`` excepted): a module's name says what it holds.

Two ``base.py`` or a ``paging.py`` in two packages with different meanings make a traceback, a grep or an
import ambiguous; a new module takes a name of its own (issue 42 renamed the repeats there were).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import deckhand

SOURCE = Path(deckhand.__file__).parent


def repeated_basenames(root: Path) -> dict[str, list[str]]:
    """Each basename that more than one module under ``root`` has -> those modules' paths under it."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.name != "__init__.py":
            where[path.name].append(path.relative_to(root).as_posix())
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_module_basenames_are_unique_in_core() -> None:
    repeats = repeated_basenames(SOURCE)
    assert not repeats, "modules of core/src/deckhand share a basename; give each a name that says what it holds: " + (
        "; ".join(f"{name}: {', '.join(paths)}" for name, paths in sorted(repeats.items()))
    )


def test_the_check_names_the_repeats(tmp_path: Path) -> None:
    for rel in ("a/base.py", "b/c/base.py", "a/__init__.py", "b/__init__.py", "a/one.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    assert repeated_basenames(tmp_path) == {"base.py": ["a/base.py", "b/c/base.py"]}
