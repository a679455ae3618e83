"""The collections the store creates, as weaviate-client serialises them for the server, and their names."""

from __future__ import annotations

import re
from typing import Any

import pytest
from deckhand.types import Algorithm, CollectionSpec, Metric
from deckhand_weaviate.layout import Layout, entry_uuid, record_uuid, upsert_generation
from deckhand_weaviate.options import WeaviateOptions
from deckhand_weaviate.schema import meta_collection, records_collection
from weaviate.collections.classes.config import _CollectionConfigCreate

NAME = re.compile(r"^[A-Z][_0-9A-Za-z]*$")


def _wire(arguments: dict[str, Any]) -> dict[str, Any]:
    """What ``client.collections.create(**arguments)`` sends (the client's own model and serialisation)."""
    wire: dict[str, Any] = _CollectionConfigCreate(**arguments)._to_dict()
    return wire


@pytest.mark.parametrize("metric", list(Metric))
@pytest.mark.parametrize("algorithm", list(Algorithm))
def test_records_collection_has_our_vectors_and_the_configured_index(metric: Metric, algorithm: Algorithm) -> None:
    spec = CollectionSpec("kb", 384, "minilm", metric, algorithm)
    options = WeaviateOptions(ef_construction=200, max_connections=48, ef=96)
    wire = _wire(records_collection(Layout("deckhand_vectors", "kb"), spec, options))
    vector = wire["vectorConfig"]["default"]
    assert vector["vectorizer"] == {"none": {}}  # no server-side vectorizer: deckhand sends the vectors
    assert "vectorizer" not in wire and "moduleConfig" not in wire
    distance = {Metric.COSINE: "cosine", Metric.IP: "dot", Metric.L2: "l2-squared"}[metric]
    assert vector["vectorIndexConfig"]["distance"] == distance
    if algorithm is Algorithm.HNSW:
        assert vector["vectorIndexType"] == "hnsw"
        assert (
            vector["vectorIndexConfig"] | {"efConstruction": 200, "maxConnections": 48, "ef": 96}
            == vector["vectorIndexConfig"]
        )
    else:
        assert vector["vectorIndexType"] == "flat"


def test_record_properties() -> None:
    spec = CollectionSpec("kb", 8, "m", Metric.COSINE, Algorithm.FLAT)
    props = {p["name"]: p for p in _wire(records_collection(Layout("i", "kb"), spec, WeaviateOptions()))["properties"]}
    assert set(props) == {
        "record_id", "record_key", "source", "source_key", "chunk_index", "content", "metadata", "embedding",
        "generation",
    }  # fmt: skip
    assert props["content"]["dataType"] == ["text"] and props["content"]["tokenization"] == "word"
    assert props["content"]["indexSearchable"] is True
    searchable = [name for name, p in props.items() if p.get("indexSearchable")]
    assert searchable == ["content"]  # BM25 ranks the content only
    for key in ("record_key", "source_key", "generation"):
        assert props[key]["tokenization"] == "field" and props[key]["indexFilterable"] is True
    assert props["chunk_index"]["dataType"] == ["int"] and props["embedding"]["dataType"] == ["blob"]


def test_meta_collection_holds_no_vectors() -> None:
    wire = _wire(meta_collection(Layout("i", "kb")))
    assert wire["vectorConfig"]["default"]["vectorIndexConfig"] == {"skip": True}
    props = {p["name"]: p for p in wire["properties"]}
    assert props["busy"]["dataType"] == ["boolean"] and props["busy"]["indexFilterable"] is True
    assert props["retiring"]["dataType"] == ["text[]"]


def test_names_are_valid_and_keep_collections_apart() -> None:
    pairs = [("deckhand_vectors", "kb"), ("deckhand_vectors", "KB"), ("other", "kb"), ("a-b", "c"), ("a_b", "c")]
    names = [Layout(i, c).records for i, c in pairs]
    assert all(NAME.match(n) and NAME.match(n + "_Meta") for n in names)
    assert len({n.lower() for n in names}) == len(names)  # Weaviate compares names case-insensitively
    long = Layout("x" * 200, "y" * 200)
    assert len(long.meta) < 255 and NAME.match(long.meta)
    assert Layout("deckhand_vectors", "kb").meta == Layout("deckhand_vectors", "kb").records + "_Meta"


def test_object_ids_are_stable_and_distinct() -> None:
    assert record_uuid("a.md#0", "g1") == record_uuid("a.md#0", "g1") != record_uuid("a.md#0", "g2")
    assert entry_uuid("a.md") != entry_uuid("a.md ") and entry_uuid("a.md") == entry_uuid("a.md")
    assert upsert_generation("a.md").startswith("u") and upsert_generation("a.md") != upsert_generation("b.md")
