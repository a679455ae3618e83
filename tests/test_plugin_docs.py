"""Every code example of docs/plugins.md and docs/writing-a-store-plugin.md runs, read from the markdown.

The examples are taken from the documents as they are (never copied here), so a document cannot
drift from what deckhand does: the plugin examples of plugins.md (chunker, keyword strategy,
reranker, tool type) are each registered as a plugin module of its own (each with its
``deckhand_register`` hook), selected from the YAML the page shows, and searched with
``deckhand search`` (``--filter`` included) and through the MCP server; the store page's
registration module, entry point and kit classes run against a store installed as a
distribution (a ``.dist-info`` on ``PYTHONPATH``). A test also fails when a page gains an example
no test runs, and when the page's list of ``SourceToolConfig`` fields or ``Tool`` members is not
the code's.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Literal

import pytest
import yaml
from click.testing import CliRunner
from deckhand.api import ProgressBase, StoreCapability, store_capabilities
from deckhand.cli.main import cli
from deckhand.config import load_agent_config
from deckhand.config.tool_fields import SourceToolConfig, ToolConfigBase
from deckhand.errors import ConfigError, PluginError
from deckhand.hookspecs import hookimpl
from deckhand.plugins import PluginRegistry, get_registry, reset_registry
from deckhand.registration import Registrar
from deckhand.tools import ToolBase, build_tool
from deckhand.tools.tool_io import function_definition

ROOT = Path(__file__).resolve().parents[1]
PLUGINS_MD = ROOT / "docs" / "plugins.md"
STORE_MD = ROOT / "docs" / "writing-a-store-plugin.md"

#: One marker per example: the test that runs the block holding it. Every block must hold one.
PLUGINS_EXAMPLES = {
    "python": {
        "from deckhand.api import Registrar, hookimpl\n\n\n@hookimpl": "test_hook_example",
        'register.store(\n    "name",': "test_register_signature_compiles",
        "class LinesChunker": "test_plugin_examples_search_and_filter",
        "class SubstringIndex": "test_plugin_examples_search_and_filter",
        "class OverlapReranker": "test_plugin_examples_search_and_filter",
        "class NotesLookupTool": "test_plugin_examples_search_and_filter",
        "class PatternLookupTool": "test_own_parameters_reach_mcp",
        'register.store(\n    "acme",': "test_store_options_example",
        "from deckhand.api import build_tool": "test_from_python_example",
        "class HashingEmbedder": "test_kit_examples_pass_their_kits",
        "class TestHashingEmbedder": "test_kit_examples_pass_their_kits",
        "class TestLinesChunker": "test_kit_examples_pass_their_kits",
        "class NoteLoader": "test_loader_example",
        "class TestOverlapReranker": "test_kind_examples_pass_their_kits",
        "class LeadContext": "test_kind_examples_pass_their_kits",
        "class TestLeadContext": "test_kind_examples_pass_their_kits",
        "class FolderBackend": "test_kind_examples_pass_their_kits",
        "class TestFolderBackend": "test_kind_examples_pass_their_kits",
        "class LargestFirstExecutor": "test_kind_examples_pass_their_kits",
        "class TestLargestFirst": "test_kind_examples_pass_their_kits",
        "class TestNotesLookup": "test_kind_examples_pass_their_kits",
        "class TestNoteLoader": "test_loader_example",
    },
    "yaml": {
        "loaders: [note]": "test_loader_example",
        "chunker: {name: lines": "test_plugin_examples_search_and_filter",
        "keyword_strategy: {name: substring": "test_plugin_examples_search_and_filter",
        "reranker: {name: overlap": "test_plugin_examples_search_and_filter",
        "type: notes_lookup": "test_plugin_examples_search_and_filter",
    },
    "toml": {
        '[project.entry-points.deckhand]\nlines = "deckhand_lines"': "test_pyproject_examples",
        '[project.entry-points."deckhand.commands"]': "test_command_entry_point_example",
    },
}
STORE_EXAMPLES = {
    "python": {
        "class MyStore(StoreBase):": "test_capabilities_example",
        "def deckhand_register": "test_store_kit_examples",
        "class TestMyStoreConformance": "test_store_kit_examples",
        "class TestMyStoreTools": "test_store_kit_examples",
    },
    "toml": {'mystore = "deckhand_mystore.plugin"': "test_pyproject_examples"},
}

NOTES = {
    "tides.md": "---\nharbour: north\nyear: 2021\n---\n# Tides\n\nHigh tide at the north pier is at noon.\n\n"
    "Low tide uncovers the rocks by the lighthouse.\n",
    "gear.md": "# Gear\n\nBring a rope and a lantern.\n\nWear boots on the slipway.\n",
    "birds.md": "---\nharbour: south\nyear: 2019\n---\n# Birds\n\nGulls nest on the south breakwater.\n",
}


def blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def block(path: Path, lang: str, marker: str) -> str:
    found = [b for b in blocks(path, lang) if marker in b]
    assert len(found) == 1, f"{path.name}: {len(found)} {lang} blocks hold {marker!r}"
    return found[0]


@pytest.mark.parametrize(("path", "examples"), [(PLUGINS_MD, PLUGINS_EXAMPLES), (STORE_MD, STORE_EXAMPLES)])
def test_every_example_is_run(path: Path, examples: dict[str, dict[str, str]]) -> None:
    """A block no test claims fails here: add it to the markers and run it."""
    for lang in ("python", "yaml", "toml"):
        for code in blocks(path, lang):
            claimed = [m for m in examples.get(lang, {}) if m in code]
            assert len(claimed) == 1, f"{path.name}: no test (or several) runs this {lang} block:\n{code}"
        for marker in examples.get(lang, {}):
            block(path, lang, marker)


# -- plugins.md ------------------------------------------------------------------------------------------------------


#: The page's chunker, keyword strategy, reranker and tool type: each block is a plugin module of its own
#: (each has its own ``deckhand_register`` hook), by the module name it is installed as.
PLUGIN_MODULES = {
    "docs_example_lines": "class LinesChunker",
    "docs_example_substring": "class SubstringIndex",
    "docs_example_overlap": "class OverlapReranker",
    "docs_example_notes": "class NotesLookupTool",
}


def _import(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _agent_yaml() -> str:
    """One agent.yaml of the page's YAML: the chunker's and the tool type's entries, and a hierarchical
    tool with the keyword strategy and reranker fragments."""
    tools = []
    for marker in ("chunker: {name: lines", "type: notes_lookup"):
        tools += yaml.safe_load(block(PLUGINS_MD, "yaml", marker))["tools"]
    fragments = "".join(
        block(PLUGINS_MD, "yaml", m) for m in ("keyword_strategy: {name: substring", "reranker: {name: overlap")
    )
    hierarchical = "tools:\n  - type: hierarchical_document\n    name: act\n    source: notes/\n" + fragments
    tools += yaml.safe_load(hierarchical)["tools"]
    return yaml.safe_dump({"name": "docs-example", "tools": tools}, sort_keys=False)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ModuleType]]:
    """A project using the page's plugins (registered in the process-wide registry, as if installed);
    the module given is the tool type's."""
    root = tmp_path_factory.mktemp("docs-plugin")
    modules = {}
    for name, marker in PLUGIN_MODULES.items():
        (root / f"{name}.py").write_text(block(PLUGINS_MD, "python", marker), encoding="utf-8")
        modules[name] = _import(root / f"{name}.py", name)
    notes = root / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    (root / "agent.yaml").write_text(_agent_yaml(), encoding="utf-8")
    old_home = os.environ.pop("DECKHAND_HOME", None)
    reset_registry()
    for name, module in modules.items():
        get_registry().register_plugin(module, name)
    try:
        yield root, modules["docs_example_notes"]
    finally:
        reset_registry()
        for name in modules:
            sys.modules.pop(name, None)
        if old_home is not None:
            os.environ["DECKHAND_HOME"] = old_home


