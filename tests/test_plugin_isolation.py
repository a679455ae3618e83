"""A broken plugin stays local: installed beside deckhand, a plugin that fails to import and one that registers a
name twice are each one line (naming the distribution, the entry point and ``DECKHAND_PLUGINS``) while a tool
that uses neither ingests and searches; ``deckhand plugins`` lists them, and a tool selecting a component of one
gets its line as the error. Two plugins registering one name both stay listed, the loser with how to select it.

The plugins are real distributions (a ``.dist-info`` with ``entry_points.txt``) in a folder on ``PYTHONPATH``,
so ``importlib.metadata`` finds them as it finds installed ones; the CLI runs in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DECKHAND = str(Path(sys.executable).parent / "deckhand")

#: Entry point → (distribution, module source).
PLUGINS = {
    "ghost": (
        "deckhand-ghost-test",
        "import deckhand_ghost_dependency_not_installed  # noqa: F401\n",
    ),
    "twice": (
        "deckhand-twice-test",
        """
        from deckhand.hookspecs import hookimpl

        def lines(tokenizer, options):
            raise AssertionError("never built")

        @hookimpl
        def deckhand_register(register):
            register.chunker("lines", lines, description="one line per chunk")
            register.chunker("lines", lines, description="the same name again")
        """,
    ),
    "alpha": (
        "deckhand-alpha-test",
        """
        from pydantic import BaseModel, ConfigDict
        from deckhand.hookspecs import hookimpl

        class Options(BaseModel):
            model_config = ConfigDict(extra="forbid")
            max_paragraphs: int = 1

        def paragraphs(tokenizer, options):
            raise AssertionError("never built")

        @hookimpl
        def deckhand_register(register):
            register.chunker("paragraphs", paragraphs, options=Options, description="alpha's paragraphs")
        """,
    ),
    "beta": (
        "deckhand-beta-test",
        """
        from pydantic import BaseModel, ConfigDict
        from deckhand.hookspecs import hookimpl

        class Options(BaseModel):
            model_config = ConfigDict(extra="forbid")
            per_chunk: int = 1

        def paragraphs(tokenizer, options):
            raise AssertionError("never built")

        @hookimpl
        def deckhand_register(register):
            register.chunker("paragraphs", paragraphs, options=Options, description="beta's paragraphs")
        """,
    ),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the four plugins as installed distributions (module + ``.dist-info``)."""
    root = tmp_path_factory.mktemp("site")
    for entry_point, (dist, source) in PLUGINS.items():
        module = dist.replace("-", "_")
        (root / f"{module}.py").write_text(textwrap.dedent(source))
        info = root / f"{module}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.1\n")
        (info / "entry_points.txt").write_text(f"[deckhand]\n{entry_point} = {module}\n")
    return root


