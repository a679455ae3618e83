"""The tool kit's shared ground: the corpus, the configs, the store view, fixtures and helpers."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from deckhand.bases import EmbedderBase, StoreBase, TokenizerBase
from deckhand.building.embedders import load_embedder
from deckhand.capabilities import StoreCapability, store_capabilities
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.loading import resolve_database
from deckhand.config.models import DatabaseConfig
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.hookspecs import hookimpl
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.registration import Registrar
from deckhand.stores.tool_store import create_store
from deckhand.testing.tool_process import config_class_path
from deckhand.tools import build_tool
from deckhand.types import CollectionSpec, Record, Vector

#: The tool types the kit knows how to configure.
TOOL_TYPES = ("vectorstore", "hierarchical_document")
#: The tool's name, and so its collection.
TOOL_NAME = "manual"
#: Seconds a tool process may take (start-up and the model included).
PROCESS_TIMEOUT = 180.0

#: The corpus: one topic per file, each written as four paragraphs (several chunks per file).
TOPICS = {
    "anchoring.md": "Anchoring: choose sand or mud, let out chain five times the depth, back down to set the anchor.",
    "reefing.md": "Reefing: reduce sail area before the wind rises; tie in a reef when gusts exceed twenty knots.",
    "engine.md": "Diesel engine care: change the oil every hundred hours, check the impeller, bleed the fuel.",
    "navigation.md": "Coastal navigation: plot a course on the chart, correct for tidal streams and variation.",
    "weather.md": "Weather routing: read the barometer trend, watch cloud types, download GRIB files before a passage.",
    "knots.md": "Knots every sailor uses: bowline for a fixed loop, cleat hitch for mooring, rolling hitch for a line.",
}

#: New text for files the crash test changes; the first word of each is in no other text.
REWRITTEN = {
    "engine.md": "Outboard engines need fresh water flushing after every use in salt water.",
    "reefing.md": "Heaving to: back the jib and lash the helm to rest in a gale without drifting far.",
    "weather.md": "Fog at sea: sound the horn every two minutes and post a lookout at the bow.",
}


def write_corpus(root: Path) -> Path:
    """The six topic files under ``root/docs`` (a few paragraphs each, so several chunks per file)."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    for name, text in TOPICS.items():
        body = "\n\n".join(f"{text} Paragraph {i} adds detail about {name[:-3]} number {i}." for i in range(4))
        (docs / name).write_text(f"# {name[:-3].title()}\n\n{body}\n", encoding="utf-8")
    return docs


def rewrite(docs: Path, name: str) -> None:
    """Give ``name`` its :data:`REWRITTEN` text (a new size, so the change is seen)."""
    (docs / name).write_text(f"# {name[:-3].title()}\n\n{REWRITTEN[name]}\n", encoding="utf-8")


def tool_config(
    tool_type: str, docs: Path, database: DatabaseConfig | None, *, model: str | None = None, name: str = TOOL_NAME
) -> VectorStoreToolConfig | HierarchicalDocumentToolConfig:
    """A small-chunk configuration of ``tool_type`` over ``docs`` (48-token chunks, 8 overlap, no cutoffs)."""
    common: dict[str, Any] = {
        "name": name,
        "source": str(docs),
        "embedding_model": model,
        "chunk_overlap": 8,
        "database": database,
        # The kit checks what the store returns (filters, persistence): every match is shown, however
        # weak; the noise floor and the relative cutoff are tested with the tools in deckhand's own suite.
        "min_similarity_score": 0,
        "relative_cutoff": 0,
    }
    if tool_type == "vectorstore":
        return VectorStoreToolConfig(type="vectorstore", chunk_size=48, **common)
    if tool_type == "hierarchical_document":
        return HierarchicalDocumentToolConfig(type="hierarchical_document", max_chunk_tokens=48, **common)
    raise ValueError(f"the tool kit knows no tool type {tool_type!r} (known: {', '.join(TOOL_TYPES)})")


class _RenamedEmbedder(EmbedderBase):
    """The default embedder under another model id: what changing ``embedding_model`` looks like to an index.

    The default embedder is looked up on first use, not when this one is built: embedder
    factories run under the embedder factory's lock.
    """

    model_id = "renamed-minilm-v2"

    @property
    def _inner(self) -> EmbedderBase:
        return load_embedder(get_registry(), None)

    @property
    def dimension(self) -> int:  # type: ignore[override]  # EmbedderBase's attribute, the default embedder's
        return self._inner.dimension

    @property
    def max_tokens(self) -> int:  # type: ignore[override]  # likewise
        return self._inner.max_tokens

    @property
    def tokenizer(self) -> TokenizerBase:
        return self._inner.tokenizer

    def embed(self, texts: Sequence[str]) -> Vector:
        return self._inner.embed(texts)


