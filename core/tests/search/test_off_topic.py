"""A question about nothing in the source gets no results, on both tools (issue 31), and one line saying so;
the questions the source answers keep their answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.config.vectorstore import VectorStoreToolConfig
from deckhand.retrieval.relevance import query_terms, words_covered
from deckhand.similarity import OFF_TOPIC_COSINE, off_topic_below
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import Metric

DEPLOY = """# Deploying the service

## Best practices

Run the service behind a reverse proxy and keep the worker count equal to the number of CPU cores.
The recipe below shows a systemd unit that restarts the service when it crashes.

## Configuration

Settings are read from environment variables prefixed with APP_, then from config.toml.
"""
TESTING = """# Testing

Write tests with pytest. The test client sends requests to the application without a running server,
and fixtures create a fresh database for every test.
"""
#: Off-topic: the keyword search finds "best" and "recipe" (hierarchical), the dense search a chunk at
#: about 0.2 (above the per-result noise level of 0.15, vectorstore with results: focused).
OFF_TOPIC = ("best pizza recipe in Naples", "how many worker bees live in a hive?")
#: The README example's security page is one 512-token chunk covering three sections for the vectorstore: the
#: first question scores about 0.16 against it there, under the off-topic level, and is kept because the chunk
#: holds most of its words.
SECURITY = Path(__file__).resolve().parents[3] / "examples" / "docs" / "security.md"
ANSWERED = {
    "how many workers should the service run?": "docs/deploy.md",
    "how do I test without a server?": "docs/testing.md",
    "Who answers vulnerability reports?": "docs/security.md",
}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    (folder / "testing.md").write_text(TESTING, encoding="utf-8")
    (folder / "security.md").write_text(SECURITY.read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def _tools(tmp_path: Path, docs: Path, **extra: Any) -> list[VectorStoreTool | HierarchicalDocumentTool]:
    common = {"source": str(docs), **extra}
    vec = VectorStoreTool(
        VectorStoreToolConfig.model_validate({"type": "vectorstore", "name": "vec", "results": "focused", **common}),
        base_dir=tmp_path,
    )
    hier = HierarchicalDocumentTool(
        HierarchicalDocumentToolConfig.model_validate({"type": "hierarchical_document", "name": "hier", **common}),
        base_dir=tmp_path,
    )
    for tool in (vec, hier):
        tool.initialize_sync()
    return [vec, hier]


def test_off_topic_questions_get_nothing_on_both_tools(tmp_path: Path, docs: Path, minilm: Any) -> None:
    for tool in _tools(tmp_path, docs):
        for question, source in ANSWERED.items():
            assert tool.search_results_sync(question)[0].source.endswith(source), (tool.config.name, question)
        assert {q: tool.search_results_sync(q) for q in OFF_TOPIC} == {q: [] for q in OFF_TOPIC}, tool.config.name
        for question in OFF_TOPIC:
            text = tool.search_text_sync(question)
            assert text.startswith("No relevant results: nothing indexed is about this query (best similarity 0.")
            level = OFF_TOPIC_COSINE["all-MiniLM-L6-v2"]
            assert "\n" not in text and text.endswith(f"under the embedding model's off-topic level {level:g})")


def test_ranked_results_and_an_explicit_floor_keep_the_contract(tmp_path: Path, docs: Path, minilm: Any) -> None:
    """results: ranked (the vectorstore's default) returns top_k for anything; min_similarity_score set
    explicitly is the only floor (the hierarchical tool then keeps keyword-supported results)."""
    ranked = VectorStoreTool(
        VectorStoreToolConfig.model_validate({"type": "vectorstore", "name": "ranked", "source": str(docs)}),
        base_dir=tmp_path,
    )
    ranked.initialize_sync()
    assert len(ranked.search_results_sync(OFF_TOPIC[0], 2)) == 2
    for tool in _tools(tmp_path, docs, min_similarity_score=0.0):
        assert tool.relevance_floor() is None
        assert tool.search_results_sync(OFF_TOPIC[1]), tool.config.name


def test_most_of_the_query_words_in_one_chunk_keep_an_answer() -> None:
    terms = query_terms("Who answers vulnerability reports?")
    assert terms == {"answer", "vulner", "report"}
    assert words_covered(terms, ["nothing here", "Reporting a vulnerability: the security team answers."])
    assert not words_covered(terms, ["We answer questions.", "Reports are weekly."])  # spread over two chunks
    assert not words_covered(query_terms("best pizza recipe in Naples"), ["Best practices: the recipe below"])
    assert not words_covered(query_terms("the of and"), ["the of and"])


def test_off_topic_levels_are_per_model_and_metric() -> None:
    assert off_topic_below("all-MiniLM-L6-v2", Metric.COSINE) == OFF_TOPIC_COSINE["all-MiniLM-L6-v2"]
    assert off_topic_below("another-model", Metric.COSINE) is None
    l2 = off_topic_below("all-MiniLM-L6-v2", Metric.L2)
    assert l2 is not None and 0 < l2 < 1
