"""Plain data passed between loaders, chunkers, embedders and stores.

Pydantic models live at the edges (configuration, tool I/O); inside the pipeline these
small dataclasses are cheaper and easier to reason about.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


class Metric(enum.StrEnum):
    """Distance metrics every store supports; scores are defined in :mod:`deckhand.scoring`."""

    COSINE = "COSINE"
    L2 = "L2"
    IP = "IP"


class Algorithm(enum.StrEnum):
    """Index algorithms: FLAT is exact, HNSW approximate."""

    HNSW = "HNSW"
    FLAT = "FLAT"


@dataclass(frozen=True)
class Document:
    """A source file converted to text (markdown where the loader can produce it)."""

    source: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadedText:
    """What a loader may return instead of a string: the text and the document's metadata.

    ``metadata`` (JSON-like: strings, numbers, booleans, lists, objects) is copied into every
    chunk of the file, where search filters can select on it.
    """

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document to embed.

    ``embed_text`` is what is embedded and keyword-indexed (it may carry context such as
    the heading chain); ``content`` is what results show.
    """

    source: str
    index: int
    content: str
    embed_text: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """The contract's record id: ``{source_path}_chunk_{chunk_index}``."""
        return record_id(self.source, self.index)

    @property
    def text_for_embedding(self) -> str:
        return self.embed_text if self.embed_text is not None else self.content


def record_id(source: str, index: int) -> str:
    """Record id format shared by every store."""
    return f"{source}_chunk_{index}"


@dataclass
class Record:
    """A chunk as stored: content, its vector and metadata."""

    id: str
    source: str
    chunk_index: int
    content: str
    vector: Vector
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchHit:
    """A store's answer: the record and its similarity score in [0, 1]."""

    record: Record
    score: float


@dataclass(frozen=True)
class FileState:
    """What the ingestion manifest remembers about one source file."""

    source: str
    mtime: float
    size: int
    sha256: str
    model: str
    chunk_count: int


@dataclass(frozen=True)
class CollectionSpec:
    """What a store needs to create or open a collection."""

    name: str
    dimension: int
    embedding_model: str
    metric: Metric = Metric.COSINE
    algorithm: Algorithm = Algorithm.HNSW
