"""A deckhand :class:`~deckhand.api.StoreBase` over a Semantic Kernel vector store collection.

Each bridged provider (:mod:`deckhand_semantic_kernel.stores.connectors`) subclasses
:class:`BridgeStore` and says how to reach its database (``_session``), which SK collection class
it uses (``connector``) and what that class is given to reach the database
(``_connection_arguments``), and what its connector needs worked around. The rest is shared:

* records are stored with UUIDv5 keys (:mod:`.records`), scores converted per connector and
  metric by one table (:mod:`.scores`), searches built in one place (:mod:`.query`);
* the spec, the manifest and every record id live in one catalog record of a side collection
  (:mod:`.catalog`), read by key, so nothing depends on listing or filtered ``get``;
* ``replace_source`` checks every vector before writing, lists the new ids in the catalog,
  upserts, deletes the source's old records that the new version does not overwrite, and only
  then records the new manifest entry: a failure leaves the previous entry in the manifest, so
  the next ingest redoes the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from deckhand.api import (
    Algorithm,
    CollectionSpec,
    ConfigError,
    DatabaseConfig,
    DimensionMismatchError,
    FileState,
    Filter,
    Metric,
    Record,
    SearchHit,
    StoreBase,
    StoreCapability,
    StoreError,
    Vector,
    require_filters,
)

from deckhand_semantic_kernel.stores import records as layout
from deckhand_semantic_kernel.stores import runner
from deckhand_semantic_kernel.stores.catalog import CATALOG_KEY, Catalog
from deckhand_semantic_kernel.stores.query import FilterStyle, build_search
from deckhand_semantic_kernel.stores.scores import SCORE_RULES, ScoreRule, to_score


@dataclass(frozen=True)
class NameRule:
    """What a database accepts as a collection name."""

    #: Lower-case only, ``-`` instead of ``_`` (Azure AI Search, Pinecone).
    lower_dash: bool = False
    max_length: int = 128


def storage_name(index_name: str, collection: str, suffix: str, rule: NameRule) -> str:
    """The database's name for ``collection`` under ``index_name`` (deterministic, valid for ``rule``)."""
    name = f"dh-{index_name}-{collection}{suffix}"
    if rule.lower_dash:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = re.sub(r"[^a-z0-9-]", "-", name.lower())
        name = f"{name[: rule.max_length - 9]}-{digest}"
    elif len(name) > rule.max_length:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[: rule.max_length - 9]}-{digest}"
    return name


