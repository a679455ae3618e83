"""A pytest kit that runs deckhand's tools end to end on one store: ingest, reuse, change, crash.

A store plugin subclasses :class:`ToolConformanceTests` and gives the ``database:`` block;
every ``test_*`` method then runs for both tool types that ingest a source
(``vectorstore`` and ``hierarchical_document``) on that store::

    import pytest
    from deckhand.config.models import DatabaseConfig
    from deckhand.testing.tool_conformance import ToolConformanceTests

    class TestMyStoreTools(ToolConformanceTests):
        provider = "mystore"

        @pytest.fixture
        def database(self, my_server_url: str) -> DatabaseConfig:
            return DatabaseConfig(provider="mystore", connection_string=my_server_url)

The tools are real: the default embedder (MiniLM, offline), the builtin loaders and
chunkers, six small markdown files. The embedding cache is off, so ``texts_embedded``
counts what the model really embedded. Each test gets its own ``index_name`` (a fresh
namespace on a shared server) and its own state directory (``DECKHAND_HOME``).

Which tests apply depends on the store's declared capabilities: every store must ingest,
search, re-initialise a tool without re-embedding, follow a modified and a deleted file
and force a re-ingest; a store declaring ``persistent`` must also serve a second process
without re-embedding, refuse an index built with another model until ``--force-ingest``
rebuilds it, and survive ``kill -9`` in the middle of an ingest (the previous index stays
searchable, the next run completes the work).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest

from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.loading import resolve_database
from deckhand.config.models import DatabaseConfig
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.embedding.factory import load_embedder
from deckhand.errors import FilterError, ModelMismatchError
from deckhand.hookspecs import hookimpl
from deckhand.plugins import PluginRegistry, get_registry
from deckhand.protocols import Embedder, StoreCapability, Tokenizer, VectorStore, store_capabilities
from deckhand.registration import Registrar
from deckhand.stores.opening import create_store
from deckhand.testing.tool_process import KILL_POINTS, config_class_path
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
    """A small-chunk configuration of ``tool_type`` over ``docs`` (48-token chunks, 8 overlap)."""
    common: dict[str, Any] = {
        "name": name,
        "source": str(docs),
        "embedding_model": model,
        "chunk_overlap": 8,
        "database": database,
    }
    if tool_type == "vectorstore":
        return VectorStoreToolConfig(type="vectorstore", chunk_size=48, **common)
    if tool_type == "hierarchical_document":
        return HierarchicalDocumentToolConfig(type="hierarchical_document", max_chunk_tokens=48, **common)
    raise ValueError(f"the tool kit knows no tool type {tool_type!r} (known: {', '.join(TOOL_TYPES)})")


class _RenamedEmbedder:
    """The default embedder under another model id: what changing ``embedding_model`` looks like to an index.

    The default embedder is looked up on first use, not when this one is built: embedder
    factories run under the embedder factory's lock.
    """

    model_id = "renamed-minilm-v2"

    @property
    def _inner(self) -> Embedder:
        return load_embedder(get_registry(), None)

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    @property
    def max_tokens(self) -> int:
        return self._inner.max_tokens

    @property
    def tokenizer(self) -> Tokenizer:
        return self._inner.tokenizer

    def embed(self, texts: Sequence[str]) -> Vector:
        return self._inner.embed(texts)


def _renamed_embedder(model: str | None, options: None) -> Embedder:
    # Its dimension and max_tokens are read-only properties, which the Embedder protocol's plain
    # attributes do not admit statically; at run time it is an Embedder.
    return cast(Embedder, _RenamedEmbedder())


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
        self.store: VectorStore = create_store(component, database, collection, base_dir=base_dir)
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


class ToolConformanceTests:
    """The tool-level kit; subclass it as ``Test<Store>Tools`` and give the ``database`` fixture.

    Class attributes:

    * ``provider`` -- the store's registered name (what ``tool.provider`` must report:
      a tool that fell back to the in-memory store fails).
    * ``tool_types`` -- the tool types to run (both by default).
    * ``kill_cases`` -- ``(tool type, kill point)`` pairs of the crash test; kill points
      are those of :data:`deckhand.testing.tool_process.KILL_POINTS`. By default each kill
      point once, each with one tool type (a process start costs about a second).
    * ``xfail`` -- ``{"test_name[tool_type]": "reason"}``: known failures, marked strict
      (an unexpected pass fails, so the mark goes when the fault is fixed).
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

    # -- every store ------------------------------------------------------------------------
    def test_ingest_and_search(
        self,
        build: Callable[..., Any],
        effective_database: DatabaseConfig,
        persistent: bool,
        view: Callable[[], StoreView],
    ) -> None:
        """``await tool.initialize()`` (the store runs in a worker thread) ingests everything; search finds it."""
        tool = build()
        report = asyncio.run(tool.initialize())
        self._check_provider(tool, effective_database)
        assert names(report.ingested) == sorted(TOPICS)
        total = tool.document_count
        assert total > len(TOPICS) and report.texts_embedded == total == report.chunks_written
        assert report.summary().startswith(f"{len(TOPICS)} ingested ({total} chunks, {total} embedded), 0 unchanged")
        results = asyncio.run(tool.search_results("how much chain should I let out when anchoring?"))
        assert results[0].source.endswith("anchoring.md")
        results = tool.search_results_sync("when should I reef the sails?")
        assert results[0].source.endswith("reefing.md")
        if persistent:
            assert sum(view().consistent().values()) == total

    def test_filtered_search(
        self, build: Callable[..., Any], docs: Path, capabilities: frozenset[StoreCapability]
    ) -> None:
        """Filters by path glob, file type and front matter hold in every result, in every search mode."""
        (docs / "guides").mkdir()
        (docs / "guides" / "rigging.md").write_text(
            "---\nauthor: Ann\nyear: 2023\ntags: [rigging, safety]\n---\n# Rigging\n\n"
            "Anchoring from the bow roller: inspect the anchor chain shackle and the windlass before a passage.\n",
            encoding="utf-8",
        )
        (docs / "logbook.txt").write_text(
            "Logbook: anchored in sand, let out chain five times the depth, the anchor held all night.\n",
            encoding="utf-8",
        )
        tool = build()
        tool.initialize_sync()
        query = "how much anchor chain should I let out?"
        if StoreCapability.FILTERS not in capabilities:
            with pytest.raises(FilterError, match="cannot apply search filters"):
                tool.search_results_sync(query, filter={"type": "md"})
            return
        modes: list[dict[str, Any]] = [{}]
        if hasattr(tool, "keyword_strategy"):
            modes += [{"mode": m} for m in ("semantic", "keyword", "exact", "hybrid")]
        cases: list[tuple[Any, Callable[[str], bool]]] = [
            ({"path": "guides/*"}, lambda source: "/guides/" in source),
            (["type:txt"], lambda source: source.endswith("logbook.txt")),
            ({"metadata": {"author": "Ann", "year": {"gte": 2020}}}, lambda source: source.endswith("rigging.md")),
            (["tags=safety", "path:rigging.md"], lambda source: source.endswith("rigging.md")),
            ({"path": ["anchoring.md", "*.txt"]}, lambda source: source.endswith(("anchoring.md", "logbook.txt"))),
        ]
        for where, allowed in cases:
            for mode in modes:
                results = tool.search_results_sync(query, 20, filter=where, **mode)
                if mode.get("mode") != "exact":
                    assert results, f"filter {where} ({mode or 'default mode'}) found nothing"
                wrong = [r.source for r in results if not allowed(r.source)]
                assert not wrong, f"filter {where} ({mode or 'default mode'}) returned {wrong}"
        found = tool.search_results_sync(query, 20, filter={"metadata": {"author": "Ann"}})
        assert found[0].metadata["author"] == "Ann" and found[0].metadata["path"] == "guides/rigging.md"
        assert found[0].metadata["file_type"] == "md" and found[0].metadata["tags"] == ["rigging", "safety"]
        text = tool.search_text_sync(query, filter=["author=Nobody"])
        assert text == f"No relevant results found for query: {query} (with the filter given)"
        with pytest.raises(FilterError, match="unknown operator 'after'"):
            tool.search_results_sync(query, filter={"metadata": {"year": {"after": 2020}}})

    def test_reinitialize_reuses_the_index(self, build: Callable[..., Any]) -> None:
        """Initialising the same tool again embeds nothing and reports every file unchanged."""
        tool = build()
        tool.initialize_sync()
        count = tool.document_count
        again = tool.initialize_sync()
        assert (again.ingested, again.removed, again.texts_embedded) == ([], [], 0), again.summary()
        assert names(again.unchanged) == sorted(TOPICS)
        assert tool.document_count == count
        assert tool.search_results_sync("bowline for a fixed loop")[0].source.endswith("knots.md")

    def test_modified_and_deleted_files(
        self, build: Callable[..., Any], docs: Path, persistent: bool, view: Callable[[], StoreView]
    ) -> None:
        """Only the modified file is re-embedded; the deleted file's chunks disappear."""
        tool = build()
        tool.initialize_sync()
        tool = self._next(tool, build, persistent)
        time.sleep(0.01)
        (docs / "engine.md").write_text("# Engine\n\nOutboard engines need fresh water flushing after every use.\n")
        (docs / "knots.md").unlink()
        report = tool.initialize_sync()
        assert names(report.ingested) == ["engine.md"], report.summary()
        assert names(report.removed) == ["knots.md"]
        assert len(report.unchanged) == len(TOPICS) - 2
        assert report.texts_embedded == report.chunks_written > 0
        found = tool.search_results_sync("bowline cleat hitch", top_k=20)
        assert not any(r.source.endswith("knots.md") for r in found), "the deleted file is still found"
        assert tool.search_results_sync("flushing an outboard with fresh water")[0].source.endswith("engine.md")
        if persistent:
            counts = view().consistent()
            assert {Path(s).name for s in counts} == set(TOPICS) - {"knots.md"}
            assert sum(counts.values()) == tool.document_count

    def test_force_ingest_re_embeds_everything(
        self, build: Callable[..., Any], persistent: bool, view: Callable[[], StoreView]
    ) -> None:
        tool = build()
        tool.initialize_sync()
        count = tool.document_count
        tool = self._next(tool, build, persistent)
        report = tool.initialize_sync(force_ingest=True)
        assert names(report.ingested) == sorted(TOPICS), report.summary()
        assert report.texts_embedded == tool.document_count == count, "a forced ingest must replace, not add"
        if persistent:
            assert sum(view().consistent().values()) == count

    # -- persistent stores -----------------------------------------------------------------
    def test_another_process_reuses_the_index(
        self,
        tool_type: str,
        build: Callable[..., Any],
        docs: Path,
        project: Path,
        tool_database: DatabaseConfig | None,
        effective_database: DatabaseConfig,
        persistent: bool,
    ) -> None:
        """A second process finds the index and searches without embedding any document."""
        self._require_persistent(persistent)
        tool = build()
        tool.initialize_sync()
        total = tool.document_count
        tool.close()
        code, other, stderr = self._in_another_process(
            tool_type, docs, project, tool_database, query="when should I reef the sails?"
        )
        assert code == 0 and other is not None, f"the second process failed (exit {code}):\n{stderr[-3000:]}"
        assert other["provider"] == effective_database.provider
        assert (other["embedded"], other["ingested"], other["removed"]) == (0, [], []), other["summary"]
        assert names(other["unchanged"]) == sorted(TOPICS)
        assert other["summary"].startswith(f"0 ingested (0 chunks, 0 embedded), {len(TOPICS)} unchanged")
        assert other["count"] == total
        assert other["sources"] and other["sources"][0].endswith("reefing.md")

    def test_model_change_refused_then_rebuilt(
        self, build: Callable[..., Any], persistent: bool, view: Callable[[], StoreView]
    ) -> None:
        """Another embedding model: a clear error until ``--force-ingest``, which rebuilds the index."""
        self._require_persistent(persistent)
        tool = build()
        tool.initialize_sync()
        count = tool.document_count
        tool.close()
        changed = build(model="renamed-minilm")
        with pytest.raises(ModelMismatchError, match="--force-ingest"):
            changed.initialize_sync()
        before = view()
        assert sum(before.consistent().values()) == count, "the refused run must leave the old index alone"
        assert before.spec is not None and before.spec.embedding_model != _RenamedEmbedder.model_id
        report = changed.initialize_sync(force_ingest=True)
        assert names(report.ingested) == sorted(TOPICS)
        after = view()
        assert after.spec is not None and after.spec.embedding_model == _RenamedEmbedder.model_id
        assert {s.model for s in after.store.manifest().values()} == {_RenamedEmbedder.model_id}
        assert sum(after.consistent().values()) == changed.document_count == count
        assert changed.search_results_sync("read the barometer trend")[0].source.endswith("weather.md")

    def test_killed_mid_ingest(
        self,
        tool_type: str,
        kill_point: str,
        build: Callable[..., Any],
        docs: Path,
        project: Path,
        tool_database: DatabaseConfig | None,
        persistent: bool,
        view: Callable[[], StoreView],
    ) -> None:
        """``kill -9`` during an ingest: every file stays whole and searchable, and the next run completes the work."""
        self._require_persistent(persistent)
        assert kill_point in KILL_POINTS
        tool = build()
        tool.initialize_sync()
        tool.close()
        time.sleep(0.01)
        for name in REWRITTEN:
            rewrite(docs, name)
        (docs / "knots.md").unlink()
        new_hash = {name: sha256_of(docs / name) for name in REWRITTEN}

        code, result, stderr = self._in_another_process(tool_type, docs, project, tool_database, kill=kill_point)
        assert code == -signal.SIGKILL, (
            f"the ingest was not killed at {kill_point} (exit {code}, result {result}): does the tool build its store "
            f"through deckhand.stores.opening.create_store?\n{stderr[-2000:]}"
        )

        # After the crash: each file whole (its chunks match its manifest entry), old or new.
        crashed = view()
        counts = crashed.consistent()
        assert {Path(s).name for s in counts} == set(TOPICS), "the crash lost or removed a file's entry"
        manifest = {Path(s).name: state for s, state in crashed.store.manifest().items()}
        written = {name for name in REWRITTEN if manifest[name].sha256 == new_hash[name]}
        expected_written = 1 if kill_point == "after_first_write" else len(REWRITTEN)
        assert len(written) == expected_written, f"files written before the kill: {sorted(written)}"
        records = {Path(s).name: rs for s, rs in crashed.records().items()}
        for name in REWRITTEN:
            text = " ".join(r.content for r in records[name])
            marker = REWRITTEN[name].split()[0]
            assert (marker in text) == (name in written), f"{name}: its chunks do not match its manifest entry"
        # The previous index is searchable, straight from the store.
        embedder = load_embedder(get_registry(), None)
        query = embedder.embed(["how much chain should I let out when anchoring?"])[0]
        hits = crashed.store.search(query, 3)
        assert hits and hits[0].record.source.endswith("anchoring.md")

        # The next run finishes the work.
        tool = build()
        report = tool.initialize_sync()
        assert names(report.ingested) == sorted(set(REWRITTEN) - written), report.summary()
        assert names(report.removed) == ["knots.md"]
        assert names(report.unchanged) == sorted(set(TOPICS) - {"knots.md"} - (set(REWRITTEN) - written))
        assert report.texts_embedded == report.chunks_written
        counts = view().consistent()
        assert {Path(s).name for s in counts} == set(TOPICS) - {"knots.md"}
        assert sum(counts.values()) == tool.document_count
        assert tool.search_results_sync("sound the horn in fog")[0].source.endswith("weather.md")
        assert tool.search_results_sync("heave to in a gale")[0].source.endswith("reefing.md")
