"""What both tool types must do on any store: ingest, filtered search, reuse, changed files, ``--force-ingest``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deckhand.capabilities import StoreCapability
from deckhand.config.models import DatabaseConfig
from deckhand.errors import FilterError
from deckhand.testing.tool_conformance.tool_fixtures import (
    TOPICS,
    StoreView,
    ToolKit,
    names,
)


class EveryStoreToolTests(ToolKit):
    """What both tool types must do on any store: ingest, filtered search, reuse, changed files, ``--force-ingest``."""

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