def _renamed_embedder(model: str | None, options: None) -> EmbedderBase:
    return _RenamedEmbedder()


class RenamedEmbedderPlugin:
    """Registers the embedder ``renamed-minilm`` (model id ``renamed-minilm-v2``) for the model-change test."""

    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.embedder(
            "renamed-minilm", _renamed_embedder, description="the default embedder under another model id"
        )


def names(paths: Sequence[str]) -> list[str]:
    """File names of report entries (``docs/engine.md`` -> ``engine.md``), sorted."""
    return sorted(Path(p).name for p in paths)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class StoreView:
    """A connection to a tool's collection, opened as the tool opens it, for checks from outside the tool."""

    def __init__(self, database: DatabaseConfig, base_dir: Path, collection: str = TOOL_NAME) -> None:
        component = get_registry().resolve("store", database.provider)
        self.store: StoreBase = create_store(component, database, collection, base_dir=base_dir)
        embedder = load_embedder(get_registry(), None)
        spec = CollectionSpec(
            collection, embedder.dimension, embedder.model_id, database.distance_metric, database.vector_algorithm
        )
        self.spec = self.store.open(spec)
        assert self.spec is not None, f"collection {collection!r} does not exist in the {database.provider} store"

    def records(self) -> dict[str, list[Record]]:
        by_source: dict[str, list[Record]] = defaultdict(list)
        for record in self.store.iter_records():
            by_source[record.source].append(record)
        return by_source

    def consistent(self) -> dict[str, int]:
        """Chunk count per source, after checking each manifest entry has exactly its chunks and no record lacks one."""
        records = self.records()
        manifest = self.store.manifest()
        orphans = set(records) - set(manifest)
        assert not orphans, f"records without a manifest entry: {sorted(orphans)}"
        for source, state in manifest.items():
            indexes = sorted(r.chunk_index for r in records[source])
            assert indexes == list(range(state.chunk_count)), (
                f"{source}: chunks {indexes}, manifest {state.chunk_count}"
            )
        return {source: state.chunk_count for source, state in manifest.items()}

    def close(self) -> None:
        self.store.close()


