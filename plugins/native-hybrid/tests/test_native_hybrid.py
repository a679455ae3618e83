"""Keyword strategy ``native``: delegation to a store's keyword_search, and the tool's choice of strategy."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from deckhand.api import KeywordIndexBase, NativeHybridSearch, NativeKeywordSearch, StoreCapability
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.errors import ComponentNotFoundError
from deckhand.hookspecs import hookimpl
from deckhand.plugins import PluginRegistry
from deckhand.registration import Registrar
from deckhand.stores.inmemory import InMemoryStore
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.types import SearchHit, Vector
from deckhand_native_hybrid import NativeKeywordIndex, UnsupportedStoreError
from pydantic import ValidationError


class FullTextStore(InMemoryStore):
    """The in-memory store plus a naive full-text ranking: number of query words in the content."""

    capabilities: ClassVar[frozenset[StoreCapability]] = InMemoryStore.capabilities | {StoreCapability.KEYWORD_SEARCH}

    def __init__(self, collection: str = "default") -> None:
        super().__init__(collection)
        self.keyword_calls: list[tuple[str, int]] = []

    @classmethod
    def from_config(
        cls, config: object = None, collection: str = "default", options: None = None, *, base_dir: object = None
    ) -> FullTextStore:
        return cls(collection)

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]:
        self.keyword_calls.append((query, k))
        words = {w.lower() for w in query.split()}
        hits = []
        for record in self.iter_records():
            count = sum(1 for w in record.content.lower().split() if w.strip(".,") in words)
            if count:
                hits.append(SearchHit(record, count / (count + 1)))
        hits.sort(key=lambda h: (-h.score, h.record.id))
        return hits[:k]


class FakeStorePlugin:
    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.store(
            "fulltext",
            FullTextStore.from_config,
            description="test store with keyword_search",
        )


def test_index_delegates_to_the_store() -> None:
    store = FullTextStore()
    assert isinstance(store, NativeKeywordSearch)
    index = NativeKeywordIndex(store)
    index.build([("ignored", "text")])  # nothing to build
    assert index.search("  ", 5) == [] and store.keyword_calls == []
    assert index.search("anything", 3) == []
    assert store.keyword_calls == [("anything", 3)]


def test_a_store_without_the_capability_is_refused() -> None:
    with pytest.raises(UnsupportedStoreError, match="has no keyword_search"):
        NativeKeywordIndex(InMemoryStore())


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\n## Boats\n\nSailing boats need wind.\n\n## Trains\n\nTrains need rails.\n")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / ".state"))
    return tmp_path


def _config(
    tmp_path: Path, provider: str, strategy: str, registry: PluginRegistry | None = None
) -> HierarchicalDocumentToolConfig:
    """The tool's configuration, validated against ``registry`` (default: the process-wide one)."""
    return HierarchicalDocumentToolConfig.model_validate(
        {
            "type": "hierarchical_document",
            "name": "docs",
            "source": str(tmp_path / "docs"),
            "keyword_strategy": strategy,
            "database": {"provider": provider},
        },
        context={"registry": registry} if registry is not None else None,
    )


@pytest.mark.parametrize("strategy", ["native", "auto"])
def test_tool_uses_the_store_full_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str) -> None:
    project = _project(tmp_path, monkeypatch)
    registry = PluginRegistry()
    registry.register_plugin(FakeStorePlugin(), "fake-fulltext")
    tool = HierarchicalDocumentTool(_config(project, "fulltext", strategy), base_dir=project, registry=registry)
    tool.initialize_sync()
    assert tool.keyword_strategy == "native"
    results = tool.search_results_sync("rails", 2, mode="keyword")
    assert results[0].content.endswith("Trains need rails.")
    assert results[0].modalities["keyword"].rank == 1
    assert isinstance(tool.index.store, FullTextStore) and tool.index.store.keyword_calls[-1][0] == "rails"
    hybrid = tool.search_results_sync("wind for sailing", 2)
    assert "keyword" in hybrid[0].modalities and "semantic" in hybrid[0].modalities