def _search(root: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["-q", "search", "--config", str(root / "agent.yaml"), *args])


def test_plugin_examples_search_and_filter(project: tuple[Path, ModuleType]) -> None:
    root, _ = project
    config = load_agent_config(root / "agent.yaml")
    assert [(t.name, t.type) for t in config.tools] == [
        ("notes", "vectorstore"),
        ("lookup", "notes_lookup"),
        ("act", "hierarchical_document"),
    ]
    assert config.tools[2].reranker.name == "overlap" and config.tools[2].keyword_strategy.name == "substring"

    found = _search(root, "when is high tide?", "--json", "-k", "1")
    assert found.exit_code == 0, found.output
    best = {name: results[0] for name, results in json.loads(found.output).items()}
    assert all(r["source"] == "notes/tides.md" for r in best.values()), best
    line = best["notes"]["metadata"]["start_line"]  # the lines chunker's start_char became path:line
    assert NOTES["tides.md"].splitlines()[line - 1] == best["notes"]["content"].splitlines()[0], best["notes"]

    filtered = _search(root, "when is high tide?", "--tool", "lookup", "--filter", "harbour=south")
    assert filtered.exit_code == 0, filtered.output
    lines = filtered.output.splitlines()
    assert lines and all(re.match(r"Field note \d \(notes/birds\.md\): ", line) for line in lines), lines
    assert "Gulls nest on the south breakwater." in filtered.output
    text = _search(root, "rope", "--tool", "lookup", "--filter", "path:gear.md", "-k", "1")
    assert text.exit_code == 0 and text.output.startswith("Field note 1 (notes/gear.md): "), text.output


