"""The hierarchical_document tool end to end from agent.yaml on the default (sqlite) store."""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from click.testing import CliRunner
from deckhand.api import KeywordIndexBase, StoreCapability
from deckhand.cli.main import cli
from deckhand.config.loading import load_agent_config
from deckhand.hookspecs import hookimpl
from deckhand.plugins import get_registry
from deckhand.registration import Registrar
from deckhand.retrieval.side_indexes import indexed_text
from deckhand.tools import build_tool
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.types import Record


def _tool(project: Path, extra: str = "") -> HierarchicalDocumentTool:
    (project / "agent.yaml").write_text(
        "name: legal\ntools:\n  - name: act\n    type: hierarchical_document\n    source: ./docs\n"
        "    description: The Widget Safety Act\n" + extra
    )
    config = load_agent_config(project / "agent.yaml")
    tool = build_tool(config.tools[0], base_dir=project)
    assert isinstance(tool, HierarchicalDocumentTool)
    tool.initialize_sync()
    return tool


def test_section_query_definitions_references_and_location(legal_corpus: Path) -> None:
    tool = _tool(legal_corpus)
    assert tool.provider == "sqlite" and tool.keyword_strategy == "tantivy"
    results = tool.search_results_sync("§ 2.1")
    first = results[0]
    assert first.section_id == "2.1" and first.score == 1.0
    assert first.location == "Widget Safety Act > Part 2 Duties > 2.1 General duty"
    assert first.source == "docs/act.md"
    assert "Operator" in {d.term for d in first.definitions}
    assert [(r.section_id, r.location) for r in first.references] == [
        ("3.1", "Widget Safety Act > Part 3 Enforcement > 3.1 Penalties")
    ]
    assert set(first.modalities) <= {"semantic", "keyword", "exact"} and "exact" in first.modalities
    assert all(0.0 <= r.score <= 1.0 for r in results)
    assert [r.rank for r in results] == list(range(1, len(results) + 1))

    text = tool.search_text_sync("§ 2.1")
    assert text.startswith(f"Found {len(results)} result(s):")
    head = "[1] Score: 1.00 | Source: docs/act.md | Location: Widget Safety Act > Part 2 Duties > 2.1 General duty"
    assert head in text
    assert '  - "Operator": ' in text
    assert "  - 3.1: Widget Safety Act > Part 3 Enforcement > 3.1 Penalties" in text


def test_modes_and_hybrid_fusion(legal_corpus: Path) -> None:
    tool = _tool(legal_corpus)
    semantic = tool.search_results_sync("how should I water tomato seedlings", 3, mode="semantic")
    assert semantic[0].source == "docs/guide.md"
    assert set(semantic[0].modalities) == {"semantic"}
    keyword = tool.search_results_sync("fine of 500 units", 3, mode="keyword")
    assert keyword[0].section_id == "3.1" and set(keyword[0].modalities) == {"keyword"}
    exact = tool.search_results_sync('"force majeure"', 5, mode="exact")
    assert "Force majeure" in exact[0].metadata["defined_terms"]
    assert tool.search_results_sync("tomatoes compost", 5, mode="exact") == []
    hybrid = tool.search_results_sync("what fine is an operator liable to pay", 5)
    assert hybrid[0].section_id == "3.1"
    assert {"semantic", "keyword"} <= set(hybrid[0].modalities)
    # z-score fusion (the default): 1 for the best hit of every modality that found anything.
    assert 0.0 < hybrid[0].score <= 1.0
    assert all(a.score >= b.score for a, b in itertools.pairwise(hybrid))
    rrf = _tool(legal_corpus, "    fusion: rrf\n").search_results_sync("what fine is an operator liable to pay", 5)
    assert rrf[0].section_id == "3.1"
    # Normalised RRF: the best possible document scores 1; this one lacks an exact match.
    assert rrf[0].score <= (1.0 + 1.1) / (1.0 + 1.1 + 1.0) + 1e-6  # semantic 1 + keyword 1.1 of all three


def test_min_score_threshold_and_function_definition(legal_corpus: Path) -> None:
    # Under RRF a document scores 1 only when every weighted modality ranks it first.
    tool = _tool(legal_corpus, "    min_score: 0.99\n    fusion: rrf\n")
    assert tool.search_results_sync("widget factory safety") == []
    assert tool.search_text_sync("widget factory safety") == "No results above score threshold 0.99"
    assert tool.search_results_sync("§ 3.1")[0].section_id == "3.1"  # a direct section match scores 1
    definition = tool.function_definition()
    assert definition["name"] == "act" and definition["description"] == "The Widget Safety Act"
    with pytest.raises(ValueError, match="empty"):
        tool.search_results_sync("  ")


