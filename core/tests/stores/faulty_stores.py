"""Store plugins with one fault each: the store conformance kit must fail every one of them.

``test_store_kit_catches_faults.py`` copies this module into a temporary directory as the
package of a throwaway ``deckhand`` entry point (``faulty``) and runs the kit against each
store in a separate pytest process. Each class keeps to its one fault; everything else
comes from the builtin in-memory store.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from deckhand.api import (
    Algorithm,
    CollectionSpec,
    FileState,
    InMemoryStore,
    Metric,
    Record,
    Registrar,
    SearchHit,
    StoreBase,
    StoreCapability,
    Vector,
    hookimpl,
    state_dir,
)


class UndeclaredKeywordStore(InMemoryStore):
    """Implements keyword_search without declaring it (tools would use it; the kit would never test it)."""

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]:
        return []


class UndeclaredIntegrityStore(InMemoryStore):
    """Implements verify_integrity without declaring StoreCapability.INTEGRITY_CHECK (written before it existed)."""

    def verify_integrity(self) -> None:
        return None


class MissingSideIndexStore(InMemoryStore):
    """Declares side indexes and has none of their methods."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.SIDE_INDEXES})


class BrokenKeywordStore(InMemoryStore):
    """Declares keyword_search, which finds nothing."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.KEYWORD_SEARCH})

    def keyword_search(self, query: str, k: int, *, sources: Sequence[str] | None = None) -> list[SearchHit]:
        return []


class MissingKeywordStore(InMemoryStore):
    """Declares keyword_search and has no such method (a store that lost it)."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.KEYWORD_SEARCH})


class IgnoredFilterStore(InMemoryStore):
    """Declares filters and ignores them: every filtered search answers as if unfiltered."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.FILTERS})

    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Any = None,
    ) -> list[SearchHit]:
        return super().search(vector, k, min_score=min_score, sources=sources)


class UndeclaredIgnoredFilterStore(IgnoredFilterStore):
    """Takes where= without declaring filters, and ignores it (a filter silently dropped)."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()


class UndeclaredFilterStore(InMemoryStore):
    """Applies filters (the in-memory store's) without declaring them: the kit would never test them."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()


_SHARED: dict[tuple[str, ...], InMemoryStore] = {}


class ModuleDictStore(InMemoryStore):
    """'Persistent' through a module-level dict: every connection of this process shares the data."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.PERSISTENT})

    @classmethod
    def connect(cls, config: Any, collection: str) -> InMemoryStore:
        return _SHARED.setdefault(("dict", config.index_name, collection), cls(collection))


class NoNamespaceStore(ModuleDictStore):
    """Shares collections by name only, ignoring ``index_name``."""

    @classmethod
    def connect(cls, config: Any, collection: str) -> InMemoryStore:
        return _SHARED.setdefault(("no-namespace", collection), cls(collection))


def _shared(name: str) -> Any:
    """A method of :class:`StaleReaderStore` that is the shared store's own."""

    def method(self: StaleReaderStore, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._shared, name)(*args, **kwargs)

    return method