class ToolKit:
    """What both parts of the tool kit share: the class attributes a plugin sets, the fixtures and the helpers.

    See :class:`~deckhand.testing.tool_conformance.ToolConformanceTests` for the attributes.
    """

    provider: ClassVar[str] = ""
    tool_types: ClassVar[Sequence[str]] = TOOL_TYPES
    kill_cases: ClassVar[Sequence[tuple[str, str]]] = (
        ("vectorstore", "after_first_write"),
        ("hierarchical_document", "before_delete"),
    )
    xfail: ClassVar[Mapping[str, str]] = {}

    # -- parametrisation and fixtures -------------------------------------------------------
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        name = metafunc.function.__name__

        def param(*values: str) -> Any:
            case = f"{name}[{'-'.join(values)}]"
            marks = [pytest.mark.xfail(strict=True, reason=self.xfail[case])] if case in self.xfail else []
            return pytest.param(*values, id="-".join(values), marks=marks)

        if "kill_point" in metafunc.fixturenames:
            cases = [(t, k) for t, k in self.kill_cases if t in self.tool_types]
            metafunc.parametrize(("tool_type", "kill_point"), [param(t, k) for t, k in cases])
        elif "tool_type" in metafunc.fixturenames:
            metafunc.parametrize("tool_type", [param(t) for t in self.tool_types])

    @pytest.fixture
    def database(self) -> DatabaseConfig | None:
        """Override: the ``database:`` block of the tools (``None``: the default store, as without one)."""
        if not self.provider:
            pytest.fail(f"{type(self).__name__}: set provider = '<name the store is registered under>'")
        return DatabaseConfig(provider=self.provider)

    @pytest.fixture
    def project(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """The agent config's directory: ``docs/`` holds the corpus; state, cache and HOME are private."""
        monkeypatch.setenv("DECKHAND_NO_CACHE", "1")
        monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
        monkeypatch.setenv("HOME", str(tmp_path / "user"))  # no user-level config leaks in
        project = tmp_path / "project"
        write_corpus(project)
        return project

    @pytest.fixture
    def docs(self, project: Path) -> Path:
        return project / "docs"

    @pytest.fixture
    def tool_database(self, database: DatabaseConfig | None) -> DatabaseConfig | None:
        """The tools' ``database:`` block with an ``index_name`` of its own (a fresh namespace per test)."""
        if database is None:
            return None
        return database.model_copy(update={"index_name": f"kit_{uuid.uuid4().hex[:10]}"})

    @pytest.fixture
    def effective_database(self, tool_database: DatabaseConfig | None, project: Path) -> Iterator[DatabaseConfig]:
        """The database the tools really use (the default one when ``database`` is ``None``); dropped afterwards."""
        effective, _ = resolve_database(tool_database, cwd=project)
        yield effective
        component = get_registry().resolve("store", effective.provider)
        store = create_store(component, effective, TOOL_NAME, base_dir=project)
        try:
            store.drop()
        finally:
            store.close()

    @pytest.fixture
    def capabilities(self, effective_database: DatabaseConfig, project: Path) -> frozenset[StoreCapability]:
        component = get_registry().resolve("store", effective_database.provider)
        store = create_store(component, effective_database, TOOL_NAME, base_dir=project)
        try:
            return store_capabilities(store)
        finally:
            store.close()

    @pytest.fixture
    def persistent(self, capabilities: frozenset[StoreCapability]) -> bool:
        return StoreCapability.PERSISTENT in capabilities

    @pytest.fixture
    def build(
        self,
        tool_type: str,
        docs: Path,
        project: Path,
        tool_database: DatabaseConfig | None,
        effective_database: DatabaseConfig,
    ) -> Iterator[Callable[..., Any]]:
        """``build(model=None)``: a new tool over the corpus (closed after the test, before the drop)."""
        built: list[Any] = []

        def _build(model: str | None = None) -> Any:
            registry = PluginRegistry()
            registry.register_plugin(RenamedEmbedderPlugin(), "deckhand-tool-kit-renamed-embedder")
            tool = build_tool(
                tool_config(tool_type, docs, tool_database, model=model), base_dir=project, registry=registry
            )
            built.append(tool)
            return tool

        yield _build
        for tool in built:
            tool.close()

    @pytest.fixture
    def view(self, effective_database: DatabaseConfig, project: Path) -> Iterator[Callable[[], StoreView]]:
        """``view()``: a new :class:`StoreView` of the tools' collection (closed after the test)."""
        views: list[StoreView] = []

        def _view() -> StoreView:
            views.append(StoreView(effective_database, project))
            return views[-1]

        yield _view
        for view in views:
            view.close()

    # -- helpers ----------------------------------------------------------------------------
    @staticmethod
    def _require_persistent(persistent: bool) -> None:
        if not persistent:
            pytest.skip("the store does not declare 'persistent': nothing outlives the tool")

    @staticmethod
    def _next(tool: Any, build: Callable[..., Any], persistent: bool) -> Any:
        """The tool of the next run: a new one on a persistent store, else the same one again."""
        if not persistent:
            return tool
        tool.close()
        return build()

    def _in_another_process(
        self,
        tool_type: str,
        docs: Path,
        project: Path,
        database: DatabaseConfig | None,
        *,
        query: str | None = None,
        kill: str | None = None,
    ) -> tuple[int, dict[str, Any] | None, str]:
        config = tool_config(tool_type, docs, database)
        job = {
            "config_class": config_class_path(config),
            "config": config.model_dump(mode="json"),
            "base_dir": str(project),
            "query": query,
            "kill": kill,
        }
        done = subprocess.run(
            [sys.executable, "-m", "deckhand.testing.tool_process"],
            input=json.dumps(job),
            capture_output=True,
            text=True,
            timeout=PROCESS_TIMEOUT,
            env=os.environ.copy(),
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        return done.returncode, (json.loads(lines[-1]) if lines else None), done.stderr

    def _check_provider(self, tool: Any, effective_database: DatabaseConfig) -> None:
        assert getattr(tool, "provider", None) == effective_database.provider, (
            f"the tool uses {getattr(tool, 'provider', None)!r}, not {effective_database.provider!r} "
            "(did it fall back to the in-memory store?)"
        )
