"""The requests the store sends, built by weaviate-client itself without a server.

The keyword arguments from :mod:`deckhand_weaviate.queries` go through the client's public
``collection.query`` methods; only the transport is replaced (``grpc_search`` captures the
protobuf ``SearchRequest`` instead of sending it), so what is checked is what would go on the
wire. These are unit tests of the request building, not integration tests: the live kits run
in ``nox -s tests-weaviate`` against ``$WEAVIATE_URL``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import weaviate
from deckhand_weaviate import queries
from deckhand_weaviate.layout import digest
from weaviate.classes.query import Filter
from weaviate.connect import ConnectionParams
from weaviate.util import _ServerVersion


class _Captured(Exception):
    """Raised by the replaced transport once the request is built."""


@pytest.fixture
def capture() -> Iterator[Any]:
    client = weaviate.WeaviateClient(
        connection_params=ConnectionParams.from_params("127.0.0.1", 8080, False, "127.0.0.1", 50051, False),
        skip_init_checks=True,
    )
    connection: Any = client._connection
    connection._weaviate_version = _ServerVersion(1, 32, 0)
    sent: list[Any] = []

    def grpc_search(request: Any) -> Any:
        sent.append(request)
        raise _Captured

    connection.grpc_search = grpc_search
    collection = client.collections.use("Deckhand_docs_kb_12345678")

    def run(method: str, kwargs: dict[str, Any]) -> Any:
        with pytest.raises(_Captured):
            getattr(collection.query, method)(**kwargs)
        return sent.pop()

    yield run
    client.close()


VECTOR = np.array([0.25, -0.5, 1.0, 0.0], dtype=np.float32)


def _floats(raw: bytes) -> list[float]:
    return np.frombuffer(raw, dtype=np.float32).tolist()


def test_near_vector_request(capture: Any) -> None:
    request = capture("near_vector", queries.near_vector_request(VECTOR, 7, queries.where()))
    assert request.collection == "Deckhand_docs_kb_12345678"
    assert request.limit == 7
    assert [_floats(v.vector_bytes) for v in request.near_vector.vectors] == [VECTOR.tolist()]
    assert list(request.near_vector.targets.target_vectors) == ["default"]
    assert request.metadata.distance and not request.metadata.score
    assert set(request.properties.non_ref_properties) == set(queries.RETURN_PROPERTIES)
    assert not request.HasField("filters")


def test_bm25_request_searches_only_the_content_as_plain_text(capture: Any) -> None:
    text = 'tide* AND (moon) -"spring" @content:x'
    request = capture("bm25", queries.bm25_request(text, 5, queries.where()))
    assert request.bm25_search.query == text
    assert list(request.bm25_search.properties) == ["content"]
    assert request.limit == 5 and request.metadata.score


@pytest.mark.parametrize("fusion", ["relative_score", "ranked"])
def test_hybrid_request_carries_our_vector_alpha_and_fusion(capture: Any, fusion: str) -> None:
    request = capture(
        "hybrid", queries.hybrid_request("spring tides", VECTOR, 9, queries.where(), alpha=0.3, fusion=fusion)
    )
    hybrid = request.hybrid_search
    assert hybrid.query == "spring tides" and list(hybrid.properties) == ["content"]
    assert hybrid.alpha == pytest.approx(0.3)
    expected = {"relative_score": "FUSION_TYPE_RELATIVE_SCORE", "ranked": "FUSION_TYPE_RANKED"}[fusion]
    assert type(hybrid).FusionType.Name(hybrid.fusion_type) == expected
    sent = [_floats(v.vector_bytes) for v in hybrid.vectors] or [_floats(hybrid.vector_bytes)]
    assert sent == [VECTOR.tolist()]
    assert list(hybrid.targets.target_vectors) == ["default"]
    assert request.limit == 9 and request.metadata.score


def test_filters_hide_generations_and_keep_sources(capture: Any) -> None:
    where = queries.where(["gen-b", "gen-a"], ["docs/a b.md", "docs/ü,|{}.md"])
    request = capture("near_vector", queries.near_vector_request(VECTOR, 3, where))
    top = request.filters
    assert type(top).Operator.Name(top.operator) == "OPERATOR_AND"
    parts = list(top.filters)
    assert [(p.target.property, p.value_text) for p in parts[:2]] == [("generation", "gen-a"), ("generation", "gen-b")]
    assert all(type(p).Operator.Name(p.operator) == "OPERATOR_NOT_EQUAL" for p in parts[:2])
    assert parts[2].target.property == "source_key"
    assert type(parts[2]).Operator.Name(parts[2].operator) == "OPERATOR_CONTAINS_ANY"
    assert set(parts[2].value_text_array.values) == {digest("docs/a b.md"), digest("docs/ü,|{}.md")}


def test_one_source_is_an_equality_and_nothing_is_no_filter(capture: Any) -> None:
    request = capture("bm25", queries.bm25_request("tides", 3, queries.where(sources=[" a.md"])))
    assert request.filters.target.property == "source_key"
    assert request.filters.value_text == digest(" a.md") != digest("a.md")
    assert queries.where() is None
    with pytest.raises(ValueError, match=r"sources=\[\] matches nothing"):
        queries.where(sources=[])


def test_a_further_condition_slots_in(capture: Any) -> None:
    """The slot deckhand's query filters will use: any client Filter, AND-ed with the store's own."""
    extra = Filter.by_property("chunk_index").less_than(3)
    request = capture(
        "hybrid",
        queries.hybrid_request("x", VECTOR, 2, queries.where(["g"], extra=extra), alpha=0.5, fusion="ranked"),
    )
    parts = list(request.filters.filters)
    assert [p.target.property for p in parts] == ["generation", "chunk_index"]
    assert parts[1].value_int == 3


def test_queries_of_only_punctuation_are_not_sent() -> None:
    assert not queries.has_words("?!* -- ()")
    assert queries.has_words("§ 4.2") and queries.has_words("Gezeiten")