def test_reinitialise_rebuilds_the_indexes(legal_corpus: Path) -> None:
    tool = _tool(legal_corpus)
    assert tool.search_results_sync("tomatoes compost", 1, mode="keyword")[0].source == "docs/guide.md"
    (legal_corpus / "docs" / "guide.md").write_text("# Gardening Guide\n\n## Pests\n\nAphids dislike garlic spray.\n")
    report = tool.initialize_sync()
    assert "docs/guide.md" in report.ingested
    assert tool.search_results_sync("aphids garlic", 1, mode="keyword")[0].source == "docs/guide.md"
    assert tool.search_results_sync("tomatoes compost", 5, mode="keyword") == []


def test_context_is_embedded_and_keyword_indexed(legal_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = _tool(legal_corpus, "    relative_cutoff: 0\n")  # every keyword match, however weak
    assert tool.index.store is not None
    record = next(r for r in tool.index.store.iter_records() if r.metadata.get("section_id") == "2.2")
    assert record.metadata["context"].startswith("Widget Safety Act > Part 2 Duties")
    assert "Part 2 Duties" in indexed_text(record) and record.content in indexed_text(record)
    # Only the heading chain reaches the keyword index: "duties" is not in 2.2's content.
    hits = tool.search_results_sync("duties", 10, mode="keyword")
    assert any(h.section_id == "2.2" for h in hits)
    # A fresh index: the persistent default store would keep the records ingested with context
    # (only a model change triggers re-ingestion; other settings need --force-ingest).
    monkeypatch.setenv("DECKHAND_HOME", str(legal_corpus / ".state-off"))
    off = _tool(legal_corpus, "    contextual_embeddings: false\n")
    assert off.index.store is not None
    assert all("context" not in r.metadata for r in off.index.store.iter_records())


def test_indexed_text_does_not_repeat_what_the_content_has() -> None:
    record = Record(
        "x",
        "s",
        0,
        "# Title\n\nBody about cats.",
        np.zeros(2, dtype=np.float32),
        {"context": "Title", "parent_chain": ["Title"], "section_id": None, "defined_terms": ["Cat"]},
    )
    assert indexed_text(record) == "# Title\n\nBody about cats."
    record.metadata["context"] = "Zoo > Title"
    assert indexed_text(record) == "Zoo > Title\n# Title\n\nBody about cats."


class _NeedsFullText(KeywordIndexBase):
    """A keyword strategy that needs the store's own full-text search (as ``native`` does), declared on the class."""

    requires: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.KEYWORD_SEARCH})

    @classmethod
    def from_options(cls, store: Any, cache_path: Any, options: None) -> _NeedsFullText:
        raise AssertionError("never built on a store without keyword_search")

    def build(self, docs: Any) -> None: ...

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return []


class _FullTextOnly:
    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.keyword_strategy("fulltext", _NeedsFullText.from_options, description="needs keyword_search")


def test_a_strategy_the_store_cannot_serve_warns_and_uses_bm25(
    legal_corpus: Path, caplog: pytest.LogCaptureFixture, fresh_registry: None
) -> None:
    get_registry().register_plugin(_FullTextOnly(), "fulltext-plugin")
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        tool = _tool(legal_corpus, "    keyword_strategy: fulltext\n")
    assert tool.keyword_strategy == "bm25"
    warnings = [r.getMessage() for r in caplog.records if "keyword_strategy fulltext" in r.getMessage()]
    assert warnings == [
        "tool act: keyword_strategy fulltext: store 'sqlite' does not implement NativeKeywordSearch; using bm25"
    ]
    assert tool.search_results_sync("fine of 500 units", 3, mode="keyword")  # bm25 answers


def test_cli_search_json_and_text(legal_corpus: Path) -> None:
    (legal_corpus / "agent.yaml").write_text(
        "tools:\n  - name: act\n    type: hierarchical_document\n    source: ./docs\n"
    )
    runner = CliRunner()
    config = str(legal_corpus / "agent.yaml")
    result = runner.invoke(cli, ["-q", "search", "--config", config, "--json", "§ 3.1"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["act"][0]["section_id"] == "3.1"
    assert payload["act"][0]["modalities"]["exact"]["rank"] == 1
    result = runner.invoke(cli, ["-q", "search", "--config", config, "-k", "2", "force majeure"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Found 2 result(s):")
    assert "Location: " in result.output