def test_a_search_without_filter_is_one_line(project: tuple[Path, ModuleType]) -> None:
    """The page's tool before it took ``filter`` is refused where its class is defined; one that lists no filter in
    its function definition is never given one: ``--filter`` is refused in one line, not a TypeError."""
    root, module = project

    with pytest.raises(TypeError, match=r"OldLookupTool\.search_results_sync must take filter"):

        class OldLookupTool(module.NotesLookupTool):  # type: ignore[name-defined,misc]
            def search_results_sync(self, query: str, top_k: int | None = None) -> Any:
                return super().search_results_sync(query, top_k)

    class OldLookupConfig(module.NotesLookupConfig):  # type: ignore[name-defined,misc]
        type: Literal["old_lookup"]  # type: ignore[assignment]

    class UnfilteredTool(module.NotesLookupTool):  # type: ignore[name-defined,misc]
        def function_definition(self) -> dict[str, Any]:
            return function_definition(self.config.name, "Lookup without filters", takes_filter=False)

    class OldPlugin:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.tool("old_lookup", UnfilteredTool, options=OldLookupConfig)

    get_registry().register_plugin(OldPlugin(), "old-example")
    agent = root / "old.yaml"
    agent.write_text("tools:\n  - {type: old_lookup, name: old, source: notes/}\n", encoding="utf-8")
    args = ["-q", "search", "--config", str(agent), "tide", "--filter", "harbour=south"]
    result = CliRunner().invoke(cli, args)
    expected = (
        "tool 'old': tool type 'old_lookup' takes no filter (UnfilteredTool.function_definition() lists none); "
        "search without a filter"
    )
    assert result.exit_code == 3 and result.output.strip().endswith(expected), result.output
    assert "Traceback" not in result.output
    both = root / "both.yaml"
    both.write_text(
        "tools:\n  - {type: old_lookup, name: old, source: notes/}\n"
        "  - {type: notes_lookup, name: lookup, source: notes/}\n",
        encoding="utf-8",
    )
    mixed = CliRunner().invoke(cli, ["-q", "search", "--config", str(both), "tide", "--filter", "harbour=south"])
    assert mixed.exit_code == 0, mixed.output  # over all tools: those that filter are searched
    assert "--filter: left out the tools whose type takes no filter: old" in mixed.output
    assert "Gulls nest on the south breakwater." in mixed.output
    named = CliRunner().invoke(cli, ["-q", "search", "--config", str(both), "tide", "--tool", "old", "--filter", "a=b"])
    assert named.exit_code == 3 and named.output.strip().endswith(expected), named.output


def test_own_parameters_reach_mcp(project: tuple[Path, ModuleType]) -> None:
    """The page's PatternLookupTool: MCP's tools/list shows its query as it describes it, and a call answers."""
    from deckhand.calls.toolbox import Toolbox
    from deckhand.mcp.server import DeckhandMcpServer
    from deckhand.testing.mcp_client import call, memory_session

    root, module = project
    namespace = vars(module)
    exec(compile(block(PLUGINS_MD, "python", "class PatternLookupTool"), str(PLUGINS_MD), "exec"), namespace)
    config = next(t for t in load_agent_config(root / "agent.yaml").tools if t.name == "lookup")
    tool = namespace["PatternLookupTool"](config, base_dir=root, registry=get_registry(), progress=None)

    async def listed_and_called() -> tuple[dict[str, Any], dict[str, Any]]:
        box = Toolbox([tool])
        app = DeckhandMcpServer(box)
        async with memory_session(app.server) as session:
            tools = {t.name: t.model_dump(by_alias=True) for t in (await session.list_tools()).tools}
            answer = await call(session, "lookup", {"query": "high tide", "top_k": 1, "filter": {"path": "tides.md"}})
        box.close()
        return tools["lookup"], answer

    listed, answer = asyncio.run(listed_and_called())
    query = listed["inputSchema"]["properties"]["query"]
    assert query["format"] == "regex" and query["description"].startswith("A regular expression")
    assert listed["description"] == "Regex search of the notes"
    assert set(listed["inputSchema"]["properties"]) == {"query", "top_k", "filter", "cursor"}
    assert answer["isError"] is False, answer["text"]
    assert answer["text"].startswith("Field note 1 (notes/tides.md): "), answer["text"]


