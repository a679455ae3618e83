"""Manager behaviour beyond the conformance kit: corrupt storage, the content index, semantic search."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from deckhand.api import TokenizerBase
from deckhand.bases import EmbedderBase
from deckhand.memory import (
    CorruptDecisionsError,
    ImmutableLayerError,
    InMemoryBackend,
    ScanEntry,
    StorageError,
    VectorCoordinate,
    VectorMemoryManager,
)
from deckhand.memory.backend import describe_ranges, sync_message
from deckhand.memory.index import ContentIndex
from deckhand.types import Vector


class DamagedBackend(InMemoryBackend):
    """An in-memory backend whose storage also holds a few unreadable items."""

    def __init__(self, damaged: dict[VectorCoordinate, bytes], unreadable: Sequence[str] = ()) -> None:
        super().__init__()
        self.damaged = damaged
        self.unreadable = list(unreadable)

    def scan(self) -> Iterator[ScanEntry]:
        yield from super().scan()
        for coord, data in self.damaged.items():
            yield ScanEntry(self.locate(coord), coord, data)
        for name in self.unreadable:
            yield ScanEntry(name, None, None, "file name is not a coordinate")

    def write(self, coordinate: VectorCoordinate, data: bytes, *, create_only: bool) -> bool:
        if create_only and coordinate in self.damaged:
            return False
        self.damaged.pop(coordinate, None)
        return super().write(coordinate, data, create_only=create_only)


def _seed(backend: InMemoryBackend, n: int = 5) -> None:
    manager = VectorMemoryManager(None, "seed", backend=backend)
    for x in range(1, n + 1):
        manager.store(VectorCoordinate(x, 1, 2), f"decision {x}")


def test_corrupt_decisions_are_reported_and_the_rest_load(caplog: pytest.LogCaptureFixture) -> None:
    bad = VectorCoordinate(9, 1, 1)
    backend = DamagedBackend({bad: b'{"coordinate": {"x": 9'}, ["/repo/.vector-memory/x-009/notes.json"])
    _seed(backend)
    manager = VectorMemoryManager(None, "agent", backend=backend)  # the constructor logs, it does not raise
    assert len(manager) == 5
    assert len(manager.load_errors) == 2
    assert "x-009/y-1-z-1.json" in caplog.text and "not a valid decision file" in caplog.text
    with pytest.raises(CorruptDecisionsError) as info:
        manager.load_from_git()
    assert info.value.loaded == 5 and len(info.value.errors) == 2
    assert "x-009/y-1-z-1.json" in str(info.value) and "notes.json" in str(info.value)
    assert isinstance(info.value, StorageError)
    assert len(manager.query_range()) == 5  # still usable after the error
    with pytest.raises(StorageError, match=r"x-009/y-1-z-1\.json"):
        manager.get(bad)
    assert manager.exists(bad)
    with pytest.raises(ImmutableLayerError):
        manager.store(bad, "cannot replace an immutable decision, even a corrupt one")


def test_a_corrupt_mutable_decision_is_repaired_by_storing() -> None:
    bad = VectorCoordinate(9, 1, 3)
    backend = DamagedBackend({bad: b"garbage"})
    manager = VectorMemoryManager(None, "agent", backend=backend)
    assert manager.load_errors
    manager.store(bad, "fixed")
    repaired = manager.get(bad)
    assert repaired is not None and repaired.content == "fixed"
    assert manager.load_from_git() == 1


def test_file_whose_content_names_another_coordinate() -> None:
    backend = InMemoryBackend()
    _seed(backend, 1)
    data = backend.read(VectorCoordinate(1, 1, 2))
    assert data is not None
    backend.write(VectorCoordinate(2, 1, 2), data, create_only=False)
    with pytest.raises(CorruptDecisionsError, match=r"says coordinate \(1, 1, 2\) but its name says \(2, 1, 2\)"):
        VectorMemoryManager(None, "a", backend=backend).load_from_git()


def test_content_index_matches_substrings_phrases_and_punctuation() -> None:
    index = ContentIndex()
    index.add((1, 1, 1), "We use PostgreSQL databases; C++ for the core.")
    index.add((2, 1, 1), "A database-backed cache")
    index.add((3, 1, 1), "Nothing relevant")
    assert index.matching("database") == {(1, 1, 1), (2, 1, 1)}
    assert index.matching("postgres") == {(1, 1, 1)}
    assert index.matching("sql data") == {(1, 1, 1)}
    assert index.matching("c++") == {(1, 1, 1)}
    assert index.matching("database-backed") == {(2, 1, 1)}
    assert index.matching(";") == {(1, 1, 1)}
    index.remove((1, 1, 1))
    assert index.matching("postgres") == set()
    assert index.search(["database", "cache"], match_all=False) == [((2, 1, 1), 2)]


def test_sync_message_helpers() -> None:
    coords = [VectorCoordinate(x, 2, 1) for x in (1, 2, 3, 7)] + [VectorCoordinate(9, 4, 3)]
    assert describe_ranges(coords) == "x 1-3,7,9 · y 2,4 · z 1,3"
    text = sync_message(coords, [], "Initial architecture")
    assert text.splitlines()[0] == "Initial architecture"
    assert "5 decisions" in text and "x 1-3,7,9" in text


class KeywordEmbedder(EmbedderBase):
    """A deterministic stand-in embedder: one dimension per topic word."""

    model_id = "keyword-test"
    dimension = 4
    max_tokens = 512
    topics = ("database", "interface", "network", "testing")

    def __init__(self) -> None:
        self.calls: list[int] = []

    @property
    def tokenizer(self) -> TokenizerBase:  # pragma: no cover - unused
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> Vector:
        self.calls.append(len(texts))
        rows = [[1.0 + t.lower().count(w) * 5 if w in t.lower() else 0.1 for w in self.topics] for t in texts]
        m = np.asarray(rows, dtype=np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_semantic_search_is_lazy_incremental_and_ranked() -> None:
    embedder = KeywordEmbedder()
    manager = VectorMemoryManager(None, "a", backend=InMemoryBackend(), embedder=embedder)
    manager.store(VectorCoordinate(1, 1, 2), "database schema for orders")
    manager.store(VectorCoordinate(2, 1, 2), "interface colours")
    manager.store(VectorCoordinate(3, 1, 2), "network retries")
    assert embedder.calls == []  # nothing embedded before the first semantic search
    hits = manager.search_semantic("which database", k=2)
    assert hits[0].decision.coordinate.x == 1
    assert len(hits) == 2 and hits[0].score >= hits[1].score and 0 <= hits[1].score <= 1
    assert embedder.calls == [3, 1]
    manager.store(VectorCoordinate(4, 1, 2), "testing strategy")
    manager.search_semantic("testing", k=1)
    assert embedder.calls == [3, 1, 1, 1]  # only the new decision and the query


def test_semantic_search_with_the_default_embedder(tmp_path: object) -> None:
    manager = VectorMemoryManager(None, "a", backend=InMemoryBackend(), embedding_cache=None)
    manager.store(VectorCoordinate(1, 1, 2), "Persist orders in PostgreSQL with a normalised schema")
    manager.store(VectorCoordinate(2, 1, 2), "The settings page uses a dark colour theme")
    manager.store(VectorCoordinate(3, 1, 2), "Retry HTTP calls with exponential backoff")
    hits = manager.search_semantic("which relational database stores the data?", k=3)
    assert hits[0].decision.coordinate.x == 1
    hits = manager.search_semantic("what happens when a request to a server fails", k=1)
    assert hits[0].decision.coordinate.x == 3


def test_stores_are_not_blocked_while_the_first_semantic_search_embeds() -> None:
    import threading

    started, release = threading.Event(), threading.Event()

    class SlowEmbedder(KeywordEmbedder):
        def embed(self, texts: Sequence[str]) -> Vector:
            if len(texts) > 1:
                started.set()
                assert release.wait(10)
            return super().embed(texts)

    manager = VectorMemoryManager(None, "a", backend=InMemoryBackend(), embedder=SlowEmbedder())
    manager.store(VectorCoordinate(1, 1, 2), "database schema")
    manager.store(VectorCoordinate(2, 1, 2), "network retries")
    results: list[object] = []
    searcher = threading.Thread(target=lambda: results.append(manager.search_semantic("database", k=3)))
    searcher.start()
    assert started.wait(10)
    manager.store(VectorCoordinate(3, 1, 2), "testing plan")  # would deadlock if the search held the lock
    manager.store(VectorCoordinate(2, 1, 2), "interface colours")  # rewritten while being embedded
    release.set()
    searcher.join(10)
    assert results and not searcher.is_alive()
    hits = manager.search_semantic("interface", k=4)
    assert hits[0].decision.coordinate == VectorCoordinate(2, 1, 2)
    assert len(hits) == 3