class StaleReaderStore(StoreBase):
    """Shares a collection between connections, but each connection searches the vectors it loaded first."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset({StoreCapability.PERSISTENT})

    def __init__(self, shared: InMemoryStore) -> None:
        self._shared = shared
        self._loaded: InMemoryStore | None = None

    @classmethod
    def connect(cls, config: Any, collection: str) -> StaleReaderStore:
        return cls(_SHARED.setdefault(("stale", config.index_name, collection), InMemoryStore(collection)))

    def search(self, vector: Vector, k: int, **options: Any) -> list[SearchHit]:
        if self._loaded is None:
            self._loaded = InMemoryStore(self._shared.collection)
            self._loaded.open(self._shared.spec)
            self._loaded.upsert(list(self._shared.iter_records()))
        return self._loaded.search(vector, k, **options)

    open, drop, upsert, get, count, close = map(_shared, ("open", "drop", "upsert", "get", "count", "close"))
    replace_source, delete_source = _shared("replace_source"), _shared("delete_source")
    manifest, set_file_state, iter_records = map(_shared, ("manifest", "set_file_state", "iter_records"))


class ThreadBoundStore(InMemoryStore):
    """Keeps a sqlite3 connection made with the default ``check_same_thread=True``, as a naive SQLite store does."""

    def __init__(self, collection: str = "default") -> None:
        super().__init__(collection)
        self._db = sqlite3.connect(":memory:")

    def _touch(self) -> None:
        self._db.execute("SELECT 1")

    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        self._touch()
        return super().open(spec)

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        self._touch()
        super().replace_source(source, records, state)

    def search(self, vector: Vector, k: int, **options: Any) -> list[SearchHit]:
        self._touch()
        return super().search(vector, k, **options)

    def close(self) -> None:
        self._db.close()


class CwdStore(InMemoryStore):
    """Writes a file relative to the current directory instead of the state directory."""

    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        Path(f"{spec.name}.lock").touch()
        return super().open(spec)


class JsonFileStore(StoreBase):
    """A whole collection in one JSON file under the state directory, rewritten on every write.

    It persists and is read afresh on every call, so it passes the persistence checks; it
    takes no lock, so two processes writing at once lose each other's updates, yet it
    declares ``concurrent_processes``.
    """

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset(
        {StoreCapability.PERSISTENT, StoreCapability.CONCURRENT_PROCESSES}
    )

    def __init__(self, path: Path, collection: str) -> None:
        self.path = path
        self.collection = collection

    @classmethod
    def connect(cls, config: Any, collection: str, *, base_dir: Path) -> JsonFileStore:
        return cls(state_dir(base_dir) / f"{config.index_name}-{collection}.json", collection)

    def _load(self) -> tuple[dict[str, Any] | None, InMemoryStore]:
        memory = InMemoryStore(self.collection)
        if not self.path.exists():
            return None, memory
        data = json.loads(self.path.read_text(encoding="utf-8"))
        spec = data["spec"]
        memory.open(CollectionSpec(spec[0], spec[1], spec[2], Metric(spec[3]), Algorithm(spec[4])))
        records = data["records"]
        memory.upsert([Record(r[0], r[1], r[2], r[3], np.asarray(r[4], dtype=np.float32), r[5]) for r in records])
        for state in data["manifest"]:
            memory.set_file_state(FileState(*state))
        return data, memory

    def _save(self, memory: InMemoryStore) -> None:
        spec = memory.spec
        data = {
            "spec": [spec.name, spec.dimension, spec.embedding_model, spec.metric.value, spec.algorithm.value],
            "records": [
                [r.id, r.source, r.chunk_index, r.content, r.vector.tolist(), r.metadata] for r in memory.iter_records()
            ],
            "manifest": [list(s.__dict__.values()) for s in memory.manifest().values()],
        }
        time.sleep(0.01)  # a slow write, as a real one is: another writer's update in between is lost
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, self.path)

    def _write(self, action: str, *args: Any) -> None:
        _, memory = self._load()
        getattr(memory, action)(*args)
        self._save(memory)

    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        data, memory = self._load()
        if data is not None:
            return memory.spec
        memory.open(spec)
        self._save(memory)
        return None

    def drop(self) -> None:
        self.path.unlink(missing_ok=True)

    def upsert(self, records: Sequence[Record]) -> None:
        self._write("upsert", records)

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        self._write("replace_source", source, records, state)

    def delete_source(self, source: str) -> None:
        self._write("delete_source", source)

    def set_file_state(self, state: FileState) -> None:
        self._write("set_file_state", state)

    def search(self, vector: Vector, k: int, **options: Any) -> list[SearchHit]:
        return self._load()[1].search(vector, k, **options)

    def get(self, ids: Sequence[str]) -> list[Record]:
        return self._load()[1].get(ids)

    def count(self) -> int:
        return self._load()[1].count()

    def manifest(self) -> dict[str, FileState]:
        return self._load()[1].manifest()

    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        return self._load()[1].iter_records(batch_size)

    def close(self) -> None:
        pass


class UndeclaredJsonFileStore(JsonFileStore):
    """The JSON file store declaring nothing, though its data outlives the process."""

    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset()


STORES: dict[str, Any] = {
    "faulty-undeclared-keyword": UndeclaredKeywordStore.from_config,
    "faulty-broken-keyword": BrokenKeywordStore.from_config,
    "faulty-undeclared-integrity": UndeclaredIntegrityStore.from_config,
    "faulty-missing-side-index": MissingSideIndexStore.from_config,
    "faulty-missing-keyword": MissingKeywordStore.from_config,
    "faulty-module-dict": ModuleDictStore.connect,
    "faulty-no-namespace": NoNamespaceStore.connect,
    "faulty-stale-reader": StaleReaderStore.connect,
    "faulty-thread-bound": ThreadBoundStore.from_config,
    "faulty-cwd": CwdStore.from_config,
    "faulty-ignored-filter": IgnoredFilterStore.from_config,
    "faulty-undeclared-ignored-filter": UndeclaredIgnoredFilterStore.from_config,
    "faulty-undeclared-filter": UndeclaredFilterStore.from_config,
    "faulty-json-file": JsonFileStore.connect,
    "faulty-undeclared-json-file": UndeclaredJsonFileStore.connect,
}

#: Stores that keep files in the project: their factory takes ``base_dir=``.
FILE_STORES = {JsonFileStore.connect, UndeclaredJsonFileStore.connect}


def _typed(factory: Any) -> Any:
    """``factory(config, collection[, base_dir=])`` as the typed store factory (its options are none)."""

    def build(config: Any, collection: str, options: None, /, *, base_dir: Path) -> StoreBase:
        store: StoreBase = (
            factory(config, collection, base_dir=base_dir) if factory in FILE_STORES else factory(config, collection)
        )
        return store

    return build


@hookimpl
def deckhand_register(register: Registrar) -> None:
    for name, factory in STORES.items():
        register.store(
            name,
            _typed(factory),
            description="a store with a deliberate fault (deckhand's kit tests)",
        )
