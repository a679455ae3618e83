"""The manifest, other connections, and (``StoreCapability.PERSISTENT``) other processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from deckhand.bases import StoreBase
from deckhand.capabilities import StoreCapability
from deckhand.config.models import DatabaseConfig
from deckhand.testing.store_conformance.store_fixtures import (
    AWKWARD_SOURCES,
    StoreKit,
    _require,
    _spec_of,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.testing.store_process import seeded_records, seeded_state, state_to_json
from deckhand.types import CollectionSpec


class PersistenceTests(StoreKit):
    """The manifest, other connections, and (``StoreCapability.PERSISTENT``) other processes."""

    # -- persistence and manifest -----------------------------------------------------------
    def test_manifest_round_trip(self, store: StoreBase, rng: np.random.Generator) -> None:
        states = {}
        for n, source in enumerate(AWKWARD_SOURCES, start=1):
            state = file_state(source, chunks=n, model="sentence-transformers/all-MiniLM-L6-v2@int8")
            states[source] = state
            store.replace_source(source, make_records(make_vectors(rng, n, self.dimension), source), state)
        assert store.manifest() == states
        only_state = file_state("unchunked.md", chunks=0)
        store.set_file_state(only_state)
        assert store.manifest()["unchunked.md"] == only_state

    def test_data_visible_from_second_connection(
        self,
        connect: Callable[[], StoreBase],
        spec: CollectionSpec,
        rng: np.random.Generator,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        _require(capabilities, StoreCapability.PERSISTENT)
        writer = connect()
        writer.open(spec)
        vectors = make_vectors(rng, 20, self.dimension)
        records = make_records(vectors, AWKWARD_SOURCES[1])
        state = file_state(AWKWARD_SOURCES[1], chunks=20)
        writer.replace_source(AWKWARD_SOURCES[1], records, state)
        writer.close()
        reader = self._second(connect, spec)
        assert reader.count() == 20
        assert reader.manifest() == {AWKWARD_SOURCES[1]: state}, "the manifest must live in the database"
        assert [r.content for r in reader.get([records[4].id])] == [records[4].content]
        hits = reader.search(vectors[4], 1, sources=[AWKWARD_SOURCES[1]])
        assert self._ids(hits) == [records[4].id]

    def test_manifest_visible_from_second_connection(
        self, connect: Callable[[], StoreBase], spec: CollectionSpec, capabilities: frozenset[StoreCapability]
    ) -> None:
        _require(capabilities, StoreCapability.PERSISTENT)
        writer = connect()
        writer.open(spec)
        state = file_state("touched.md", chunks=0)
        writer.set_file_state(state)
        reader = self._second(connect, spec)
        assert reader.manifest() == {"touched.md": state}
        reader.delete_source("touched.md")
        assert writer.manifest() == {}

    # -- capability: persistence, seen from another process ----------------------------------
    def test_persistence_from_another_process(
        self,
        connect: Callable[[], StoreBase],
        collection: str,
        database: DatabaseConfig,
        base_dir: Path,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        """Another Python process, building the store through the registry, sees what this one wrote.

        A store that keeps its data in a module-level dict passes every same-process test
        and fails this one. A store that does not declare ``persistent`` must not show this
        process's data to another one (if it does, it should declare the capability).
        """
        spec = self._process_spec(collection)
        source = AWKWARD_SOURCES[2]
        records = seeded_records(source, 11, 12, self.dimension, tag="first")
        state = seeded_state(source, 12, tag="first")
        touched = file_state("unchunked.md", chunks=0)
        writer = connect()
        writer.open(spec)
        writer.replace_source(source, records, state)
        writer.set_file_state(touched)
        writer.close()
        probe = {"seed": 11, "n": 12, "row": 7, "k": 3, "sources": [source]}
        opened, read = self._in_another_process(
            database, base_dir, spec, [{"op": "open"}, {"op": "read", "ids": [records[3].id, "nope"], "probe": probe}]
        )
        assert opened["type"] == f"{type(writer).__module__}.{type(writer).__qualname__}", (
            f"the registered factory builds {opened['type']} in another process"
        )
        assert set(opened["capabilities"]) == {c.value for c in capabilities}
        if StoreCapability.PERSISTENT not in capabilities:
            assert _spec_of(opened["previous"]) is None and read["count"] == 0, (
                "another process sees this process's collection: the data outlives the process, so declare "
                "StoreCapability.PERSISTENT"
            )
            return
        assert _spec_of(opened["previous"]) == spec, (
            "another process opening the collection must get the spec it was created with; it got "
            f"{opened['previous']!r} (is the data only kept in this process?)"
        )
        assert read["count"] == 12, f"another process counts {read['count']} records, expected 12"
        assert read["manifest"] == {source: state_to_json(state), "unchunked.md": state_to_json(touched)}
        assert read["got"] == [[records[3].id, records[3].content]]
        assert [hit[0] for hit in read["hits"]][:1] == [records[7].id]
        assert read["ids"] == sorted(r.id for r in records)

    def test_reader_sees_later_writes(
        self,
        connect: Callable[[], StoreBase],
        collection: str,
        database: DatabaseConfig,
        base_dir: Path,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        """A connection that already searched (and may hold vectors in memory) sees later writes and deletes.

        The writes come from a second connection in this process, then from another process.
        """
        _require(capabilities, StoreCapability.PERSISTENT)
        spec = self._process_spec(collection)
        dim = self.dimension
        a1, b1 = seeded_records("a.md", 1, 3, dim, tag="v1"), seeded_records("b.md", 2, 3, dim, tag="v1")
        writer = connect()
        writer.open(spec)
        writer.replace_source("a.md", a1, seeded_state("a.md", 3, tag="v1"))
        writer.replace_source("b.md", b1, seeded_state("b.md", 3, tag="v1"))
        reader = self._second(connect, spec)
        # Load everything a reader might cache.
        assert self._ids(reader.search(a1[0].vector, 1)) == [a1[0].id]
        assert reader.count() == 6 and len(list(reader.iter_records())) == 6
        assert set(reader.manifest()) == {"a.md", "b.md"}

        a2, c1 = seeded_records("a.md", 3, 2, dim, tag="v2"), seeded_records("c.md", 4, 2, dim, tag="v1")
        writer.replace_source("a.md", a2, seeded_state("a.md", 2, tag="v2"))
        writer.delete_source("b.md")
        writer.replace_source("c.md", c1, seeded_state("c.md", 2, tag="v1"))
        writer.set_file_state(file_state("touched.md", chunks=0))
        stale = "a reader that already searched must see another connection's later writes"
        assert reader.count() == 4, f"{stale}: count() is {reader.count()}, expected 4"
        assert reader.manifest() == {
            "a.md": seeded_state("a.md", 2, tag="v2"),
            "c.md": seeded_state("c.md", 2, tag="v1"),
            "touched.md": file_state("touched.md", chunks=0),
        }, f"{stale} (manifest)"
        hits = reader.search(a2[1].vector, 1)
        assert [(h.record.id, h.record.content) for h in hits] == [(a2[1].id, a2[1].content)], f"{stale} (search)"
        assert not {h.record.source for h in reader.search(b1[0].vector, 10)} & {"b.md"}, f"{stale}: deleted b.md found"
        assert reader.get([b1[0].id, a1[2].id]) == [], f"{stale}: get() returns deleted records"
        in_c = set(self._ids(reader.search(c1[0].vector, 5, sources=["c.md"])))
        assert in_c == {c1[0].id, c1[1].id}, f"{stale}: search(sources=['c.md']) found {in_c}"
        assert sorted(r.id for r in reader.iter_records()) == sorted(r.id for r in [*a2, *c1]), f"{stale} (iter)"

        # Now another process writes d.md and deletes c.md.
        self._in_another_process(
            database,
            base_dir,
            spec,
            [
                {"op": "open"},
                {"op": "write", "sources": ["d.md"], "seed": 5, "n": 4, "tag": "other"},
                {"op": "delete", "sources": ["c.md"]},
            ],
        )
        d1 = seeded_records("d.md", 5, 4, dim, tag="other")
        stale = "a reader must see another process's later writes"
        assert reader.count() == 6, f"{stale}: count() is {reader.count()}, expected 6"
        assert set(reader.manifest()) == {"a.md", "d.md", "touched.md"}, f"{stale} (manifest)"
        hits = reader.search(d1[2].vector, 1)
        assert [(h.record.id, h.record.content) for h in hits] == [(d1[2].id, d1[2].content)], f"{stale} (search)"
        assert "c.md" not in {h.record.source for h in reader.search(c1[0].vector, 10)}, f"{stale}: deleted c.md found"
