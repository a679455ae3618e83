"""Keyword strategy ``native`` against real servers — Redis (RediSearch BM25) and PostgreSQL
(tsvector + ts_rank_cd) — through the hierarchical_document tool, from configuration to results."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool

PROVIDERS = [
    pytest.param("redis", "deckhand_redis", "redis_url", marks=pytest.mark.redis, id="redis"),
    pytest.param("postgres", "deckhand_postgres", "postgres_url", marks=pytest.mark.postgres, id="postgres"),
]


@pytest.mark.parametrize(("provider", "module", "url_fixture"), PROVIDERS)
def test_tool_ranks_keywords_with_the_store(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    provider: str,
    module: str,
    url_fixture: str,
) -> None:
    pytest.importorskip(module)
    url = request.getfixturevalue(url_fixture)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(
        "# Rules\n\n## 1 Boats\n\nSailing boats need wind and a keel.\n\n"
        "## 2 Trains\n\nTrains need rails. See section 1.\n"
    )
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / ".state"))
    config = HierarchicalDocumentToolConfig.model_validate(
        {
            "type": "hierarchical_document",
            "name": f"native_{provider}_test",
            "source": str(docs),
            "keyword_strategy": "native",
            "database": {"provider": provider, "connection_string": url, "index_name": "nh_test"},
        }
    )
    tool = HierarchicalDocumentTool(config, base_dir=tmp_path)
    tool.initialize_sync(force_ingest=True)
    try:
        assert tool.provider == provider and tool.keyword_strategy == "native"
        keyword = tool.search_results_sync("rails", 3, mode="keyword")
        assert keyword and keyword[0].content.endswith("See section 1.")
        assert 0 < keyword[0].modalities["keyword"].score < 1
        hybrid = tool.search_results_sync("keel", 3)
        assert hybrid[0].section_id == "1" and {"semantic", "keyword"} <= set(hybrid[0].modalities)
        assert tool.search_results_sync("§ 1", 3)[0].section_id == "1"
        trains = tool.search_results_sync("§ 2", 1)[0]
        assert [(r.section_id, r.location) for r in trains.references] == [("1", "Rules > 1 Boats")]
        # A filter is applied by the store's own full text (search_filtered), not after it.
        (docs / "b.md").write_text("---\nline: freight\n---\n# Freight\n\nFreight trains need rails too.\n")
        tool.initialize_sync()
        only_b = tool.search_results_sync("rails", 5, mode="keyword", filter=["line=freight"])
        assert [r.source.rsplit("/", 1)[-1] for r in only_b] == ["b.md"]
        assert tool.search_results_sync("rails", 5, mode="keyword", filter={"path": "a.md"})[0].source.endswith("a.md")
    finally:
        if tool.index.store is not None:
            tool.index.store.drop()
        tool.close()
