"""A third-party plugin, installed from its own throwaway project, is discovered and selectable from agent.yaml.

The plugin (distribution ``deckhand-notes-test``, entry point ``notes`` in the ``deckhand``
group) provides a loader for ``.note`` files, and — each with a pydantic options model — a
store provider ``notes-memory`` (URL scheme ``notes://``), a chunker ``lines``, a keyword
strategy ``substring`` and a tool type ``notes_lookup``. It is installed into the test
environment with ``uv pip install`` and uninstalled at the end; the CLI runs in subprocesses
so entry points are read afresh.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from deckhand.api import ConfigError, ToolBase, build_tool, get_registry, load_agent_config
from deckhand.install_hints import install_hint
from deckhand.plugins import reset_registry

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

MODULE = """
\"\"\"Field notes for deckhand: a loader, a store, a chunker, a keyword strategy and a tool type.\"\"\"
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from deckhand.api import (
    Choice,
    Chunk,
    ChunkerBase,
    InMemoryStore,
    KeywordIndexBase,
    LoaderBase,
    SearchResult,
    SourceTool,
    SourceToolConfig,
    choice_field,
    filtered_search,
    hookimpl,
)


class NoteLoader(LoaderBase):
    extensions = frozenset({".note"})
    priority = 0

    def load(self, path: Path) -> str:
        lines = path.read_text(encoding="utf-8").splitlines()
        return "\\n".join(line for line in lines if not line.startswith("%"))


class NotesStoreOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    shelf: str = Field(default="main", description="Shelf the notes are kept on.")


class NotesStore(InMemoryStore):
    shelf = "main"

    @classmethod
    def from_config(cls, config, collection, options, *, base_dir):
        store = cls(collection)
        store.shelf = options.shelf
        return store


class LinesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lines_per_chunk: int = Field(default=1, ge=1, le=50, description="Non-empty lines per chunk.")


class LinesChunker(ChunkerBase):
    def __init__(self, lines_per_chunk: int) -> None:
        self.lines_per_chunk = lines_per_chunk

    def chunk(self, document):
        lines = [line for line in document.text.splitlines() if line.strip()]
        n = self.lines_per_chunk
        groups = [lines[i : i + n] for i in range(0, len(lines), n)]
        return [Chunk(source=document.source, index=i, content="\\n".join(g)) for i, g in enumerate(groups)]


def lines_chunker(tokenizer, options):
    return LinesChunker(options.lines_per_chunk)


class SubstringOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_length: int = Field(default=3, ge=1, description="Shorter query words are ignored.")


class SubstringIndex(KeywordIndexBase):
    \"\"\"Scores a record by how many times the query's words occur in its text.\"\"\"

    def __init__(self, min_length: int) -> None:
        self.min_length = min_length
        self.docs = []

    def build(self, docs):
        self.docs = [(rid, text.lower()) for rid, text in docs]

    def search(self, query, k):
        words = [w for w in query.lower().split() if len(w) >= self.min_length]
        scored = [(rid, float(sum(text.count(w) for w in words))) for rid, text in self.docs]
        scored = sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))
        return scored[:k]


def substring_strategy(store, cache_path, options):
    return SubstringIndex(options.min_length)


class NotesLookupConfig(SourceToolConfig):
    type: Literal["notes_lookup"]
    chunker: Choice = choice_field("chunker", "lines", "Chunker; default lines.")
    label: str = Field(default="Note", description="Printed before each result.")
    top_k: int = Field(default=3, ge=1, le=20)


class NotesLookupTool(SourceTool):
    def search_results_sync(self, query, top_k=None, *, filter=None):
        store = self.ready_store(query)
        where = self.filter_for(store, filter)
        hits = filtered_search(store, self.embed_query(query), top_k or self.config.top_k, where=where)
        return [
            SearchResult(
                rank=i,
                score=round(min(max(h.score, 0.0), 1.0), 6),
                source=h.record.source,
                chunk_index=h.record.chunk_index,
                content=h.record.content,
            )
            for i, h in enumerate(hits, start=1)
        ]

    def format_results(self, results):
        return "\\n".join(f"{self.config.label} {r.rank} ({r.source}): {r.content}" for r in results)


@hookimpl
def deckhand_register(register):
    register.loader("note", NoteLoader, description="field notes, % comments dropped")
    register.store(
        "notes-memory",
        NotesStore.from_config,
        description="third-party test store",
        options=NotesStoreOptions,
        url_schemes=("notes://",),
    )
    register.chunker("lines", lines_chunker, description="groups of non-empty lines", options=LinesOptions)
    register.keyword_strategy(
        "substring", substring_strategy, description="counts query words in the text", options=SubstringOptions
    )
    register.tool(
        "notes_lookup", NotesLookupTool, description="semantic lookup of field notes", options=NotesLookupConfig
    )