def _deckhand(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DECKHAND_PLUGINS"}
    path = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    env.update(PYTHONPATH=path, HOME=str(cwd / "home"), DECKHAND_HOME=str(cwd / "state"), DECKHAND_THREADS="1")
    return subprocess.run([DECKHAND, *args], capture_output=True, text=True, env=env, timeout=180, cwd=cwd)


def _line(stderr: str, plugin: str) -> str:
    """The one stderr line about ``plugin``, checked to be the only one."""
    lines = [line for line in stderr.splitlines() if f"plugin {plugin!r}" in line]
    assert len(lines) == 1, stderr
    return lines[0]


GHOST = (
    "WARNING: plugin 'ghost' (deckhand_ghost_test) failed to import: ModuleNotFoundError: No module named "
    "'deckhand_ghost_dependency_not_installed'; its components are left out (distribution deckhand-ghost-test "
    "0.0.1, entry point 'ghost'): fix or uninstall it, or load only the others with DECKHAND_PLUGINS="
)
TWICE = (
    "WARNING: plugin 'twice' registers chunker 'lines' twice; its components are left out (distribution "
    "deckhand-twice-test 0.0.1, entry point 'twice'): fix or uninstall it, or load only the others with "
    "DECKHAND_PLUGINS="
)


def test_broken_plugins_are_one_line_each_while_an_unrelated_tool_searches(site: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tides.md").write_text("# Tides\n\nHigh tide at the north pier comes at dawn.\n")
    (docs / "canteen.md").write_text("# Canteen\n\nCoffee is served in the canteen from eight.\n")
    (tmp_path / "agent.yaml").write_text("tools:\n  - {name: docs, type: vectorstore, source: docs}\n")
    found = _deckhand(site, tmp_path, "search", "-k", "1", "when is high tide?")
    assert found.returncode == 0, found.stderr
    assert "Source: docs/tides.md" in found.stdout
    assert "Traceback" not in found.stderr
    assert _line(found.stderr, "ghost").startswith(GHOST)
    assert _line(found.stderr, "twice").startswith(TWICE)
    way_out = _line(found.stderr, "ghost").rsplit("DECKHAND_PLUGINS=", 1)[1].split(",")
    assert {"alpha", "beta"} <= set(way_out) and not {"ghost", "twice"} & set(way_out)

    # A tool selecting a component of the broken plugin gets its line as the error; nothing else fails.
    (tmp_path / "agent.yaml").write_text("tools:\n  - {name: docs, type: vectorstore, source: docs, chunker: lines}\n")
    chosen = _deckhand(site, tmp_path, "search", "high tide")
    assert chosen.returncode == 3
    error = chosen.stderr.splitlines()[-1]
    assert error.startswith("error: agent.yaml: tools[0].chunker: " + TWICE.removeprefix("WARNING: ")), error


def test_deckhand_plugins_lists_broken_and_shadowed_plugins(site: Path, tmp_path: Path) -> None:
    listed = _deckhand(site, tmp_path, "plugins")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    out = listed.stdout
    assert "alpha (deckhand-alpha-test 0.0.1)\n  chunker           paragraphs" in out
    assert "beta (deckhand-beta-test 0.0.1)\n" in out
    assert "shadowed by alpha; select it as beta:paragraphs (beta's paragraphs)" in out
    broken = out.split("\nbroken\n", 1)[1].split("\nconflicts\n", 1)[0].splitlines()
    assert len(broken) == 2 and broken[0].startswith("  " + GHOST.removeprefix("WARNING: ")), out
    assert broken[1].startswith("  " + TWICE.removeprefix("WARNING: "))

    as_json = _deckhand(site, tmp_path, "plugins", "--json")
    entries = {e["plugin"]: e for e in json.loads(as_json.stdout)}
    assert entries["ghost"]["broken"].startswith(GHOST.removeprefix("WARNING: ")) and entries["ghost"]["provides"] == []
    assert entries["twice"]["distribution"] == "deckhand-twice-test"
    (paragraphs,) = entries["beta"]["provides"]
    assert paragraphs["shadowed_by"] == "alpha" and "broken" not in entries["alpha"]


def test_an_options_error_on_a_contested_name_names_the_plugin(site: Path, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - {name: docs, type: vectorstore, source: docs, chunker: {name: paragraphs, per_chunk: 2}}\n"
    )
    bad = _deckhand(site, tmp_path, "search", "tide")
    assert bad.returncode == 3
    assert bad.stderr.splitlines()[-1] == (
        "error: agent.yaml: tools[0].chunker.per_chunk: unknown option (chunker 'paragraphs' accepts "
        "max_paragraphs) [checked by plugin 'alpha''s options model: its chunker 'paragraphs' wins over 'beta''s; "
        "select another as beta:paragraphs]"
    )
    # Selected as the line says, beta's model accepts them: agent.yaml is valid (the folder is empty, so the
    # chunker, which would fail if built, is never built).
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - {name: docs, type: vectorstore, source: docs, chunker: {name: 'beta:paragraphs', per_chunk: 2}}\n"
    )
    checked = _deckhand(site, tmp_path, "ingest")
    assert checked.stderr.splitlines()[-1].startswith("error: no supported files in "), checked.stderr
