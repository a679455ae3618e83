"""A deckhand vector store in Weaviate (weaviate-client v4), with our own vectors.

One deckhand collection is two Weaviate collections (:mod:`deckhand_weaviate.layout`): the
records, with their vectors in an HNSW or FLAT index and the content BM25-searchable, and a
side collection with the spec, one manifest entry per source and the replacement markers.

**Replacing a source.** Weaviate has no transactions, so a source's new version is written
beside the old one and a single object write switches between them. Every record carries a
*generation* (a fresh hex id per ``replace_source``); a source's manifest entry holds its
committed generation, a ``pending`` generation being written, and ``retiring`` generations being
deleted, and is ``busy`` while either is set. Readers hide every pending and retiring
generation (one small query of the busy entries per read). ``replace_source``:

1. marks the entry ``pending = new`` (readers still see the old version),
2. batch-inserts the new records (hidden),
3. commits: one write of the entry sets the new file state, ``generation = new`` and
   ``retiring = old`` -- from here readers see the new version, and the manifest agrees,
4. deletes the source's records of any other generation, then clears the marker.

A run interrupted anywhere leaves each source wholly old or wholly new to readers; the next
writing store object completes what the markers say (deletes a pending generation's records,
or a retiring one's) before its first write. ``delete_source`` commits by emptying the entry
and retiring its generations, then deletes. This assumes one writing process per collection
at a time, so ``concurrent_processes`` is not declared.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from deckhand.api import (
    CHANGED_MODEL_HINT,
    QUERY_MODEL_HINT,
    CollectionSpec,
    FileState,
    Record,
    SearchHit,
    ServerStore,
    StoreCapability,
    StoreError,
    Vector,
    file_state_from_json,
    file_state_to_json,
    redact_url,
    require_filters,
    spec_from_json,
    spec_to_dict,
)
from deckhand.api import Filter as Where
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter
from weaviate.collections.classes.filters import _Filters

from deckhand_weaviate import queries
from deckhand_weaviate.connection import client_errors, connect
from deckhand_weaviate.layout import SPEC_UUID, Layout, digest, entry_uuid, record_uuid, upsert_generation
from deckhand_weaviate.options import WeaviateOptions
from deckhand_weaviate.schema import meta_collection, records_collection

log = logging.getLogger(__name__)

#: Most objects one filtered fetch or delete_many touches (Weaviate's default QUERY_MAXIMUM_RESULTS).
MAX_RESULTS = 10_000
#: Record ids per ``get`` request.
_GET_BATCH = 500
_META_RETURN = ["kind", "key", "payload", "generation", "pending", "retiring", "busy"]


@dataclass
class Entry:
    """A source's manifest entry and its replacement marker, as stored in the side collection."""

    source: str
    payload: str = ""
    generation: str = ""
    pending: str = ""
    retiring: list[str] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return bool(self.pending or self.retiring)

    def properties(self) -> dict[str, Any]:
        return {
            "kind": "entry",
            "key": self.source,
            "payload": self.payload,
            "generation": self.generation,
            "pending": self.pending,
            "retiring": list(self.retiring),
            "busy": self.busy,
        }

    @classmethod
    def of(cls, props: dict[str, Any]) -> Entry:
        return cls(
            source=str(props.get("key") or ""),
            payload=str(props.get("payload") or ""),
            generation=str(props.get("generation") or ""),
            pending=str(props.get("pending") or ""),
            retiring=[str(g) for g in props.get("retiring") or []],
        )