def test_from_python_example(project: tuple[Path, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = project
    monkeypatch.chdir(root)
    code = block(PLUGINS_MD, "python", "from deckhand.api import build_tool")
    printed: list[str] = []
    monkeypatch.setattr("builtins.print", lambda *a, **_: printed.append(" ".join(map(str, a))))
    exec(compile(code, str(PLUGINS_MD), "exec"), {"__name__": "__main__"})  # as a script: asyncio.run(main())
    assert printed and "tides.md" in printed[0] and "High tide" in printed[0], printed


def test_hook_example(project: tuple[Path, ModuleType]) -> None:
    """The page's first hook, with the chunker section's factory and options model, registers the chunker."""
    namespace = {n: getattr(sys.modules["docs_example_lines"], n) for n in ("lines_chunker", "LinesOptions")}
    code = block(PLUGINS_MD, "python", "from deckhand.api import Registrar, hookimpl\n\n\n@hookimpl")
    exec(compile(code, str(PLUGINS_MD), "exec"), namespace)
    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(
        type("Hook", (), {"deckhand_register": staticmethod(namespace["deckhand_register"])})(), "h"
    )
    component = registry.resolve("chunker", "lines")
    assert component.plugin == "h" and component.options is namespace["LinesOptions"]


def test_register_signature_compiles() -> None:
    """The page's summary of the registrar's methods is a signature, not a runnable call: it must parse, and
    every keyword it shows is one the method it is shown on takes."""
    import ast
    import inspect

    code = block(PLUGINS_MD, "python", 'register.store(\n    "name",')
    calls = [
        node
        for node in ast.walk(ast.parse(compile(code, str(PLUGINS_MD), "exec", ast.PyCF_ONLY_AST)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    ]
    assert [c.func.attr for c in calls] == ["store", "embedder"]  # type: ignore[attr-defined]
    for call in calls:
        method = call.func.attr  # type: ignore[attr-defined]
        parameters = inspect.signature(getattr(Registrar, method)).parameters
        keywords = {k.arg for k in call.keywords}
        assert keywords <= {n for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY}, (method, keywords)


def test_store_options_example(tmp_path: Path) -> None:
    """The page's ``url_schemes`` registration, inside a hook with a store of its own: the errors it promises."""
    from deckhand.stores.inmemory import InMemoryStore
    from pydantic import BaseModel, ConfigDict

    class AcmeOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        pool_size: int = 1

    class AcmeStore(InMemoryStore):
        capabilities = frozenset({StoreCapability.FILTERS, StoreCapability.KEYWORD_SEARCH})
        built: ClassVar[list[tuple[str, Any, Path]]] = []

        @classmethod
        def from_config(  # type: ignore[override]
            cls, config: Any, collection: str, options: AcmeOptions, /, *, base_dir: Path
        ) -> AcmeStore:
            cls.built.append((collection, options, base_dir))
            return cls(collection)

        def keyword_search(self, query: str, k: int, *, sources: Any = None) -> list[Any]:
            return []

    source = "def deckhand_register(register):\n" + textwrap.indent(
        block(PLUGINS_MD, "python", 'register.store(\n    "acme",'), "    "
    )
    namespace: dict[str, Any] = {"AcmeStore": AcmeStore, "AcmeOptions": AcmeOptions}
    exec(compile(source, str(PLUGINS_MD), "exec"), namespace)
    plugin = type("AcmePlugin", (), {"deckhand_register": staticmethod(hookimpl(namespace["deckhand_register"]))})
    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(plugin(), "acme")
    agent = tmp_path / "agent.yaml"
    for database, message in (
        ("{provider: acme, connection_string: 'http://h'}", "connection_string for provider 'acme' must start with "),
        ("{provider: acme, connection_string: 'acme://h', options: {pool: 2}}", "database.options.pool: unknown"),
    ):
        agent.write_text(f"tools:\n  - {{type: vectorstore, name: kb, source: docs, database: {database}}}\n")
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_agent_config(agent, registry)
    # a valid block: the factory is called as the page's comment says, with database.options as an AcmeOptions
    from deckhand.stores.tool_store import create_store

    component = registry.resolve("store", "acme")
    assert component.capabilities == AcmeStore.capabilities
    database = "{provider: acme, connection_string: 'acme://h', options: {pool_size: 2}}"
    agent.write_text(f"tools:\n  - {{type: vectorstore, name: kb, source: docs, database: {database}}}\n")
    config = load_agent_config(agent, registry).tools[0].database
    store = create_store(component, config, "kb", base_dir=tmp_path)
    assert isinstance(store, AcmeStore) and AcmeStore.built == [("kb", AcmeOptions(pool_size=2), tmp_path)]
    text = PLUGINS_MD.read_text(encoding="utf-8")
    assert "`connection_string for provider 'acme' must start with acme:// or acmes://`" in text


def test_pyproject_examples() -> None:
    lines = tomllib.loads(block(PLUGINS_MD, "toml", '[project.entry-points.deckhand]\nlines = "deckhand_lines"'))
    assert lines["project"]["entry-points"]["deckhand"] == {"lines": "deckhand_lines"}
    assert "deckhand-ai>=0.1,<1" in lines["project"]["dependencies"]
    mystore = tomllib.loads(block(STORE_MD, "toml", 'mystore = "deckhand_mystore.plugin"'))
    assert mystore["project"]["entry-points"]["deckhand"] == {"mystore": "deckhand_mystore.plugin"}


def test_source_tool_config_fields_are_listed() -> None:
    """plugins.md's table of SourceToolConfig's fields is the model's."""
    text = PLUGINS_MD.read_text(encoding="utf-8")
    table = text[text.index("`SourceToolConfig` adds") :].split("\n\n")[1]
    listed = re.findall(r"^\| `(\w+)` \|", table, re.M)
    own = [f for f in SourceToolConfig.model_fields if f not in ToolConfigBase.model_fields]
    assert listed == own
    assert "`deckhand.api.ToolConfigBase` (`type`, `name`, `description`, `result_budget`)" in text
    assert list(ToolConfigBase.model_fields) == ["type", "name", "description", "result_budget"]


def test_tool_members_are_listed() -> None:
    """plugins.md's table of a tool's members names every abstract member of deckhand.tools.ToolBase, and its
    ``config``, and no other."""
    text = PLUGINS_MD.read_text(encoding="utf-8")
    table = text[text.index("| member | what it does |") :].split("\n\n")[0]
    named = {m for cell in re.findall(r"^\| ([^|]+) \|", table, re.M) for m in re.findall(r"`(\w+)", cell)}
    assert named - {"member"} == ToolBase.__abstractmethods__ | {"config"}


def test_a_tool_not_on_the_base_is_told_the_fix(tmp_path: Path) -> None:
    from deckhand.tools.source_tool import SourceTool

    class NoOpen:
        """Every member of a tool, but written against them alone (no ToolBase)."""

        def __init__(self, config: Any, **_: Any) -> None:
            self.inner = SourceTool(config)
            self.config = config

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    class Plugin:
        @hookimpl
        def deckhand_register(self, register: Registrar) -> None:
            register.tool("grep", NoOpen, options=GrepConfig)

    class GrepConfig(SourceToolConfig):
        type: Literal["grep"]

    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(Plugin(), "grep")
    (tmp_path / "docs").mkdir()
    config = GrepConfig(type="grep", name="g", source=str(tmp_path / "docs"))
    with pytest.raises(PluginError) as err:
        build_tool(config, base_dir=tmp_path, registry=registry)
    assert str(err.value) == (
        "plugin 'grep': tool 'grep' built a NoOpen, which does not subclass deckhand.api.ToolBase: "
        "subclass deckhand.api.ToolBase"
    )


# -- writing-a-store-plugin.md ---------------------------------------------------------------------------------------


def test_capabilities_example() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(block(STORE_MD, "python", "class MyStore(StoreBase):"), str(STORE_MD), "exec"), namespace)
    assert store_capabilities(namespace["MyStore"]) == {
        StoreCapability.PERSISTENT,
        StoreCapability.CONCURRENT_PROCESSES,
    }


#: deckhand_mystore.options, which the page's plugin module imports: a strict options model.
MYSTORE_OPTIONS = """
from pydantic import BaseModel, ConfigDict, Field


class MyStoreOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(default=5.0, gt=0, description="Seconds to wait for the database.")
"""

#: deckhand_mystore.store for the page's plugin module: built the way the page's factory calls it, and
#: persistent (the records live in a file of the builtin sqlite store, of which it offers only the StoreBase
#: methods, so it declares exactly ``persistent``, once, on the class).
MYSTORE = """
from deckhand.api import StoreBase, StoreCapability
from deckhand.paths import state_dir
from deckhand.stores.sqlite import SQLiteStore

from deckhand_mystore.options import MyStoreOptions


class MyStore(StoreBase):
    capabilities = frozenset({StoreCapability.PERSISTENT})

    def __init__(self, config, collection, options, *, base_dir):
        assert isinstance(options, MyStoreOptions), options
        # default files go in the state directory; the kit's connection_string is a server's, unused here
        self._db = SQLiteStore(state_dir(base_dir) / "index" / f"{config.index_name}.sqlite", collection)

    def open(self, spec):
        return self._db.open(spec)

    def drop(self):
        self._db.drop()

    def upsert(self, records):
        self._db.upsert(records)

    def replace_source(self, source, records, state):
        self._db.replace_source(source, records, state)

    def delete_source(self, source):
        self._db.delete_source(source)

    def set_file_state(self, state):
        self._db.set_file_state(state)

    def search(self, vector, k, *, min_score=None, sources=None):
        return self._db.search(vector, k, min_score=min_score, sources=sources)

    def get(self, ids):
        return self._db.get(ids)

    def count(self):
        return self._db.count()

    def manifest(self):
        return self._db.manifest()

    def iter_records(self, batch_size=1000):
        return self._db.iter_records(batch_size)

    def close(self):
        self._db.close()
"""

KIT_CONFTEST = """
import pytest


@pytest.fixture
def my_server_url():
    return "mystore://unused"
"""


def test_store_kit_examples(tmp_path: Path) -> None:
    """The page's plugin module, entry point and both kit classes, run by pytest against an installed store."""
    site = tmp_path / "site"
    package = site / "deckhand_mystore"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin.py").write_text(block(STORE_MD, "python", "def deckhand_register"))
    (package / "options.py").write_text(MYSTORE_OPTIONS)
    (package / "store.py").write_text(MYSTORE)
    info = site / "deckhand_mystore-0.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: deckhand-mystore\nVersion: 0.0.1\n")
    entry_points = tomllib.loads(block(STORE_MD, "toml", 'mystore = "deckhand_mystore.plugin"'))
    points = "".join(f"{k} = {v}\n" for k, v in entry_points["project"]["entry-points"]["deckhand"].items())
    (info / "entry_points.txt").write_text(f"[deckhand]\n{points}")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(KIT_CONFTEST)
    (tests / "test_mystore_conformance.py").write_text(block(STORE_MD, "python", "class TestMyStoreConformance"))
    (tests / "test_mystore_tools.py").write_text(block(STORE_MD, "python", "class TestMyStoreTools"))
    chosen = (
        "test_capabilities_are_declared or test_registered_factory_and_entry_point or test_upsert_and_get "
        "or test_sources_filter or test_ingest_and_search"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("DECKHAND_PLUGINS", None)
    run = _pytest(tmp_path, env, "-k", chosen, str(tests))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed is not None and int(passed.group(1)) >= 6, run.stdout[-2000:]


# -- contracts the pages state ---------------------------------------------------------------------------------------


class Recorder(ProgressBase):
    """A progress that keeps what it was told."""

    def __init__(self) -> None:
        self.stages: list[tuple[str, int]] = []
        self.advanced = 0

    def stage(self, name: str, total: int) -> None:
        self.stages.append((name, total))

    def advance(self, n: int = 1) -> None:
        self.advanced += n


def _notes_tool(root: Path, **entry: Any) -> Any:
    (root / "notes").mkdir(exist_ok=True)
    for name, text in NOTES.items():
        (root / "notes" / name).write_text(text, encoding="utf-8")
    agent = root / "agent.yaml"
    agent.write_text(yaml.safe_dump({"tools": [{"type": "vectorstore", "name": "kb", "source": "notes/", **entry}]}))
    return load_agent_config(agent).tools[0]


def test_tool_factory_progress_and_the_default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The factory's typed ``progress`` follows the ingestion as plugins.md says; the default store is
    the persistent sqlite store, as core/README.md says."""
    import inspect

    from deckhand.tools import ToolFactory

    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    parameters = inspect.signature(ToolFactory.__call__).parameters
    assert list(parameters)[1:] == ["config", "base_dir", "registry", "progress"]
    assert "progress: deckhand.api.ProgressBase | None" in PLUGINS_MD.read_text(encoding="utf-8")
    recorder = Recorder()
    tool = build_tool(_notes_tool(tmp_path), base_dir=tmp_path, progress=recorder)
    tool.initialize_sync()
    tool.close()
    assert ("files", len(NOTES)) in recorder.stages and recorder.advanced >= len(NOTES)
    assert tool.provider == "sqlite" and list((tmp_path / "home" / "index").glob("*.sqlite"))
    readme = (ROOT / "core" / "README.md").read_text(encoding="utf-8")
    assert "the persistent `sqlite` store" in readme and "defaults (the in-memory store" not in readme


def test_verify_integrity_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """writing-a-store-plugin.md: ``verify_integrity()`` runs before ``open()`` at every ingest and with
    ``--force-ingest``, never for a search-only open; an ``IndexCorruptError`` stops the run, and with
    ``force_ingest`` the store is dropped, opened again and everything ingested."""
    from deckhand.errors import IndexCorruptError
    from deckhand.stores.sqlite import SQLiteStore

    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    calls: list[str] = []
    damaged = False

    def verify(store: SQLiteStore) -> None:
        calls.append("verify")
        if damaged:
            raise IndexCorruptError("index file is damaged; run again with --force-ingest", str(store.path))

    monkeypatch.setattr(SQLiteStore, "verify_integrity", verify)
    config = _notes_tool(tmp_path)
    tool = build_tool(config, base_dir=tmp_path)
    tool.initialize_sync()
    tool.close()
    assert calls == ["verify"]
    reader = build_tool(config, base_dir=tmp_path)
    reader.open_sync()  # a process that only searches
    reader.close()
    assert calls == ["verify"]
    damaged = True
    with pytest.raises(IndexCorruptError, match="--force-ingest"):
        build_tool(config, base_dir=tmp_path).initialize_sync()
    rebuilt = build_tool(config, base_dir=tmp_path)
    report = rebuilt.initialize_sync(force_ingest=True)
    rebuilt.close()
    assert len(report.ingested) == len(NOTES)
    text = STORE_MD.read_text(encoding="utf-8")
    assert "`verify_integrity() -> None`" in text and "before `open()` at the start of every ingestion" in text


def _pytest(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """A pytest of its own in ``folder``, as a plugin's CI runs its kit tests."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_kit_examples_pass_their_kits(tmp_path: Path) -> None:
    """The page's embedder and lines chunker, with the page's kit glue, pass the kits (in a pytest of their own)."""
    for package, marker in (("deckhand_hashing", "class HashingEmbedder"), ("deckhand_lines", "class LinesChunker")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(block(PLUGINS_MD, "python", marker), encoding="utf-8")
    tests = tmp_path / "tests"
    tests.mkdir()
    for name, marker in (("test_hashing.py", "class TestHashingEmbedder"), ("test_lines.py", "class TestLinesChunker")):
        (tests / name).write_text(block(PLUGINS_MD, "python", marker), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    ran = _pytest(tmp_path, env, str(tests))
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert re.search(r"\b(1[0-9]) passed", ran.stdout), ran.stdout[-500:]

    module = _import(tmp_path / "deckhand_hashing" / "__init__.py", "docs_example_hashing")
    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(module, "hashing")
    component = registry.resolve("embedder", "hashing")
    assert component.described == {"model_id": "hashing-v1-64", "dimension": 64, "max_tokens": 100_000}
    embedder = component.create(None, options={"dimension": 128}, validate=True)
    assert (embedder.model_id, embedder.embed(["tide"]).shape) == ("hashing-v1-128", (1, 128))
    sys.modules.pop("docs_example_hashing", None)


#: The page's reranker, context generator, memory backend, executor and tool type: (package, the block of its
#: module, the block of its test, the kind, the name it registers, the kind's base class).
KIND_EXAMPLES = (
    ("deckhand_overlap", "class OverlapReranker", "class TestOverlapReranker", "reranker", "overlap", "RerankerBase"),
    (
        "deckhand_lead",
        "class LeadContext",
        "class TestLeadContext",
        "context_generator",
        "lead",
        "ContextGeneratorBase",
    ),
    (
        "deckhand_folder_memory",
        "class FolderBackend",
        "class TestFolderBackend",
        "memory_backend",
        "folder",
        "MemoryBackendBase",
    ),
    (
        "deckhand_largest",
        "class LargestFirstExecutor",
        "class TestLargestFirst",
        "executor",
        "largest-first",
        "ExecutorBase",
    ),
    (
        "deckhand_notes_lookup",
        "class NotesLookupTool",
        "class TestNotesLookup",
        "tool",
        "notes_lookup",
        "ToolBase",
    ),
)


def test_kind_examples_pass_their_kits(tmp_path: Path) -> None:
    """The page's reranker, context generator, memory backend, executor and tool type pass their kits with the
    page's glue (in a pytest of their own), and each registers a component its factory builds as a subclass of the
    kind's base (the tool type's factory is its class)."""
    import deckhand.api

    (tmp_path / "tests").mkdir()
    for package, module, test, *_ in KIND_EXAMPLES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(block(PLUGINS_MD, "python", module), encoding="utf-8")
        (tmp_path / "tests" / f"test_{package}.py").write_text(block(PLUGINS_MD, "python", test), encoding="utf-8")
    ran = _pytest(tmp_path, {**os.environ, "PYTHONPATH": str(tmp_path)}, "tests")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "63 passed, 2 skipped" in ran.stdout, ran.stdout[-500:]  # skipped: several processes (no backend_spec)

    for package, _, _, kind, name, base in KIND_EXAMPLES:
        registry = PluginRegistry(load_entry_points=False)
        registry.register_plugin(_import(tmp_path / package / "__init__.py", f"docs_example_{package}"), package)
        component = registry.resolve(kind, name)
        if kind == "tool":
            assert issubclass(component.factory, getattr(deckhand.api, base)), (kind, component.factory)
        else:
            built = component.create(options=None) if kind == "executor" else component.create(tmp_path, options=None)
            assert isinstance(built, getattr(deckhand.api, base)), (kind, type(built))
        sys.modules.pop(f"docs_example_{package}", None)


def test_loader_example(tmp_path: Path) -> None:
    """The page's loader passes the loader kit with the page's glue (in a pytest of its own), and a tool reads
    ``.note`` files with it only when it opts in with the page's ``loaders: [note]``."""
    (tmp_path / "deckhand_notes").mkdir()
    module_source = block(PLUGINS_MD, "python", "class NoteLoader")
    (tmp_path / "deckhand_notes" / "__init__.py").write_text(module_source, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_notes.py").write_text(block(PLUGINS_MD, "python", "class TestNoteLoader"))
    ran = _pytest(tmp_path, {**os.environ, "PYTHONPATH": str(tmp_path)}, "tests")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "11 passed, 1 skipped" in ran.stdout, ran.stdout[-500:]  # skipped: verbatim (it converts)

    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(_import(tmp_path / "deckhand_notes" / "__init__.py", "docs_example_notes_loader"), "notes")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tide.note").write_text("% draft\nHigh tide at the north pier comes at dawn.\n")
    (notes / "gear.md").write_text("# Gear\n\nBring a rope.\n")
    opted_in = block(PLUGINS_MD, "yaml", "loaders: [note]") + "    database: {provider: in-memory}\n"
    for agent, ingested in (
        (opted_in, ["notes/gear.md", "notes/tide.note"]),
        (opted_in.replace("loaders", "#"), ["notes/gear.md"]),
    ):
        (tmp_path / "agent.yaml").write_text(agent)
        tool = build_tool(
            load_agent_config(tmp_path / "agent.yaml", registry=registry).tools[0], base_dir=tmp_path, registry=registry
        )
        try:
            assert sorted(tool.initialize_sync().ingested) == ingested
        finally:
            tool.close()
    sys.modules.pop("docs_example_notes_loader", None)


@pytest.mark.parametrize("name", ["SearchHit", "SearchResult", "IngestReport"])
def test_data_type_fields_are_listed(name: str) -> None:
    """plugins.md's table of each data type's fields is the class's, in order."""
    import dataclasses

    import deckhand.types
    from pydantic import BaseModel

    cls = getattr(deckhand.types, name)
    is_model = isinstance(cls, type) and issubclass(cls, BaseModel)
    fields = list(cls.model_fields) if is_model else [f.name for f in dataclasses.fields(cls)]
    text = PLUGINS_MD.read_text(encoding="utf-8")
    table = text[text.index(f"`{name}` (") :].split("\n\n")[1]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == fields


def test_command_entry_point_example() -> None:
    """The page's ``deckhand.commands`` entry point is the ui plugin's own, naming what ``deckhand ui`` runs."""
    import importlib.metadata

    import click

    shown = tomllib.loads(block(PLUGINS_MD, "toml", '[project.entry-points."deckhand.commands"]'))
    with (ROOT / "plugins" / "ui" / "pyproject.toml").open("rb") as f:
        declared = tomllib.load(f)["project"]["entry-points"]["deckhand.commands"]
    assert shown["project"]["entry-points"]["deckhand.commands"] == declared
    installed = {ep.name: ep for ep in importlib.metadata.entry_points(group="deckhand.commands")}
    assert isinstance(installed["ui"].load(), click.Command)
    assert "--questions" in CliRunner().invoke(cli, ["ui", "--help"]).output
