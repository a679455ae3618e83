"""Installing the code plugin changes no tool that did not ask for it: a documentation tool beside a Sphinx
``conf.py`` ingests the same files with the plugin installed as without; ``chunker: code`` or ``loaders: [code]``
opt in to its loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.config import load_agent_config
from deckhand.errors import ConfigError
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.tools import build_tool


def _docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "index.md").write_text("# Harbour\n\nThe harbour opens at dawn; boats moor at the north quay.\n")
    (docs / "guide" / "tides.rst").write_text("Tides\n=====\n\nHigh tide comes twice a day.\n")
    (docs / "conf.py").write_text(
        'project = "Harbour"\nextensions = ["sphinx.ext.autodoc"]\nhtml_theme = "alabaster"\n'
    )
    (docs / "build.sh").write_text("#!/bin/sh\nsphinx-build . _build\n")
    return docs


def _ingested(tmp_path: Path, tool_yaml: str, registry: PluginRegistry) -> list[str]:
    (tmp_path / "agent.yaml").write_text(f"tools:\n  - {tool_yaml}\n")
    config = load_agent_config(tmp_path / "agent.yaml", registry=registry)
    tool = build_tool(config.tools[0], base_dir=tmp_path, registry=registry)
    try:
        return sorted(tool.initialize_sync().ingested)
    finally:
        tool.close()


DOCS_TOOL = "{name: docs, type: vectorstore, source: docs, database: {provider: in-memory}}"


def test_installing_the_code_plugin_leaves_a_docs_tool_unchanged(tmp_path: Path, minilm: Any) -> None:
    _docs(tmp_path)
    installed = get_registry()
    assert installed.resolve("loader", "code").plugin == "code"  # the plugin is installed (its entry point)
    without = PluginRegistry(load_entry_points=False)  # as before it was installed
    before = _ingested(tmp_path, DOCS_TOOL, without)
    after = _ingested(tmp_path, DOCS_TOOL, installed)
    assert before == after == ["docs/guide/tides.rst", "docs/index.md"]


@pytest.mark.parametrize("opt_in", ["chunker: code", "loaders: [code]", "loaders: ['code:code']"])
def test_a_tool_opts_in_to_the_code_loader(tmp_path: Path, minilm: Any, opt_in: str) -> None:
    _docs(tmp_path)
    tool = DOCS_TOOL.replace("source: docs", f"source: docs, {opt_in}")
    assert _ingested(tmp_path, tool, get_registry()) == [
        "docs/build.sh",
        "docs/conf.py",
        "docs/guide/tides.rst",
        "docs/index.md",
    ]


def test_a_loader_no_plugin_provides_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - {name: docs, type: vectorstore, source: docs, loaders: [code, cobol]}\n"
    )
    with pytest.raises(ConfigError) as err:
        load_agent_config(tmp_path / "agent.yaml")
    assert "tools[0].loaders[1]: no loader plugin provides 'cobol'" in str(err.value)


def test_watch_follows_each_tools_own_loaders(tmp_path: Path) -> None:
    """``deckhand mcp --watch`` re-ingests on a ``.py`` change for the tool that reads ``.py`` files, and the
    documentation tool's changes stay its own (the extensions are those of the watched tools' loaders)."""
    from deckhand.calls.toolbox import Toolbox
    from deckhand.mcp.watch import _extensions

    _docs(tmp_path)
    code_tool = DOCS_TOOL.replace("name: docs,", "name: code,").replace("source: docs", "source: docs, chunker: code")
    (tmp_path / "agent.yaml").write_text(f"tools:\n  - {DOCS_TOOL}\n  - {code_tool}\n")
    toolbox = Toolbox.from_config(tmp_path / "agent.yaml")
    try:
        assert ".py" not in _extensions(toolbox, ["docs"]) and ".md" in _extensions(toolbox, ["docs"])
        assert {".py", ".md", "#!"} <= _extensions(toolbox, ["docs", "code"])
    finally:
        toolbox.close()
