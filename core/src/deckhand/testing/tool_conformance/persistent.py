"""What a persistent store adds: another process reuses the index, a model change, ``kill -9`` mid-ingest."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deckhand.building.embedders import load_embedder
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ModelMismatchError
from deckhand.plugins import get_registry
from deckhand.testing.tool_conformance.tool_fixtures import (
    REWRITTEN,
    TOPICS,
    StoreView,
    ToolKit,
    _RenamedEmbedder,
    names,
    rewrite,
    sha256_of,
)
from deckhand.testing.tool_process import KILL_POINTS


class PersistentToolTests(ToolKit):
    """What a persistent store adds: another process reuses the index, a model change, ``kill -9`` mid-ingest."""

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
            f"through deckhand.stores.tool_store.create_store?\n{stderr[-2000:]}"
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
