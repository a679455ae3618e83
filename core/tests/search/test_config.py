"""Validation of ``type: hierarchical_document`` in agent.yaml: defaults and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig, SearchMode
from deckhand.config.loading import load_agent_config
from deckhand.errors import ConfigError
from deckhand.plugins import get_registry


def _write(tmp_path: Path, tool: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(f"name: a\ntools:\n  - name: docs\n    type: hierarchical_document\n    source: ./docs\n{tool}")
    return path


def test_defaults(tmp_path: Path) -> None:
    config = load_agent_config(_write(tmp_path, ""))
    tool = config.tools[0]
    assert isinstance(tool, HierarchicalDocumentToolConfig)
    assert tool.source == str(tmp_path / "docs")
    assert (tool.max_chunk_tokens, tool.top_k, tool.rrf_k) == (800, 10, 60)
    assert tool.search_mode is SearchMode.HYBRID
    assert tool.keyword_strategy.name == "auto" and not tool.keyword_strategy.options
    assert tool.chunker.name == "structure" and not tool.chunker.options
    assert tool.contextual_embeddings.enabled and tool.contextual_embeddings.generator == "structural"
    assert tool.weights == {"semantic": 1.0, "keyword": 1.1, "exact": 1.0}


def test_full_configuration(tmp_path: Path) -> None:
    yaml = """    search_mode: keyword
    semantic_weight: 0.5
    keyword_weight: 2
    exact_weight: 0
    rrf_k: 20
    top_k: 100
    min_score: 0.25
    max_chunk_tokens: 400
    chunk_overlap: 40
    keyword_strategy: bm25
    bm25_k1: 1.2
    bm25_b: 0.75
    contextual_embeddings:
      generator: structural
      options: {path: true}
    database: {provider: in-memory}
"""
    tool = load_agent_config(_write(tmp_path, yaml)).tools[0]
    assert isinstance(tool, HierarchicalDocumentToolConfig)
    assert tool.weights == {"semantic": 0.5, "keyword": 2.0, "exact": 0.0}
    assert tool.contextual_embeddings.options["path"] is True
    assert tool.keyword_strategy.name == "bm25"
    # bm25_k1 and bm25_b are the bm25 strategy's k1 and b, validated with its options model
    assert tool.keyword_component(get_registry())[1] == {"k1": 1.2, "b": 0.75}
    assert tool.chunker_component(get_registry())[1] == {"max_chunk_tokens": 400, "chunk_overlap": 40}
    off = load_agent_config(_write(tmp_path, "    contextual_embeddings: false\n")).tools[0]
    assert isinstance(off, HierarchicalDocumentToolConfig) and not off.contextual_embeddings.enabled


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        (
            "    semantic_weight: 0\n    keyword_weight: 0\n    exact_weight: 0\n",
            "tools[0]: semantic_weight, keyword_weight and exact_weight are all 0",
        ),
        ("    keyword_weight: -1\n", "tools[0].keyword_weight: Input should be greater than or equal to 0"),
        ("    top_k: 101\n", "tools[0].top_k: Input should be less than or equal to 100"),
        ("    search_mode: fuzzy\n", "search_mode: Input should be 'semantic', 'keyword', 'exact' or 'hybrid'"),
        (
            "    keyword_strategy: lucene\n",
            "tools[0].keyword_strategy: no keyword strategy plugin provides 'lucene'; install a plugin that ",
        ),
        ("    min_score: 1.5\n", "tools[0].min_score: Input should be less than or equal to 1"),
        ("    chunk_overlap: 800\n", "chunk_overlap (800) must be smaller than max_chunk_tokens (800)"),
        ("    rrf_k: -5\n", "tools[0].rrf_k: Input should be greater than or equal to 0"),
        ("    bm25_b: 2\n", "tools[0].bm25_b: Input should be less than or equal to 1"),
        ("    chunk_size: 512\n", "tools[0].chunk_size: unknown field"),
        (
            "    contextual_embeddings: {generator: structural, model: x}\n",
            "tools[0].contextual_embeddings.model: unknown",
        ),
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, yaml: str, message: str) -> None:
    path = _write(tmp_path, yaml)
    with pytest.raises(ConfigError) as info:
        load_agent_config(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ")
    assert message in text


def test_weights_may_be_zero_outside_hybrid(tmp_path: Path) -> None:
    yaml = "    search_mode: semantic\n    semantic_weight: 0\n    keyword_weight: 0\n    exact_weight: 0\n"
    tool = load_agent_config(_write(tmp_path, yaml)).tools[0]
    assert isinstance(tool, HierarchicalDocumentToolConfig) and tool.search_mode is SearchMode.SEMANTIC
