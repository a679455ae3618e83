"""Upserts, replacing and deleting a source's records, manifest entries, dimensions, awkward names and content."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from deckhand.bases import StoreBase
from deckhand.errors import DimensionMismatchError
from deckhand.testing.store_conformance.store_fixtures import (
    AWKWARD_SOURCES,
    STRANGE_SOURCES,
    StoreKit,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.types import Record, record_id


class WriteTests(StoreKit):
    """Upserts, replacing and deleting a source's records, manifest entries, dimensions, awkward names and content."""

    # -- writes -----------------------------------------------------------------------------
    def test_upsert_and_get(self, store: StoreBase, rng: np.random.Generator) -> None:
        vectors = make_vectors(rng, 5, self.dimension)
        records = make_records(vectors, "docs/guide.md")
        store.upsert(records)
        assert store.count() == 5
        wanted = [records[3].id, "docs/guide.md_chunk_99", records[0].id]
        got = store.get(wanted)
        assert [r.id for r in got] == [records[3].id, records[0].id], "get() keeps the asked order, drops unknown ids"
        for record, expected in zip(got, (records[3], records[0]), strict=False):
            assert record.source == expected.source
            assert record.chunk_index == expected.chunk_index
            assert record.content == expected.content
            assert record.metadata == expected.metadata
            np.testing.assert_allclose(np.asarray(record.vector, dtype=np.float32), expected.vector, atol=1e-6)

    def test_reupsert_is_idempotent_and_overwrites(self, store: StoreBase, rng: np.random.Generator) -> None:
        records = make_records(make_vectors(rng, 6, self.dimension), "a.md")
        store.upsert(records)
        store.upsert(records)
        assert store.count() == 6, "upserting the same ids twice must not duplicate records"
        changed = replace(records[2], content="rewritten", vector=make_vectors(rng, 1, self.dimension)[0])
        store.upsert([changed])
        assert store.count() == 6
        (got,) = store.get([changed.id])
        assert got.content == "rewritten"
        np.testing.assert_allclose(got.vector, changed.vector, atol=1e-6)
        hits = store.search(changed.vector, 1)
        assert self._ids(hits) == [changed.id], "search must use the overwritten vector"

    def test_replace_source_swaps_records_and_manifest(self, store: StoreBase, rng: np.random.Generator) -> None:
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 5, self.dimension), "a.md"), file_state("a.md", chunks=5)
        )
        store.replace_source(
            "b.md", make_records(make_vectors(rng, 2, self.dimension), "b.md"), file_state("b.md", chunks=2)
        )
        new = make_records(make_vectors(rng, 3, self.dimension), "a.md", content=lambda i: f"new {i}")
        state = file_state("a.md", chunks=3, salt="v2")
        store.replace_source("a.md", new, state)
        assert store.count() == 5
        assert store.get([record_id("a.md", 3), record_id("a.md", 4)]) == [], "old chunks beyond the new count remain"
        assert [r.content for r in store.get([r.id for r in new])] == ["new 0", "new 1", "new 2"]
        assert store.manifest()["a.md"] == state
        assert store.manifest()["b.md"] == file_state("b.md", chunks=2)
        hits = store.search(new[1].vector, 1, sources=["a.md"])
        assert self._ids(hits) == [new[1].id]

    def test_replace_source_is_all_or_nothing(self, store: StoreBase, rng: np.random.Generator) -> None:
        old = make_records(make_vectors(rng, 4, self.dimension), "a.md")
        old_state = file_state("a.md", chunks=4)
        store.replace_source("a.md", old, old_state)
        bad = make_records(make_vectors(rng, 3, self.dimension), "a.md", content=lambda i: f"new {i}")
        bad[2] = replace(bad[2], vector=np.ones(self.dimension + 3, dtype=np.float32))
        with pytest.raises(DimensionMismatchError):
            store.replace_source("a.md", bad, file_state("a.md", chunks=3, salt="v2"))
        assert store.count() == 4, "a failed replace_source must leave the old records"
        assert [r.content for r in store.get([r.id for r in old])] == [r.content for r in old]
        assert store.manifest()["a.md"] == old_state, "a failed replace_source must leave the old manifest entry"
        hits = store.search(old[2].vector, 1, sources=["a.md"])
        assert self._ids(hits) == [old[2].id], "old records must stay searchable"

    def test_replace_source_with_no_records(self, store: StoreBase, rng: np.random.Generator) -> None:
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 3, self.dimension), "a.md"), file_state("a.md", chunks=3)
        )
        empty = file_state("a.md", chunks=0, salt="empty")
        store.replace_source("a.md", [], empty)
        assert store.count() == 0
        assert store.manifest() == {"a.md": empty}

    def test_delete_source(self, store: StoreBase, rng: np.random.Generator) -> None:
        for source in AWKWARD_SOURCES:
            records = make_records(make_vectors(rng, 3, self.dimension), source)
            store.replace_source(source, records, file_state(source, chunks=3))
        gone = AWKWARD_SOURCES[1]
        store.delete_source(gone)
        assert store.count() == 6
        assert gone not in store.manifest()
        assert set(store.manifest()) == {AWKWARD_SOURCES[0], AWKWARD_SOURCES[2]}
        assert store.get([record_id(gone, 0)]) == []
        hits = store.search(make_vectors(rng, 1, self.dimension)[0], 10)
        assert gone not in {hit.record.source for hit in hits}

    def test_set_file_state_leaves_records_alone(self, store: StoreBase, rng: np.random.Generator) -> None:
        store.replace_source(
            "a.md", make_records(make_vectors(rng, 2, self.dimension), "a.md"), file_state("a.md", chunks=2)
        )
        touched = replace(file_state("a.md", chunks=2), mtime=1_800_000_000.5)
        store.set_file_state(touched)
        assert store.manifest()["a.md"] == touched
        assert store.count() == 2

    def test_dimension_mismatch_on_upsert(self, store: StoreBase) -> None:
        wrong = Record("x_chunk_0", "x", 0, "text", np.ones(self.dimension - 1, dtype=np.float32))
        with pytest.raises(DimensionMismatchError, match=str(self.dimension)):
            store.upsert([wrong])
        assert store.count() == 0

    def test_dimension_mismatch_on_query(self, store: StoreBase, rng: np.random.Generator) -> None:
        store.upsert(make_records(make_vectors(rng, 2, self.dimension), "a.md"))
        with pytest.raises(DimensionMismatchError, match=str(self.dimension)):
            store.search(np.ones(self.dimension + 1, dtype=np.float32), 3)

    def test_any_file_name_is_a_source_of_its_own(self, store: StoreBase, rng: np.random.Generator) -> None:
        """Every name a file system allows (and deckhand ingests) is a distinct source through replace, manifest,
        the ``sources`` filter and delete: control characters, backslashes, names that look like options or
        query syntax, case and Unicode-normalisation twins, and a 255-byte name."""
        for source in STRANGE_SOURCES:
            records = make_records(make_vectors(rng, 2, self.dimension), source)
            store.replace_source(source, records, file_state(source, chunks=2))
        assert set(store.manifest()) == set(STRANGE_SOURCES), "a source name was changed or merged with another"
        assert store.count() == 2 * len(STRANGE_SOURCES)
        query = make_vectors(rng, 1, self.dimension)[0]
        for source in STRANGE_SOURCES:
            hits = store.search(query, 5, sources=[source])
            assert {h.record.source for h in hits} == {source}, f"sources=[{source!r}] returned {hits!r}"
            assert len(hits) == 2, f"sources=[{source!r}]: {len(hits)} hits, expected 2"
        for gone in STRANGE_SOURCES[::2]:
            store.delete_source(gone)
        kept = set(STRANGE_SOURCES[1::2])
        assert set(store.manifest()) == kept, "delete_source removed another source's entry, or missed its own"
        assert {h.record.source for h in store.search(query, 100)} == kept
        assert store.count() == 2 * len(kept)

    # -- content ----------------------------------------------------------------------------
    def test_unicode_and_long_content(self, store: StoreBase, rng: np.random.Generator) -> None:
        texts = [
            "Ünïcødé — naïve café, 日本語のテキスト, العربية, emoji 🚢⚓️, math ∑∫√",
            "quotes ' \" ` and backslashes \\ \\n and braces {} [] @field:tag | - * % $",
            ("lorem ipsum dolor sit amet " * 2000)[:50_000] + "END",
        ]
        source = AWKWARD_SOURCES[2]
        vectors = make_vectors(rng, len(texts), self.dimension)
        records = make_records(vectors, source, content=lambda i: texts[i])
        store.replace_source(source, records, file_state(source, chunks=3))
        got = store.get([r.id for r in records])
        assert [r.content for r in got] == texts
        assert len(got[2].content) == 50_003
        hit = store.search(vectors[0], 1, sources=[source])
        assert hit and hit[0].record.content == texts[0] and hit[0].record.source == source

    def test_large_batch(self, store: StoreBase, rng: np.random.Generator) -> None:
        n = self.large_batch
        vectors = make_vectors(rng, n, self.dimension)
        half = n // 2
        store.upsert(make_records(vectors[:half], "big-a.txt"))
        store.replace_source(
            "big-b.txt", make_records(vectors[half:], "big-b.txt", start=half), file_state("big-b.txt", chunks=n - half)
        )
        assert store.count() == n
        seen = {record.id for record in store.iter_records(batch_size=777)}
        assert len(seen) == n, f"iter_records() yielded {len(seen)} distinct records of {n}"
        probe = half + 123
        hits = store.search(vectors[probe], 3)
        assert hits and hits[0].record.id == record_id("big-b.txt", probe)