def test_tool_on_a_store_without_full_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    project = _project(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        tool = HierarchicalDocumentTool(_config(project, "in-memory", "native"), base_dir=project)
        tool.initialize_sync()
    assert tool.keyword_strategy == "bm25"
    assert sum("keyword_strategy native" in r.getMessage() for r in caplog.records) == 1
    auto = HierarchicalDocumentTool(_config(project, "in-memory", "auto"), base_dir=project)
    auto.initialize_sync()
    assert auto.keyword_strategy == "bm25"


def test_native_without_the_plugin_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path, monkeypatch)
    with_native = PluginRegistry()
    with_native.register_plugin(FakeStorePlugin(), "fake-fulltext")
    monkeypatch.setenv("DECKHAND_PLUGINS", "inmemory")  # native-hybrid not loaded
    registry = PluginRegistry()
    registry.register_plugin(FakeStorePlugin(), "fake-fulltext")
    # Validating the configuration against the plugins installed names the install command ...
    with pytest.raises(ValidationError, match=r"provides 'native'; install it with: .*native-hybrid") as invalid:
        _config(project, "fulltext", "native", registry)
    assert [e["loc"] for e in invalid.value.errors()] == [("keyword_strategy",)]
    # ... and so does a tool given a configuration validated elsewhere, when it starts.
    config = _config(project, "fulltext", "native", with_native)
    tool = HierarchicalDocumentTool(config, base_dir=project, registry=registry)
    with pytest.raises(ComponentNotFoundError, match=r"provides 'native'; install it with: .*native-hybrid"):
        tool.initialize_sync()
    auto = HierarchicalDocumentTool(_config(project, "fulltext", "auto", registry), base_dir=project, registry=registry)
    auto.initialize_sync()
    assert auto.keyword_strategy == "bm25"


class HybridStore(FullTextStore):
    """A fake with native hybrid search (as Weaviate's store has): records what it was asked, ranks by text."""

    capabilities: ClassVar[frozenset[StoreCapability]] = FullTextStore.capabilities | {StoreCapability.HYBRID_SEARCH}

    def __init__(self, collection: str = "default") -> None:
        super().__init__(collection)
        self.hybrid_calls: list[tuple[str, int, int]] = []

    @classmethod
    def from_config(
        cls, config: object = None, collection: str = "default", options: None = None, *, base_dir: object = None
    ) -> HybridStore:
        return cls(collection)

    def hybrid_search(
        self, query: str, vector: Vector, k: int, *, sources: Sequence[str] | None = None
    ) -> list[SearchHit]:
        self.hybrid_calls.append((query, int(np.asarray(vector).size), k))
        hits = FullTextStore.keyword_search(self, query, k, sources=sources)
        self.keyword_calls.pop()  # the text ranking is borrowed; only direct keyword searches are counted
        return hits


class FakeHybridPlugin:
    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.store(
            "hybrid",
            HybridStore.from_config,
            description="test store with hybrid_search",
        )


def test_index_passes_the_vector_to_a_hybrid_store() -> None:
    store = HybridStore()
    assert isinstance(store, NativeHybridSearch)
    index = NativeKeywordIndex(store)
    assert isinstance(index, KeywordIndexBase) and index.wants_vector
    assert index.search_with_vector("anything", np.ones(4, dtype=np.float32), 3) == []
    assert store.hybrid_calls == [("anything", 4, 3)] and store.keyword_calls == []
    assert index.search_with_vector("   ", np.ones(4, dtype=np.float32), 3) == [] and len(store.hybrid_calls) == 1
    plain = NativeKeywordIndex(FullTextStore())
    assert not plain.wants_vector
    assert plain.search_with_vector("x", np.ones(4, dtype=np.float32), 2) == []  # falls back to keyword_search


def test_tool_sends_the_query_vector_to_native_hybrid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path, monkeypatch)
    registry = PluginRegistry()
    registry.register_plugin(FakeHybridPlugin(), "fake-hybrid")
    tool = HierarchicalDocumentTool(_config(project, "hybrid", "native"), base_dir=project, registry=registry)
    tool.initialize_sync()
    store = tool.index.store
    assert isinstance(store, HybridStore) and tool.keyword_strategy == "native"
    results = tool.search_results_sync("rails", 2, mode="keyword")
    assert results[0].content.endswith("Trains need rails.")
    dimension = tool.index.embed_query("rails").size
    assert store.hybrid_calls == [("rails", dimension, 100)] and store.keyword_calls == []
    tool.search_results_sync("wind for sailing", 2)  # hybrid mode: the same vector serves both modalities
    assert store.hybrid_calls[-1][0] == "wind for sailing"