class BridgeStore(StoreBase):
    """Shared implementation; see the module docstring. Subclasses set the class attributes and hooks."""

    #: The provider name (``database.provider``) and the key of :data:`SCORE_RULES`.
    provider: ClassVar[str] = ""
    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()
    filter_style: ClassVar[FilterStyle] = FilterStyle.EQUALITIES
    #: False where the connector's "upsert" does not replace an existing key (Chroma: it calls add()).
    upsert_overwrites: ClassVar[bool] = True
    #: The algorithms the store accepts and the SK index kind each is created with (``IndexKind`` values).
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.HNSW: "hnsw", Algorithm.FLAT: "flat"}
    name_rule: ClassVar[NameRule] = NameRule()
    #: The Semantic Kernel collection class, ``"module:Class"``: imported only when a collection is built, so
    #: Semantic Kernel and the connector's own packages are loaded by the stores that use them.
    connector: ClassVar[str] = ""

    def __init__(self, config: DatabaseConfig, collection: str, *, batch_size: int = 500) -> None:
        self.config = config
        self.collection = collection
        self.batch_size = batch_size
        self._data_name = storage_name(config.index_name, collection, "", self.name_rule)
        self._catalog_name = storage_name(config.index_name, collection, "-catalog", self.name_rule)
        self._spec: CollectionSpec | None = None
        #: layout → (the client it was built on, the SK collection).
        self._collections: dict[str, tuple[Any, Any]] = {}

    # -- hooks ---------------------------------------------------------------------------------
    def _session(self, *, write: bool) -> contextlib.AbstractContextManager[Any]:
        """Hold the database for one store operation; yields what ``_build_collection`` needs."""
        raise NotImplementedError

    def _connection_arguments(self, handle: Any) -> dict[str, Any]:
        """How the :attr:`connector` class reaches the database: by default the client ``_session`` yielded."""
        return {"client": handle}

    def _collection_name(self, name: str) -> str:
        """The name the connector is given for the storage name ``name`` (the same, unless overridden)."""
        return name

    # -- shared --------------------------------------------------------------------------------
    def _build_collection(self, handle: Any, name: str, definition: Any) -> Any:
        """The SK collection ``name`` with ``definition``, reached through ``handle``: a :attr:`connector`."""
        module, _, class_name = self.connector.partition(":")
        collection_class = getattr(importlib.import_module(module), class_name)
        return collection_class(
            record_type=dict,
            definition=definition,
            collection_name=self._collection_name(name),
            **self._connection_arguments(handle),
        )

    def _search_extra(self, spec: CollectionSpec) -> dict[str, Any]:
        """Connector-specific keyword arguments of ``search`` (exact search, HNSW ef)."""
        return {}

    def _create_arguments(self, spec: CollectionSpec) -> dict[str, Any]:
        """Connector-specific keyword arguments of ``ensure_collection_exists`` for the data collection."""
        return {}

    def _after_create(self, handle: Any, name: str) -> None:
        """Run once after the data collection is created (e.g. a payload index)."""

    def _release(self) -> None:
        """Release what the store holds (``close``)."""

    # -- helpers -------------------------------------------------------------------------------
    def _rule(self, spec: CollectionSpec) -> ScoreRule:
        rules = SCORE_RULES[self.provider]
        if spec.metric not in rules:
            known = ", ".join(m.value for m in rules)
            raise ConfigError(f"database.distance_metric: {self.provider} has no {spec.metric.value} (use {known})")
        return rules[spec.metric]

    def _data(self, handle: Any, spec: CollectionSpec) -> Any:
        rule = self._rule(spec)
        index_kind = self.index_kinds.get(spec.algorithm, next(iter(self.index_kinds.values())))
        return self._cached(handle, self._data_name, spec.dimension, rule.distance_function, index_kind)

    def _catalog(self, handle: Any) -> Any:
        rule = SCORE_RULES[self.provider][Metric.COSINE]
        index_kind = next(iter(self.index_kinds.values()))
        return self._cached(handle, self._catalog_name, 1, rule.distance_function, index_kind)

    def _cached(self, handle: Any, name: str, dimension: int, distance_function: str, index_kind: str) -> Any:
        """The SK collection object for this layout, rebuilt when the engine's client was reopened."""
        key = f"{name}/{dimension}/{distance_function}/{index_kind}"
        cached = self._collections.get(key)
        if cached is None or cached[0] is not handle:
            definition = layout.definition(dimension, distance_function, index_kind)
            cached = self._collections[key] = (handle, self._build_collection(handle, name, definition))
        return cached[1]

    def _spec_or_fail(self) -> CollectionSpec:
        if self._spec is None:
            raise StoreError(f"{self.provider} collection {self.collection!r} is used before open()")
        return self._spec

    def _check_dimension(self, vectors: Sequence[Any], spec: CollectionSpec, what: str) -> None:
        for vector in vectors:
            length = int(np.asarray(vector).shape[-1]) if np.asarray(vector).ndim else 0
            if length != spec.dimension:
                raise DimensionMismatchError(
                    f"{what} has {length} dimensions; collection {self.collection!r} holds "
                    f"{spec.dimension}-dimensional vectors (re-ingest with --force-ingest after changing the model)"
                )

    def _read_catalog(self, handle: Any) -> Catalog | None:
        collection = self._catalog(handle)
        if not runner.run(collection.collection_exists()):
            return None
        found = runner.run(collection.get(keys=[CATALOG_KEY], include_vectors=False))
        rows = list(found or [])
        return Catalog.loads(rows[0]["content"]) if rows else None

    def _write_catalog(self, handle: Any, catalog: Catalog) -> None:
        row = {
            "key": CATALOG_KEY,
            "record_id": "catalog",
            "source": "",
            "source_key": "",
            "chunk_index": 0,
            "content": catalog.dumps(),
            "metadata": "{}",
            layout.VECTOR_FIELD: [1.0],
        }
        self._upsert_rows(self._catalog(handle), [row])

    def _catalog_or_new(self, handle: Any) -> Catalog:
        return self._read_catalog(handle) or Catalog(self._spec_or_fail())

    def _upsert_rows(self, collection: Any, rows: list[dict[str, Any]], existing: set[str] | None = None) -> None:
        """Upsert ``rows``; where the connector does not overwrite, first delete those whose ``record_id`` is
        in ``existing`` (every row when ``existing`` is None: unknown)."""
        for start in range(0, len(rows), self.batch_size):
            batch = rows[start : start + self.batch_size]
            if not self.upsert_overwrites:
                stale = [row["key"] for row in batch if existing is None or row["record_id"] in existing]
                if stale:
                    runner.run(collection.delete(keys=stale))
            runner.run(collection.upsert(batch))

    def _delete_ids(self, collection: Any, ids: Sequence[str]) -> None:
        keys = [layout.storage_key(i) for i in ids]
        for start in range(0, len(keys), self.batch_size):
            runner.run(collection.delete(keys=keys[start : start + self.batch_size]))

    def _ensure(self, collection: Any, **create: Any) -> bool:
        """Create ``collection`` if missing (``create``: arguments of its creation); True if it was created."""
        if runner.run(collection.collection_exists()):
            return False
        runner.run(collection.ensure_collection_exists(**create))
        return True

    # -- VectorStore ---------------------------------------------------------------------------
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        with self._session(write=True) as handle:
            catalog = self._read_catalog(handle)
            if catalog is not None:
                self._spec = catalog.spec
                self._ensure(self._data(handle, catalog.spec))
                return catalog.spec
            self._rule(spec)
            if spec.algorithm not in self.index_kinds:
                known = " or ".join(sorted(a.value for a in self.index_kinds))
                raise ConfigError(
                    f"database.vector_algorithm: {self.provider} has no {spec.algorithm.value} index (use {known})"
                )
            self._spec = spec
            if self._ensure(self._data(handle, spec), **self._create_arguments(spec)):
                self._after_create(handle, self._data_name)
            self._ensure(self._catalog(handle))
            self._write_catalog(handle, Catalog(spec))
            return None

    def drop(self) -> None:
        with self._session(write=True) as handle:
            spec = self._spec or CollectionSpec(self.collection, 1, "", Metric.COSINE)
            for collection in (self._data(handle, spec), self._catalog(handle)):
                if runner.run(collection.collection_exists()):
                    runner.run(collection.ensure_collection_deleted())
            self._collections.clear()
        self._spec = None

    def upsert(self, records: Sequence[Record]) -> None:
        if not records:
            return
        spec = self._spec_or_fail()
        self._check_dimension([r.vector for r in records], spec, f"record {records[0].id!r}")
        rule = self._rule(spec)
        rows = [layout.to_store(r, normalise=rule.normalise) for r in records]
        with self._session(write=True) as handle:
            catalog = self._catalog_or_new(handle)
            by_source: dict[str, list[str]] = {}
            for record in records:
                by_source.setdefault(record.source, []).append(record.id)
            existing = {i for source in by_source for i in catalog.ids_of(source)}
            for source, ids in by_source.items():
                catalog.add(source, ids)
            self._write_catalog(handle, catalog)
            self._upsert_rows(self._data(handle, spec), rows, existing)

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        spec = self._spec_or_fail()
        for record in records:
            self._check_dimension([record.vector], spec, f"record {record.id!r}")
        rule = self._rule(spec)
        rows = [layout.to_store(r, normalise=rule.normalise) for r in records]
        new_ids = [r.id for r in records]
        with self._session(write=True) as handle:
            catalog = self._catalog_or_new(handle)
            old_ids = catalog.ids_of(source)
            # Every key about to be written is in the catalog before it is written (nothing untracked).
            catalog.add(source, new_ids)
            self._write_catalog(handle, catalog)
            data = self._data(handle, spec)
            self._upsert_rows(data, rows, set(old_ids))
            stale = sorted(set(old_ids) - set(new_ids))
            self._delete_ids(data, stale)
            catalog.set(source, new_ids)
            catalog.manifest[source] = state
            self._write_catalog(handle, catalog)

    def delete_source(self, source: str) -> None:
        with self._session(write=True) as handle:
            catalog = self._read_catalog(handle)
            if catalog is None:
                return
            ids = catalog.ids_of(source)
            if ids:
                self._delete_ids(self._data(handle, catalog.spec), ids)
            catalog.set(source, [])
            catalog.manifest.pop(source, None)
            self._write_catalog(handle, catalog)

    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Filter | None = None,
    ) -> list[SearchHit]:
        if where:
            require_filters(self)  # no 'filters' capability: refused in one line, never ignored
        spec = self._spec_or_fail()
        self._check_dimension([vector], spec, "the query vector")
        if k <= 0 or (sources is not None and not sources):
            return []
        rule = self._rule(spec)
        query = np.asarray(vector, dtype=np.float32)
        if rule.normalise:
            norm = float(np.linalg.norm(query))
            query = query / norm if norm else query
        request = build_search(query, k, sources=sources, style=self.filter_style, extra=self._search_extra(spec))
        with self._session(write=False) as handle:
            data = self._data(handle, spec)
            rows = runner.run(self._collect(data, request.arguments()))
        hits = []
        for row, raw in rows:
            score = to_score(self.provider, spec.metric, raw)
            if min_score is None or score >= min_score:
                hits.append(SearchHit(layout.from_store(row), score))
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:k]

    @staticmethod
    async def _collect(collection: Any, arguments: dict[str, Any]) -> list[tuple[dict[str, Any], float]]:
        results = await collection.search(**arguments)
        return [(result.record, float(result.score)) async for result in results.results]

    def get(self, ids: Sequence[str]) -> list[Record]:
        if not ids:
            return []
        spec = self._spec_or_fail()
        found: dict[str, Record] = {}
        with self._session(write=False) as handle:
            data = self._data(handle, spec)
            keys = [layout.storage_key(i) for i in dict.fromkeys(ids)]
            for start in range(0, len(keys), self.batch_size):
                rows = runner.run(data.get(keys=keys[start : start + self.batch_size], include_vectors=True))
                for row in rows or []:
                    record = layout.from_store(row)
                    found[record.id] = record
        return [found[i] for i in ids if i in found]

    def count(self) -> int:
        with self._session(write=False) as handle:
            catalog = self._read_catalog(handle)
        return catalog.count() if catalog else 0

    def manifest(self) -> dict[str, FileState]:
        with self._session(write=False) as handle:
            catalog = self._read_catalog(handle)
        return dict(catalog.manifest) if catalog else {}

    def set_file_state(self, state: FileState) -> None:
        with self._session(write=True) as handle:
            catalog = self._catalog_or_new(handle)
            catalog.manifest[state.source] = state
            self._write_catalog(handle, catalog)

    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        with self._session(write=False) as handle:
            catalog = self._read_catalog(handle)
        if catalog is None:
            return
        ids = list(catalog.all_ids())
        for start in range(0, len(ids), max(1, batch_size)):
            yield from self.get(ids[start : start + batch_size])

    def close(self) -> None:
        self._collections.clear()
        self._release()
