"""Rerankers (``register.reranker``): a plugin kind in the schema, and what :func:`rerank` checks of a
reranker's scores. The ``llm`` reranker (deckhand-ai-openai) is tested in plugins/openai/tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from deckhand.bases import RerankerBase
from deckhand.config.schema import agent_schema
from deckhand.errors import RerankError
from deckhand.plugins import PluginRegistry
from deckhand.retrieval.rerank import rerank


def test_reranker_is_an_optional_plugin_kind_in_the_schema() -> None:
    registry = PluginRegistry()
    assert registry.resolve("reranker", "bert-cross-encoder").builtin
    for model in ("HierarchicalDocumentToolConfig", "VectorStoreToolConfig"):
        properties = agent_schema(registry)["$defs"][model]["properties"]
        field = properties["reranker"]
        assert {"type": "null"} in field["anyOf"] and field["default"] is None
        names = next(form["enum"] for form in field["anyOf"] if "enum" in form)
        assert "bert-cross-encoder" in names
        assert properties["rerank_top_n"]["default"] == 20


def test_rerank_checks_what_a_reranker_returns() -> None:
    class Fixed(RerankerBase):
        def __init__(self, scores: list[float]) -> None:
            self.scores = scores

        def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
            return self.scores

    assert rerank(Fixed([0.2, 0.9, 0.2]), "q", ["a", "b", "c"], str) == [("b", 0.9), ("a", 0.2), ("c", 0.2)]
    with pytest.raises(RerankError, match="returned 1 scores for 2 passages"):
        rerank(Fixed([0.5]), "q", ["a", "b"], str)
    with pytest.raises(RerankError, match=r"returned the score 3.0, outside \[0, 1\]"):
        rerank(Fixed([3.0, 0.1]), "q", ["a", "b"], str)