"""


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
    # one line per component: kind, name, description (columns as wide as the longest name)
    assert re.search(r"^  loader +note +field notes, % comments dropped$", listed.stdout, re.M), listed.stdout
    assert re.search(r"^  store +notes-memory +third-party test store$", listed.stdout, re.M), listed.stdout

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tide.note").write_text("% draft, do not index this comment\nHigh tide at the north pier comes at dawn.")
    (docs / "other.md").write_text("Coffee is served in the canteen from eight.")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - type: vectorstore\n    name: notes\n    source: docs\n    loaders: [note]\n"
        "    database:\n      provider: notes-memory\n      connection_string: notes://local\n"
    )
    found = _deckhand(tmp_path, "--config", "agent.yaml", "search", "-k", "1", "when is high tide?")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("Found 1 result(s):\n\n[1] Score: ")
    assert found.stdout.splitlines()[2].endswith("| Source: docs/tide.note")
    assert "High tide at the north pier comes at dawn." in found.stdout
    assert "draft" not in found.stdout  # the plugin's loader, not a plain read, produced the text
    assert "notes [notes-memory]: 2 ingested" in found.stderr

    # DECKHAND_PLUGINS restricts loading: without `notes` its loader (checked first) is a clear error
    restricted = _deckhand(tmp_path, "--config", "agent.yaml", "ingest", DECKHAND_PLUGINS="redis")
    assert restricted.returncode == 3
    # (the generic hint lists what there is to install where deckhand is: from this clone, its plugin directories)
    assert restricted.stderr.startswith(
        f"error: agent.yaml: tools[0].loaders[0]: no loader plugin provides 'note'; {install_hint('loader', 'note')} "
        "(installed: markitdown, table, text); DECKHAND_PLUGINS leaves out the installed plugin(s) "
    )
    listed = "with NAME one of this checkout's plugins: code, git-memory, native-hybrid, ocr, openai, "
    assert listed in restricted.stderr
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


AGENT = """\
tools:
  - type: hierarchical_document
    name: tides
    source: docs
    chunker: {name: lines, lines_per_chunk: 1}
    keyword_strategy: {name: substring, min_length: 4}
    contextual_embeddings: false
    database: {provider: notes-memory, connection_string: "notes://local", options: {shelf: tides}}
  - type: notes_lookup
    name: lookup
    source: docs
    label: Field note
    chunker: {name: lines, lines_per_chunk: 2}