class WeaviateStore(ServerStore[WeaviateOptions]):
    """One deckhand collection in Weaviate, through one client (thread-safe for these calls).

    Building it connects (within ``connect_timeout`` seconds); an unreachable server raises
    :class:`~deckhand.errors.StoreConnectionError` naming the URL (secrets masked) and the fix.
    """

    #: What it supports beyond every store's methods, declared once (deckhand plugins reads it from here).
    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset(
        {
            StoreCapability.PERSISTENT,
            StoreCapability.KEYWORD_SEARCH,
            StoreCapability.HYBRID_SEARCH,
        }
    )

    provider = "weaviate"
    url_example = "http://localhost:8080"

    def _default_options(self) -> WeaviateOptions:
        return WeaviateOptions()

    def _connect(self, url: str) -> None:
        self.layout = Layout(self.index_name, self.collection)
        self.safe_url = redact_url(url)
        self._write_lock = threading.Lock()
        self._recovered = False
        client, self.endpoints, self._scrub, self.where = connect(url, self.options)
        self._client: Any = client
        log.info("weaviate store %r connected to %s (collection %s)", self.collection, self.where, self.layout.records)

    @classmethod
    def _parse_options(cls, options: dict[str, Any]) -> WeaviateOptions:
        return WeaviateOptions.parse(options)

    def _errors(self, action: str) -> Any:
        return client_errors(self.where, self._scrub, action)

    def _records(self) -> Any:
        return self._client.collections.use(self.layout.records)

    def _meta(self) -> Any:
        return self._client.collections.use(self.layout.meta)

    def close(self) -> None:
        """Close the client's HTTP and gRPC connections."""
        self._client.close()

    # -- collection -------------------------------------------------------------------
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        """Create the two collections if missing; return the spec stored earlier, if any.

        The spec object is written last, so a collection whose creation was interrupted (or
        whose drop was: the side collection goes first) is created afresh.
        """
        with self._errors(f"opening collection {self.collection!r}"):
            collections = self._client.collections
            if not collections.exists(self.layout.meta):
                self._create(meta_collection(self.layout))
            previous = self._stored_spec()
            if previous is not None:
                self._spec = previous
                if not collections.exists(self.layout.records):  # lost by hand: empty, but usable
                    self._create(records_collection(self.layout, previous, self.options))
                return previous
            if collections.exists(self.layout.records):  # the orphan of an interrupted drop or creation
                collections.delete(self.layout.records)
            self._create(records_collection(self.layout, spec, self.options))
            self._meta().data.insert(
                properties={"kind": "spec", "key": "", "payload": json.dumps(spec_to_dict(spec)), "busy": False},
                uuid=SPEC_UUID,
            )
        self._spec = CollectionSpec(self.collection, spec.dimension, spec.embedding_model, spec.metric, spec.algorithm)
        log.info("created Weaviate collection %s at %s", self.layout.records, self.where)
        return None

    def _create(self, arguments: dict[str, Any]) -> None:
        from weaviate.exceptions import UnexpectedStatusCodeError

        try:
            self._client.collections.create(**arguments)
        except UnexpectedStatusCodeError as exc:
            if "already exists" not in str(exc).lower():
                raise

    def _stored_spec(self) -> CollectionSpec | None:
        found = self._meta().query.fetch_object_by_id(SPEC_UUID, return_properties=["payload"])
        if found is None:
            return None
        return spec_from_json(str(found.properties["payload"]))

    def drop(self) -> None:
        """Delete the side collection (spec and manifest), then the records."""
        with self._errors(f"dropping collection {self.collection!r}"):
            for name in (self.layout.meta, self.layout.records):
                if self._client.collections.exists(name):
                    self._client.collections.delete(name)
        self._spec = None
        self._recovered = False

    # -- writes -----------------------------------------------------------------------
    def _objects(self, records: Sequence[Record], generation: str | None) -> list[DataObject[Any, Any]]:
        """Data objects for ``records`` (``generation=None``: upsert); raises before any write on a bad vector."""
        dim = self.spec.dimension
        out = []
        for record in records:
            vector = self._record_vector(record, dim, hint=CHANGED_MODEL_HINT, finite_for="Weaviate")
            gen = generation if generation is not None else upsert_generation(record.source)
            out.append(
                DataObject(
                    properties={
                        "record_id": record.id,
                        "record_key": digest(record.id),
                        "source": record.source,
                        "source_key": digest(record.source),
                        "chunk_index": int(record.chunk_index),
                        "content": record.content,
                        "metadata": json.dumps(record.metadata or {}, ensure_ascii=False, default=str),
                        "embedding": base64.b64encode(vector.tobytes()).decode("ascii"),
                        "generation": gen,
                    },
                    uuid=record_uuid(record.id, "upsert" if generation is None else generation),
                    vector={queries.VECTOR_NAME: vector.tolist()},
                )
            )
        return out

    def _insert(self, objects: Sequence[DataObject[Any, Any]]) -> None:
        step = self.options.batch_size
        records = self._records()
        for start in range(0, len(objects), step):
            result = records.data.insert_many(list(objects[start : start + step]))
            if result.has_errors:
                first = next(iter(result.errors.values()))
                detail = self._scrub(getattr(first, "message", str(first)))
                raise StoreError(
                    f"Weaviate at {self.where} rejected {len(result.errors)} of {len(objects)} records of "
                    f"{self.collection!r}: {detail}"
                )

    def _delete(self, where: _Filters) -> None:
        """Delete every record matching ``where`` (``delete_many`` takes at most MAX_RESULTS per call)."""
        records = self._records()
        while True:
            result = records.data.delete_many(where=where)
            if result.failed:
                raise StoreError(
                    f"Weaviate at {self.where} failed to delete {result.failed} records of {self.collection!r}"
                )
            if result.matches < MAX_RESULTS or result.successful == 0:
                return

    def _entry(self, source: str) -> Entry | None:
        found = self._meta().query.fetch_object_by_id(entry_uuid(source), return_properties=_META_RETURN)
        return Entry.of(found.properties) if found is not None else None

    def _put(self, entry: Entry) -> None:
        """Write ``entry`` in one object write (a batch insert with its uuid replaces the object)."""
        result = self._meta().data.insert_many(
            [DataObject(properties=entry.properties(), uuid=entry_uuid(entry.source))]
        )
        if result.has_errors:
            first = next(iter(result.errors.values()))
            raise StoreError(
                f"Weaviate at {self.where} rejected the manifest entry of {entry.source!r}: "
                f"{self._scrub(getattr(first, 'message', str(first)))}"
            )

    def _busy_entries(self) -> list[Entry]:
        result = self._meta().query.fetch_objects(
            filters=Filter.by_property("busy").equal(True), limit=MAX_RESULTS, return_properties=_META_RETURN
        )
        return [Entry.of(obj.properties) for obj in result.objects]

    def _hidden(self) -> list[str]:
        """Generations readers must not see: being written, or replaced and being deleted."""
        hidden: set[str] = set()
        for entry in self._busy_entries():
            if entry.pending:
                hidden.add(entry.pending)
            hidden.update(entry.retiring)
        return sorted(hidden)

    def _recover(self) -> None:
        """Complete what interrupted writes left (once per store object, before its first write)."""
        if self._recovered:
            return
        for entry in self._busy_entries():
            if entry.pending:
                self._delete(Filter.by_property("generation").equal(entry.pending))
            if entry.retiring:
                self._delete(
                    Filter.all_of(
                        [
                            Filter.by_property("source_key").equal(digest(entry.source)),
                            Filter.by_property("generation").contains_any(entry.retiring),
                        ]
                    )
                )
            if entry.payload:
                self._put(Entry(entry.source, entry.payload, entry.generation))
            else:
                self._meta().data.delete_by_id(entry_uuid(entry.source))
            log.info("completed an interrupted write of %r in %s", entry.source, self.layout.records)
        self._recovered = True

    def upsert(self, records: Sequence[Record]) -> None:
        """Insert or overwrite records by id; the manifest is not touched."""
        objects = self._objects(records, None)
        if not objects:
            return
        with self._write_lock, self._errors(f"writing {len(objects)} records to {self.collection!r}"):
            self._recover()
            self._insert(objects)
            # The same ids written earlier by replace_source are other objects (other generations).
            written = {str(obj.uuid) for obj in objects}
            keys = sorted({digest(r.id) for r in records})
            for start in range(0, len(keys), _GET_BATCH):
                found = self._records().query.fetch_objects(
                    filters=Filter.by_property("record_key").contains_any(keys[start : start + _GET_BATCH]),
                    limit=MAX_RESULTS,
                    return_properties=[],
                )
                stale = [obj.uuid for obj in found.objects if str(obj.uuid) not in written]
                if stale:
                    self._delete(Filter.by_id().contains_any(stale))

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        """Swap all records of ``source`` and its manifest entry; readers see wholly old or wholly new."""
        for record in records:
            if record.source != source:
                raise StoreError(f"replace_source({source!r}) got record {record.id!r} of source {record.source!r}")
        generation = uuid.uuid4().hex
        objects = self._objects(records, generation)  # every vector checked before anything is written
        with self._write_lock, self._errors(f"replacing source {source!r} in {self.collection!r}"):
            self._recover()
            entry = self._entry(source) or Entry(source)
            old = sorted({entry.generation, upsert_generation(source)} - {""})
            self._put(Entry(source, entry.payload, entry.generation, pending=generation))
            try:
                self._insert(objects)
            except BaseException:
                self._abandon(entry, generation)
                raise
            self._put(Entry(source, file_state_to_json(state), generation, retiring=old))  # the commit
            self._delete(
                Filter.all_of(
                    [
                        Filter.by_property("source_key").equal(digest(source)),
                        Filter.by_property("generation").not_equal(generation),
                    ]
                )
            )
            self._put(Entry(source, file_state_to_json(state), generation))

    def _abandon(self, entry: Entry, generation: str) -> None:
        """After a failed insert: remove what was written and restore the entry (else the next run will)."""
        try:
            self._delete(Filter.by_property("generation").equal(generation))
            if entry.payload or entry.generation:
                self._put(Entry(entry.source, entry.payload, entry.generation))
            else:
                self._meta().data.delete_by_id(entry_uuid(entry.source))
        except Exception:  # the server went away: the marker stays and the next writer completes it
            log.warning("could not undo a failed write of %r in %s; the next run will", entry.source, self.where)

    def delete_source(self, source: str) -> None:
        """Remove the records of ``source`` and its manifest entry; an unknown source is not an error."""
        with self._write_lock, self._errors(f"deleting source {source!r} from {self.collection!r}"):
            self._recover()
            entry = self._entry(source)
            gens = sorted({entry.generation if entry else "", upsert_generation(source)} - {""})
            self._put(Entry(source, "", "", retiring=gens))  # the commit: gone from the manifest and hidden
            self._delete(Filter.by_property("source_key").equal(digest(source)))
            self._meta().data.delete_by_id(entry_uuid(source))

    def set_file_state(self, state: FileState) -> None:
        """Write one manifest entry without touching records."""
        with self._write_lock, self._errors(f"updating the manifest of {self.collection!r}"):
            self._recover()
            entry = self._entry(state.source) or Entry(state.source)
            self._put(Entry(state.source, file_state_to_json(state), entry.generation, entry.pending, entry.retiring))

    # -- reads ------------------------------------------------------------------------
    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Where | None = None,
    ) -> list[SearchHit]:
        """The ``k`` nearest records by the collection's metric, best first, as deckhand scores."""
        if where:
            require_filters(self)  # no 'filters' capability: refused in one line, never ignored
        query = self._query_vector(vector, hint=QUERY_MODEL_HINT)
        metric = self.spec.metric
        if k <= 0 or (sources is not None and len(sources) == 0):
            return []
        with self._errors(f"searching {self.collection!r}"):
            filters = queries.where(self._hidden(), sources)
            result = self._records().query.near_vector(**queries.near_vector_request(query, k, filters))
        objects = sorted(result.objects, key=lambda obj: _distance(obj))
        if not objects:
            return []
        scores = queries.distance_scores(metric, [_distance(obj) for obj in objects])
        hits = []
        for obj, score in zip(objects, scores, strict=True):
            if min_score is not None and score < min_score:
                continue
            hits.append(SearchHit(_record(obj.properties), float(score)))
        return hits

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]:
        """Weaviate's BM25 over the content (any of the query's words), scored ``s / (1 + s)``, best first.

        The query is sent as plain text: Weaviate tokenizes it, so query-language characters
        are searched as text.
        """
        self.spec  # noqa: B018 - raises when the collection is not open
        if k <= 0 or not queries.has_words(query) or (sources is not None and len(sources) == 0):
            return []
        with self._errors(f"keyword search in {self.collection!r}"):
            filters = queries.where(self._hidden(), sources)
            result = self._records().query.bm25(**queries.bm25_request(query, k, filters))
        hits = [SearchHit(_record(obj.properties), queries.bm25_score(obj.metadata.score)) for obj in result.objects]
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits

    def hybrid_search(
        self, query: str, vector: Vector, k: int, *, sources: Sequence[str] | None = None
    ) -> list[SearchHit]:
        """Weaviate's hybrid query: BM25 over the content fused with ``vector``'s nearest records.

        ``hybrid_alpha`` and ``hybrid_fusion`` (``database.options``) set the weight of the
        vector side and the fusion; scores are Weaviate's fused scores clipped to [0, 1].
        """
        query_vector = self._query_vector(vector, hint=QUERY_MODEL_HINT)
        if k <= 0 or (sources is not None and len(sources) == 0):
            return []
        if not queries.has_words(query):
            return self.search(query_vector, k, sources=sources)
        options = self.options
        with self._errors(f"hybrid search in {self.collection!r}"):
            filters = queries.where(self._hidden(), sources)
            result = self._records().query.hybrid(
                **queries.hybrid_request(
                    query, query_vector, k, filters, alpha=options.hybrid_alpha, fusion=options.hybrid_fusion
                )
            )
        hits = [SearchHit(_record(obj.properties), queries.hybrid_score(obj.metadata.score)) for obj in result.objects]
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits

    def get(self, ids: Sequence[str]) -> list[Record]:
        """Records by id, in the order asked; unknown ids are left out."""
        self.spec  # noqa: B018
        if not ids:
            return []
        keys = sorted({digest(i) for i in ids})
        found: dict[str, Record] = {}
        with self._errors(f"reading records of {self.collection!r}"):
            hidden = self._hidden()
            for start in range(0, len(keys), _GET_BATCH):
                part = keys[start : start + _GET_BATCH]
                result = self._records().query.fetch_objects(
                    filters=queries.where(hidden, extra=Filter.by_property("record_key").contains_any(part)),
                    limit=min(MAX_RESULTS, 2 * len(part)),
                    return_properties=queries.RETURN_PROPERTIES,
                )
                for obj in result.objects:
                    record = _record(obj.properties)
                    found.setdefault(record.id, record)
        return [found[i] for i in ids if i in found]

    def count(self) -> int:
        """Records visible to readers."""
        self.spec  # noqa: B018
        with self._errors(f"counting {self.collection!r}"):
            result = self._records().aggregate.over_all(total_count=True, filters=queries.where(self._hidden()))
        return int(result.total_count or 0)

    def manifest(self) -> dict[str, FileState]:
        """The ingestion manifest, keyed by source (empty before the collection is created)."""
        with self._errors(f"reading the manifest of {self.collection!r}"):
            if not self._client.collections.exists(self.layout.meta):
                return {}
            out: dict[str, FileState] = {}
            for obj in self._meta().iterator(return_properties=_META_RETURN, cache_size=1000):
                entry = Entry.of(obj.properties)
                if obj.properties.get("kind") == "entry" and entry.payload:
                    out[entry.source] = file_state_from_json(entry.payload)
        return out

    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        """Every record readers may see, ``batch_size`` per request (Weaviate's cursor)."""
        self.spec  # noqa: B018
        with self._errors(f"reading records of {self.collection!r}"):
            hidden = set(self._hidden())
            iterator = self._records().iterator(
                return_properties=queries.RETURN_PROPERTIES, cache_size=max(1, min(batch_size, MAX_RESULTS))
            )
        while True:
            with self._errors(f"reading records of {self.collection!r}"):
                obj = next(iterator, None)
            if obj is None:
                return
            if obj.properties.get("generation") not in hidden:
                yield _record(obj.properties)


# -- conversions ----------------------------------------------------------------------------
def _distance(obj: Any) -> float:
    distance = obj.metadata.distance
    return float("inf") if distance is None else float(distance)


def _record(props: dict[str, Any]) -> Record:
    blob = props.get("embedding") or ""
    vector = np.frombuffer(base64.b64decode(blob), dtype=np.float32).copy()
    metadata = props.get("metadata")
    return Record(
        id=str(props["record_id"]),
        source=str(props["source"]),
        chunk_index=int(props["chunk_index"]),
        content=str(props.get("content") or ""),
        vector=vector,
        metadata=json.loads(metadata) if metadata else {},
    )
