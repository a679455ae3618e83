"""The two Weaviate collections of one deckhand collection, as arguments of ``client.collections.create``.

Records: our own vectors (``Configure.Vectors.self_provided``: no server-side vectorizer) in
one named vector ``default`` with an HNSW or FLAT index and the configured distance; the
content BM25-searchable (``word`` tokenization); source, record id and generation
filterable through exact-match (``field``) keys; chunk index filterable; metadata as JSON text;
the exact float32 vector as a blob (Weaviate normalises vectors for the cosine distance, so
the indexed vector is not always the one written).

Meta: the spec, one manifest entry per source and the replacement markers; no vectors.
"""

from __future__ import annotations

from typing import Any

from deckhand.api import Algorithm, CollectionSpec
from weaviate.classes.config import Configure, DataType, Property, Tokenization

from deckhand_weaviate.layout import Layout
from deckhand_weaviate.options import WeaviateOptions
from deckhand_weaviate.queries import DISTANCES, VECTOR_NAME


def _key(name: str) -> Property:
    """A text property matched exactly in filters, never searched."""
    return Property(
        name=name,
        data_type=DataType.TEXT,
        tokenization=Tokenization.FIELD,
        index_filterable=True,
        index_searchable=False,
    )


def _stored(name: str, data_type: DataType = DataType.TEXT) -> Property:
    """A property only returned, not indexed."""
    return Property(name=name, data_type=data_type, index_filterable=False, index_searchable=False)


def record_properties() -> list[Property]:
    return [
        _stored("record_id"),
        _key("record_key"),
        _stored("source"),
        _key("source_key"),
        Property(name="chunk_index", data_type=DataType.INT, index_filterable=True),
        Property(
            name="content",
            data_type=DataType.TEXT,
            tokenization=Tokenization.WORD,
            index_searchable=True,
            index_filterable=False,
        ),
        _stored("metadata"),
        Property(name="embedding", data_type=DataType.BLOB),
        _key("generation"),
    ]


def meta_properties() -> list[Property]:
    return [
        _key("kind"),
        _stored("key"),
        _stored("payload"),
        _stored("generation"),
        _stored("pending"),
        Property(name="retiring", data_type=DataType.TEXT_ARRAY, index_filterable=False, index_searchable=False),
        Property(name="busy", data_type=DataType.BOOL, index_filterable=True),
    ]


def vector_index(spec: CollectionSpec, options: WeaviateOptions) -> Any:
    """The records' vector index: HNSW (approximate) or FLAT (exact), with the spec's distance."""
    distance = DISTANCES[spec.metric]
    if spec.algorithm is Algorithm.HNSW:
        return Configure.VectorIndex.hnsw(
            distance_metric=distance,
            ef_construction=options.ef_construction,
            max_connections=options.max_connections,
            ef=options.ef,
        )
    return Configure.VectorIndex.flat(distance_metric=distance)


def records_collection(layout: Layout, spec: CollectionSpec, options: WeaviateOptions) -> dict[str, Any]:
    """Keyword arguments of ``client.collections.create`` for the records."""
    return {
        "name": layout.records,
        "description": f"deckhand records of {layout.collection!r} (index {layout.index_name!r})",
        "properties": record_properties(),
        "vector_config": Configure.Vectors.self_provided(
            name=VECTOR_NAME, vector_index_config=vector_index(spec, options)
        ),
    }


def meta_collection(layout: Layout) -> dict[str, Any]:
    """Keyword arguments of ``client.collections.create`` for the spec, manifest and markers."""
    return {
        "name": layout.meta,
        "description": f"deckhand spec and manifest of {layout.collection!r} (index {layout.index_name!r})",
        "properties": meta_properties(),
        "vector_config": Configure.Vectors.self_provided(vector_index_config=Configure.VectorIndex.none()),
    }
