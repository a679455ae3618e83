"""A third-party plugin, installed from its own throwaway project, is discovered and selectable from agent.yaml.

The plugin (distribution ``deckhand-notes-test``, entry point ``notes`` in the ``deckhand``
group) provides a loader for ``.note`` files and a store provider ``notes-memory``. It is
installed into the test environment with ``uv pip install`` and uninstalled at the end; the
CLI runs in subprocesses so entry points are read afresh.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from deckhand.plugins import get_registry, reset_registry

DIST = "deckhand-notes-test"
DECKHAND = str(Path(sys.executable).parent / "deckhand")

PYPROJECT = f"""
[project]
name = "{DIST}"
version = "0.0.1"
description = "throwaway deckhand plugin used by deckhand's tests"
requires-python = ">=3.11"

[project.entry-points.deckhand]
notes = "deckhand_notes_test"

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["deckhand_notes_test"]
"""

MODULE = '''
"""Loads .note files (lines starting with % are comments) and offers a store provider."""
from pathlib import Path

from deckhand.hookspecs import hookimpl
from deckhand.stores.inmemory import InMemoryStore


class NoteLoader:
    extensions = frozenset({".note"})
    priority = 0

    def load(self, path: Path) -> str:
        lines = path.read_text(encoding="utf-8").splitlines()
        return "\\n".join(line for line in lines if not line.startswith("%"))


class NotesStore(InMemoryStore):
    @classmethod
    def from_config(cls, config, collection):
        return cls(collection)


@hookimpl
def register_loaders(register):
    register("note", NoteLoader, description="field notes, % comments dropped", extensions=[".note"])


@hookimpl
def register_stores(register):
    register("notes-memory", NotesStore.from_config, description="third-party test store")
'''


def _installer() -> list[str] | None:
    uv = shutil.which("uv")
    if uv:
        return [uv, "pip", "install", "--python", sys.executable, "--quiet"]
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    return [sys.executable, "-m", "pip", "install", "--quiet"] if probe.returncode == 0 else None


def _uninstall() -> None:
    uv = shutil.which("uv")
    command = (
        [uv, "pip", "uninstall", "--python", sys.executable, DIST]
        if uv
        else [sys.executable, "-m", "pip", "uninstall", "-y", DIST]
    )
    subprocess.run(command, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Build and install the plugin once for this module; uninstall it afterwards."""
    installer = _installer()
    if installer is None:
        pytest.skip("neither uv nor pip is available to install the throwaway plugin")
    project = tmp_path_factory.mktemp("plugin") / "plugin-project"
    (project / "deckhand_notes_test").mkdir(parents=True)
    (project / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    (project / "deckhand_notes_test" / "__init__.py").write_text(textwrap.dedent(MODULE))
    done = subprocess.run([*installer, str(project)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        _uninstall()
        pytest.fail(f"installing the throwaway plugin failed:\n{done.stderr}")
    importlib.invalidate_caches()
    reset_registry()
    try:
        yield
    finally:
        _uninstall()
        importlib.invalidate_caches()
        sys.modules.pop("deckhand_notes_test", None)
        reset_registry()


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DECKHAND_PLUGINS"}
    env.update(HOME=str(tmp_path / "home"), DECKHAND_HOME=str(tmp_path / "state"), DECKHAND_THREADS="1", **extra)
    return env


def _deckhand(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [DECKHAND, *args], capture_output=True, text=True, env=_env(tmp_path, **env), timeout=180, cwd=tmp_path
    )


def test_third_party_plugin_is_discovered_and_selectable(installed_plugin: None, tmp_path: Path) -> None:
    # in process: a fresh registry sees the new entry point
    registry = get_registry()
    assert registry.resolve("loader", "note").plugin == "notes"
    assert registry.plugin_distributions()["notes"] == (DIST, "0.0.1")

    listed = _deckhand(tmp_path, "plugins")
    assert listed.returncode == 0, listed.stderr
    assert f"notes ({DIST} 0.0.1)\n" in listed.stdout
    assert "  loader            note           field notes, % comments dropped\n" in listed.stdout
    assert "  store             notes-memory   third-party test store\n" in listed.stdout

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tide.note").write_text("% draft, do not index this comment\nHigh tide at the north pier comes at dawn.")
    (docs / "other.md").write_text("Coffee is served in the canteen from eight.")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - type: vectorstore\n    name: notes\n    source: docs\n"
        "    database:\n      provider: notes-memory\n"
    )
    found = _deckhand(tmp_path, "--config", "agent.yaml", "search", "-k", "1", "when is high tide?")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("Found 1 result(s):\n\n[1] Score: ")
    assert found.stdout.splitlines()[2].endswith("| Source: docs/tide.note")
    assert "High tide at the north pier comes at dawn." in found.stdout
    assert "draft" not in found.stdout  # the plugin's loader, not a plain read, produced the text
    assert "notes [notes-memory]: 2 ingested" in found.stderr

    # DECKHAND_PLUGINS restricts loading: without `notes` its provider is a clear error
    restricted = _deckhand(tmp_path, "--config", "agent.yaml", "ingest", DECKHAND_PLUGINS="redis")
    assert restricted.returncode == 3
    assert restricted.stderr.startswith(
        "error: no store plugin provides 'notes-memory'; install a plugin that provides it "
        "(see `deckhand plugins` for what is installed) (installed: in-memory, redis, sqlite); "
        "DECKHAND_PLUGINS leaves out the installed plugin(s) "
    )
    assert "notes" in restricted.stderr.strip().rsplit("plugin(s) ", 1)[1].split(", ")


def test_deckhand_plugins_can_leave_out_the_third_party_plugin(
    installed_plugin: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DECKHAND_PLUGINS", "redis")
    reset_registry()
    registry = get_registry()
    assert "notes" in registry.excluded and "notes" not in registry.plugin_distributions()
    assert [c.name for c in registry.list("store")] == ["in-memory", "redis", "sqlite"]
    monkeypatch.setenv("DECKHAND_PLUGINS", "redis,notes")
    reset_registry()
    assert get_registry().resolve("store", "notes-memory").plugin == "notes"