"""


def _notes_project(tmp_path: Path, agent: str = AGENT) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "tide.note").write_text(
        "% draft\nHigh tide at the north pier comes at dawn.\nLow tide uncovers the north pier steps at noon.\n"
    )
    (docs / "canteen.md").write_text("Coffee is served in the canteen from eight.\n")
    (tmp_path / "agent.yaml").write_text(agent)
    return tmp_path / "agent.yaml"


def test_third_party_store_chunker_strategy_and_tool_type_are_selected(
    installed_plugin: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
    config = load_agent_config(_notes_project(tmp_path))
    tides, lookup = (build_tool(t, base_dir=tmp_path) for t in config.tools)
    assert isinstance(tides, ToolBase) and isinstance(lookup, ToolBase) and type(lookup).__name__ == "NotesLookupTool"
    tides.initialize_sync()
    lookup.initialize_sync()
    try:
        assert tides.provider == "notes-memory" and tides.index.store.shelf == "tides"  # the store got its options
        assert tides.keyword_strategy == "substring"
        assert tides.document_count == 3  # the lines chunker, one line per chunk
        keyword = tides.search_results_sync("north pier steps", 3, mode="keyword")
        assert keyword[0].content == "Low tide uncovers the north pier steps at noon."
        assert keyword[0].modalities["keyword"].score == 3.0  # substring counts: north, pier, steps
        assert lookup.document_count == 2  # two lines per chunk: the note is one chunk
        assert lookup.search_text_sync("when is high tide?", 1) == (
            "Field note 1 (docs/tide.note): High tide at the north pier comes at dawn.\n"
            "Low tide uncovers the north pier steps at noon."
        )
    finally:
        tides.close()
        lookup.close()

    text = _deckhand(tmp_path, "--config", "agent.yaml", "search", "--tool", "lookup", "-k", "1", "high tide")
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Field note 1 (docs/tide.note): High tide at the north pier comes at dawn.\n")
    # Only the selected tool starts; the default store kept what the in-process run ingested.
    assert "tides [notes-memory]" not in text.stderr
    assert "lookup [sqlite]: index opened (2 chunks;" in text.stderr  # opened, the source not walked
    checked = _deckhand(tmp_path, "--config", "agent.yaml", "search", "--refresh", "--tool", "lookup", "high tide")
    assert checked.returncode == 0, checked.stderr
    assert "lookup [sqlite]: 0 ingested (0 chunks, 0 embedded), 2 unchanged" in checked.stderr
    found = _deckhand(tmp_path, "--config", "agent.yaml", "search", "--json", "north pier steps")
    assert found.returncode == 0, found.stderr
    best = json.loads(found.stdout)["tides"][0]
    assert best["content"] == "Low tide uncovers the north pier steps at noon."
    assert best["modalities"]["keyword"] == {"rank": 1, "score": 3.0}


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "lines_per_chunk: 1",
            "lines_per_chunck: 1",
            "tools[0].chunker.lines_per_chunck: unknown option (did you mean 'lines_per_chunk'? chunker 'lines' "
            "accepts lines_per_chunk)",
        ),
        (
            "min_length: 4",
            "min_lenght: 4",
            "tools[0].keyword_strategy.min_lenght: unknown option (did you mean 'min_length'? keyword strategy "
            "'substring' accepts min_length)",
        ),
        (
            "{shelf: tides}",
            "{shelve: tides}",
            "tools[0].database.options.shelve: unknown option (did you mean 'shelf'? store 'notes-memory' accepts "
            "shelf)",
        ),
        (
            "label: Field note",
            "lable: Field note",
            "tools[1].lable: unknown field (did you mean 'label'? allowed: type, name, description, result_budget, "
            "source, embedding_model, database, chunker, encoding, ocr, include, exclude, default_excludes, gitignore, "
            "loaders, max_file_size, reranker, rerank_top_n, passage_windows, results, min_similarity_score, "
            "max_results_per_source, relative_cutoff, writable, writable_sources, writes_per_minute, label, top_k)",
        ),
        (
            '"notes://local"',
            '"http://local"',
            "tools[0].database: connection_string for provider 'notes-memory' must start with notes://",
        ),
        ("lines_per_chunk: 2", "lines_per_chunk: 0", "tools[1].chunker.lines_per_chunk: Input should be greater"),
    ],
)
def test_a_misspelt_option_is_one_clear_line(
    installed_plugin: None, tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _notes_project(tmp_path, AGENT.replace(old, new))
    with pytest.raises(ConfigError) as err:
        load_agent_config(path)
    assert str(err.value).startswith(f"{path}: {message}") and "\n" not in str(err.value)


def test_cli_reports_a_misspelt_option_and_schema_lists_the_options(installed_plugin: None, tmp_path: Path) -> None:
    _notes_project(tmp_path, AGENT.replace("lines_per_chunk: 1", "lines_per_chunck: 1"))
    bad = _deckhand(tmp_path, "--config", "agent.yaml", "ingest")
    assert bad.returncode == 3
    assert bad.stderr == (
        "error: agent.yaml: tools[0].chunker.lines_per_chunck: unknown option (did you mean 'lines_per_chunk'? "
        "chunker 'lines' accepts lines_per_chunk)\n"
    )

    shown = _deckhand(tmp_path, "schema")
    assert shown.returncode == 0, shown.stderr
    schema = json.loads(shown.stdout)
    defs = schema["$defs"]
    assert defs["NotesLookupConfig"]["properties"]["label"]["default"] == "Note"
    tool_types = {ref["$ref"].rsplit("/", 1)[1] for ref in schema["properties"]["tools"]["items"]["oneOf"]}
    assert {"NotesLookupConfig", "VectorStoreToolConfig", "HierarchicalDocumentToolConfig"} <= tool_types

    def forms(model: str, field: str) -> dict[str, dict[str, object]]:
        return {f["title"]: f["properties"] for f in defs[model]["properties"][field]["anyOf"] if "title" in f}

    lines = forms("HierarchicalDocumentToolConfig", "chunker")["chunker 'lines'"]
    assert lines["lines_per_chunk"] == {  # type: ignore[comparison-overlap]
        "default": 1,
        "description": "Non-empty lines per chunk.",
        "maximum": 50,
        "minimum": 1,
        "title": "Lines Per Chunk",
        "type": "integer",
    }
    substring = forms("HierarchicalDocumentToolConfig", "keyword_strategy")["keyword strategy 'substring'"]
    assert set(substring) == {"name", "min_length"}
    store_rules = [
        r["then"]
        for r in defs["DatabaseConfig"]["allOf"]
        if r["if"]["properties"]["provider"]["enum"] == ["notes-memory"]
    ]
    assert store_rules[0]["properties"]["options"] == {"$ref": "#/$defs/NotesStoreOptions"}
    assert set(defs["NotesStoreOptions"]["properties"]) == {"shelf"}
    assert store_rules[0]["properties"]["connection_string"]["pattern"] == "^(notes://)"
