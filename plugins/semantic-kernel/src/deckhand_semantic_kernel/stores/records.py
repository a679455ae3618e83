"""The record layout of a bridged collection, as a Semantic Kernel definition, and the conversions.

Keys are UUIDv5 of deckhand's record id (``<source>_chunk_<n>``): Qdrant accepts only UUIDs or
integers as point ids, Azure AI Search only letters, digits, ``_``, ``-`` and ``=`` in keys, and
a UUID is valid everywhere. The record id itself is kept in ``record_id``. Metadata is stored as
JSON text (Chroma's metadata values must be scalars).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np
from deckhand.api import Record

from deckhand_semantic_kernel.stores.query import SOURCE_KEY_FIELD, source_key

_NAMESPACE = uuid.UUID("7d1c2e36-5f0b-4a8e-9a53-0d3c6a9b1e42")
VECTOR_FIELD = "vector"


def storage_key(record_id: str) -> str:
    """The key a record is stored under (deterministic, a UUID)."""
    return str(uuid.uuid5(_NAMESPACE, record_id))


def definition(dimension: int, distance_function: str, index_kind: str) -> Any:
    """The Semantic Kernel collection definition of records with ``dimension``-long vectors."""
    from semantic_kernel.data.vector import (
        DistanceFunction,
        IndexKind,
        VectorStoreCollectionDefinition,
        VectorStoreField,
    )

    return VectorStoreCollectionDefinition(
        fields=[
            VectorStoreField("key", name="key", type="str"),
            VectorStoreField("data", name="record_id", type="str"),
            VectorStoreField("data", name="source", type="str"),
            # Filters run on this field only: indexed (Azure AI Search filters need "filterable").
            VectorStoreField("data", name=SOURCE_KEY_FIELD, type="str", is_indexed=True),
            VectorStoreField("data", name="chunk_index", type="int"),
            VectorStoreField("data", name="content", type="str"),
            VectorStoreField("data", name="metadata", type="str"),
            VectorStoreField(
                "vector",
                name=VECTOR_FIELD,
                type="float",
                dimensions=dimension,
                distance_function=DistanceFunction(distance_function),
                index_kind=IndexKind(index_kind),
            ),
        ]
    )


def to_store(record: Record, *, normalise: bool = False) -> dict[str, Any]:
    """A deckhand record as the dict Semantic Kernel upserts."""
    vector = np.asarray(record.vector, dtype=np.float32)
    if normalise:
        norm = float(np.linalg.norm(vector))
        vector = vector / norm if norm else vector
    return {
        "key": storage_key(record.id),
        "record_id": record.id,
        "source": record.source,
        SOURCE_KEY_FIELD: source_key(record.source),
        "chunk_index": int(record.chunk_index),
        "content": record.content,
        "metadata": json.dumps(record.metadata, ensure_ascii=False, sort_keys=True),
        VECTOR_FIELD: [float(v) for v in vector],
    }


def from_store(data: dict[str, Any]) -> Record:
    """A record read back (``get``/``search``); without a vector when the read did not ask for it."""
    vector = data.get(VECTOR_FIELD)
    return Record(
        id=str(data["record_id"]),
        source=str(data["source"]),
        chunk_index=int(data["chunk_index"]),
        content=str(data.get("content") or ""),
        vector=np.asarray(vector if vector is not None else [], dtype=np.float32),
        metadata=json.loads(data.get("metadata") or "{}"),
    )
