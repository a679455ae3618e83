"""The claim of docs/plugins.md that mypy checks a plugin against deckhand's signatures is true: the page's
example plugins pass ``mypy --strict`` against the installed packages (``py.typed``), and a factory of the
wrong type in one of them is an error. Runs where mypy is installed (``nox -s typecheck``; e2e skips it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

PLUGINS_MD = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
#: The page's self-contained plugin modules (a fragment continuing an earlier block is left out).
MODULES = {
    "deckhand_lines": "class LinesChunker",
    "deckhand_hashing": "class HashingEmbedder",
    "deckhand_substring": "class SubstringIndex",
    "deckhand_overlap": "class OverlapReranker",
    "deckhand_notes": "class NotesLookupTool",
}


def _block(marker: str) -> str:
    found = [b for b in re.findall(r"```python\n(.*?)```", PLUGINS_MD.read_text(encoding="utf-8"), re.S) if marker in b]
    assert len(found) == 1, f"plugins.md: {len(found)} python blocks hold {marker!r}"
    return found[0]


def _mypy(folder: Path, *files: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-executable", sys.executable]
    return subprocess.run([*command, *files], cwd=folder, capture_output=True, text=True, timeout=300)


def test_the_example_plugins_pass_mypy_strict(tmp_path: Path) -> None:
    for name, marker in MODULES.items():
        (tmp_path / f"{name}.py").write_text(_block(marker), encoding="utf-8")
    (tmp_path / "wrong_factory.py").write_text(
        _block("class LinesChunker").replace(
            'register.chunker("lines", lines_chunker', 'register.chunker("lines", len'
        ),
        encoding="utf-8",
    )
    checked = _mypy(tmp_path, *(f"{name}.py" for name in MODULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    refused = _mypy(tmp_path, "wrong_factory.py")
    assert refused.returncode == 1 and 'Argument 2 to "chunker" of "Registrar"' in refused.stdout, refused.stdout
