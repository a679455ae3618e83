"""Scaffolding shared by deckhand's stores (:class:`OpenCollection`, the spec and size checks; :class:`ServerStore`,
a collection on a server reached by a URL), so each store's module holds only what its database needs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Self, TypeVar

import numpy as np
import numpy.typing as npt

from deckhand.bases import StoreBase
from deckhand.errors import DimensionMismatchError, StoreError
from deckhand.similarity import degenerate_row
from deckhand.types import CollectionSpec, Metric, Record, Vector

#: What a write of vectors of the wrong size most likely means, and the fix.
CHANGED_MODEL_HINT = " (was the embedding model changed? rerun with --force-ingest)"
#: What a query of the wrong size most likely means.
QUERY_MODEL_HINT = " (is the tool configured with the embedding model the index was built with?)"
#: ``database.index_name`` when the configuration gives none: the prefix of every collection's storage names.
DEFAULT_INDEX_NAME = "deckhand_vectors"

OptionsT = TypeVar("OptionsT")


class OpenCollection(StoreBase):
    """The collection a store serves (:attr:`collection`) and the spec it was opened with (``_spec``)."""

    collection: str
    _spec: CollectionSpec | None

    @property
    def spec(self) -> CollectionSpec:
        if self._spec is None:
            raise StoreError(f"collection {self.collection!r} is not open: call open() first")
        return self._spec

    def _query_vector(self, vector: Vector, *, hint: str = "") -> npt.NDArray[np.float32]:
        """The query ``vector`` as float32, once open; another size raises DimensionMismatchError (with ``hint``)."""
        spec = self.spec
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.size != spec.dimension:
            raise DimensionMismatchError(
                f"query has {query.size} dimensions; collection {self.collection!r} stores {spec.dimension}{hint}"
            )
        return query

    def _checked_vectors(self, records: Sequence[Record]) -> Vector:
        """The records' vectors as one float32 matrix, after checking each has the collection's dimension."""
        dim = self.spec.dimension
        for record in records:
            size = np.asarray(record.vector).size
            if size != dim:
                raise DimensionMismatchError(
                    f"record {record.id!r} has a {size}-dimensional vector; collection {self.collection!r} stores {dim}"
                )
        if not records:
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([np.asarray(r.vector, dtype=np.float32).reshape(-1) for r in records])


class ServerStore(OpenCollection, Generic[OptionsT]):
    """One collection on a database server, reached by ``url``.

    The constructor keeps the collection, the index name and the options (else the store's defaults), then
    calls :meth:`_connect`, which reaches the server or raises :class:`~deckhand.errors.StoreConnectionError`.
    """

    def __init__(
        self,
        url: str,
        collection: str = "default",
        *,
        index_name: str = DEFAULT_INDEX_NAME,
        options: OptionsT | None = None,
    ) -> None:
        self.collection = collection
        self.index_name = index_name
        self.options: OptionsT = options if options is not None else self._default_options()
        self._spec = None
        self._connect(url)

    #: The ``database.provider`` that selects the store, and an example of its URL (for from_config's message).
    provider: ClassVar[str] = ""
    url_example: ClassVar[str] = ""

    @classmethod
    def from_config(
        cls, config: Any, collection: str = "default", options: OptionsT | None = None, *, base_dir: Path | None = None
    ) -> Self:
        """The registered factory; ``options`` parsed from ``config.options`` when not given, ``base_dir`` unused."""
        if not config.connection_string:
            raise StoreError(
                f"database.connection_string is required for provider {cls.provider!r} (e.g. {cls.url_example})"
            )
        return cls(
            config.connection_string,
            collection,
            index_name=config.index_name,
            options=options if options is not None else cls._parse_options(dict(config.options or {})),
        )

    @classmethod
    def _parse_options(cls, options: dict[str, Any]) -> OptionsT:
        """``database.options`` validated by the store's options model (a one-line ConfigError when invalid)."""
        raise NotImplementedError

    def _default_options(self) -> OptionsT:
        """The options of a store built without any (the options model's defaults)."""
        raise NotImplementedError

    def _connect(self, url: str) -> None:
        """Reach the server at ``url`` (the rest of the constructor: clients, pools, checks)."""
        raise NotImplementedError

    def _record_vector(
        self, record: Record, dim: int, *, hint: str = "", finite_for: str | None = None
    ) -> npt.NDArray[np.float32]:
        """``record``'s vector as float32, checked before any write: a wrong size raises
        :class:`~deckhand.errors.DimensionMismatchError` (with ``hint``); with ``finite_for`` (the database's name),
        non-finite components, a norm float32 cannot take and, under COSINE, an all-zero vector raise StoreError."""
        exact = np.asarray(record.vector, dtype=np.float64).reshape(-1)
        if exact.size != dim:
            raise DimensionMismatchError(
                f"record {record.id!r} has a {exact.size}-dimensional vector; collection "
                f"{self.collection!r} stores {dim} dimensions{hint}"
            )
        if finite_for is not None and not np.all(np.isfinite(exact)):
            raise StoreError(f"record {record.id!r} has NaN or infinite vector components; {finite_for} rejects them")
        fault = degenerate_row(exact, zero=self.spec.metric is Metric.COSINE)
        if fault is not None and np.all(np.isfinite(exact)):
            raise StoreError(
                f"record {record.id!r} has a vector with {fault[1]}; {self.provider} store {self.collection!r} "
                "refuses it (check the embedding model or its server)"
            )
        return exact.astype(np.float32)
