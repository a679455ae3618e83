"""A running tool on Redis sees what another writer ingested, without a restart (replicas of ``deckhand mcp``).

Two tools over one Redis index stand for two processes (each its own store client): the first
ingests a new file; the second, initialized before, finds it at once in every mode. Redis keeps no
records version, so the hierarchical tool's side indexes (exact phrases, section ids,
definitions) notice the change through the manifest (:data:`deckhand.retrieval.keeper.FRESHNESS_INTERVAL`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.plugins import PluginRegistry
from deckhand.retrieval import keeper
from deckhand.testing.tool_conformance import tool_config, write_corpus
from deckhand.tools import build_tool

pytestmark = [pytest.mark.redis, pytest.mark.slow]

QUAY = "# Quay\n\n## 7.3 Walls\n\nThe quay walls are inspected yearly by the harbour master.\n"


def _tool(tool_type: str, docs: Path, url: str) -> Any:
    database = DatabaseConfig(provider="redis", connection_string=url, index_name=f"fresh_{tool_type}")
    return build_tool(tool_config(tool_type, docs, database), base_dir=docs.parent, registry=PluginRegistry())


@pytest.mark.parametrize("tool_type", ["hierarchical_document", "vectorstore"])
def test_another_writers_ingest_is_searched_at_once(
    tool_type: str, tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(keeper, "FRESHNESS_INTERVAL", 0.0)  # look at every search (2 s apart by default)
    docs = write_corpus(tmp_path)
    writer, reader = _tool(tool_type, docs, redis_url), _tool(tool_type, docs, redis_url)
    try:
        writer.initialize_sync(force_ingest=True)
        reader.initialize_sync()
        (docs / "quay.md").write_text(QUAY)
        assert writer.initialize_sync().summary().startswith("1 ingested")
        if tool_type == "vectorstore":  # every search asks the store
            found = reader.search_results_sync("How often are the quay walls inspected?", 1)
            assert [r.source for r in found] == ["docs/quay.md"]
            return
        # Before: the reader's exact-match and section indexes were those of its start, so it found neither.
        for query in ['"inspected yearly by the harbour master"', "§ 7.3"]:
            found = reader.search_results_sync(query, 3, mode="exact")
            assert [(r.source, r.location) for r in found] == [("docs/quay.md", "Quay > 7.3 Walls")], query

        (docs / "quay.md").unlink()
        writer.initialize_sync()
        assert reader.search_results_sync('"inspected yearly by the harbour master"', 3, mode="exact") == []
    finally:
        writer.close()
        reader.close()
