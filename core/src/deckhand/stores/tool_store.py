"""Opening a tool's collection from plain settings: the store's factory, the fallback policy (docs/cli.md), the
integrity and compatibility checks, and the mark of a complete ingestion."""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhand.bases import StoreBase
from deckhand.capabilities import integrity_check, side_index_storage
from deckhand.errors import ConfigError, IndexCorruptError, ModelMismatchError
from deckhand.plugins import Component
from deckhand.types import CollectionSpec

log = logging.getLogger("deckhand")


def create_store(component: Component, config: Any, collection: str, *, base_dir: Path) -> StoreBase:
    """Build (not open) ``collection``'s store with ``component``'s factory, the one place factories are called:
    ``factory(config, collection, options, base_dir=base_dir)`` (:class:`deckhand.registration.StoreFactory`)."""
    store: StoreBase = component.create(
        config, collection, options=dict(config.options or {}), validate=True, base_dir=base_dir
    )
    return store


@dataclass(frozen=True)
class FallbackPolicy:
    """``allow``: the command line's explicit choice (None: not given); ``default``: the command's default."""

    allow: bool | None = None
    default: bool = True

    def allows(self, configured: bool | None) -> bool:
        """Whether to fall back, given the database's ``allow_fallback`` (``configured``; None: not set)."""
        if self.allow is not None:
            return self.allow
        return configured if configured is not None else self.default


_policy: ContextVar[FallbackPolicy | None] = ContextVar("deckhand_fallback_policy", default=None)


def fallback_allowed(configured: bool | None) -> bool:
    """Whether a store opened now falls back to in-memory, its database saying ``configured`` (see above)."""
    return (_policy.get() or FallbackPolicy()).allows(configured)


@contextmanager
def fallback_policy(allow: bool | None, *, default: bool = True) -> Iterator[None]:
    """Stores opened inside the block fall back to in-memory per ``allow`` (None: the config, else ``default``)."""
    token = _policy.set(FallbackPolicy(allow, default))
    try:
        yield
    finally:
        _policy.reset(token)


def open_checked(store: StoreBase, spec: CollectionSpec, force: bool, *, verify: bool = False) -> CollectionSpec | None:
    """``store.open(spec)``; with ``force`` or ``verify``, a store with the ``integrity_check`` capability is checked
    first, so neither a rebuild nor an ingest misses damage a plain open does not notice."""
    try:
        check = integrity_check(store) if force or verify else None
        if check is not None:
            check.verify_integrity()
        return store.open(spec)
    except IndexCorruptError:
        if not force:
            store.close()
            raise
        store.drop()  # a store raising IndexCorruptError sets the damaged file aside here (never deleted)
        return store.open(spec)


def check_collection(
    name: str,
    store: StoreBase,
    previous: CollectionSpec,
    spec: CollectionSpec,
    force: bool,
    before_rebuild: Callable[[StoreBase], None] | None = None,
) -> None:
    """Rebuild (with ``force``) or refuse tool ``name``'s index built with another model, dimension, metric or
    algorithm; nothing is dropped if ``before_rebuild(store)`` raises, and an empty collection is recreated."""
    model_changed = previous.embedding_model != spec.embedding_model or previous.dimension != spec.dimension
    layout = [
        f"{label} {old.value} but the configuration now uses {new.value}"
        for label, old, new in (
            ("distance_metric", previous.metric, spec.metric),
            ("vector_algorithm", previous.algorithm, spec.algorithm),
        )
        if old != new
    ]
    if not model_changed and not layout:
        return
    if store.count() == 0:  # e.g. a first ingest whose embedder failed: no vectors of the old settings to keep
        log.info("tool %s: the index holds no chunks; creating it anew for %s", name, spec.embedding_model)
        store.drop()
        store.open(spec)
        return
    if not force:
        store.close()
        if model_changed:
            raise ModelMismatchError(
                f"tool {name!r}: the index was built with embedding model {previous.embedding_model!r} "
                f"({previous.dimension} dims) but the configuration now uses {spec.embedding_model!r} "
                f"({spec.dimension} dims); run again with --force-ingest to rebuild it",
                previous_model=previous.embedding_model,
            )
        changes = "; ".join(layout)
        raise ConfigError(
            f"tool {name!r}: the index was built with {changes}; run again with --force-ingest to rebuild it"
        )
    if before_rebuild is not None:
        try:
            before_rebuild(store)
        except BaseException:
            store.close()  # untouched
            raise
    log.info("tool %s: the index settings changed; rebuilding the index", name)
    store.drop()
    store.open(spec)


#: Side index (see ``SQLiteStore.save_side_index``) marking the records version a complete ingestion ended at.
COMPLETE_MARK = "ingest/complete"


def mark_complete(store: StoreBase, started: float | None = None) -> None:
    """Record that the store's records are those of a complete ingestion started at ``started`` (epoch seconds)."""
    side = side_index_storage(store)
    if side is not None:
        data = struct.pack("<d", started) if started is not None else b""
        side.save_side_index(COMPLETE_MARK, side.records_version(), data)


def ingest_started(store: StoreBase) -> float | None:
    """When the complete ingestion the store's records come from started (:func:`mark_complete`); None: unknown."""
    side = side_index_storage(store)
    found = side.load_side_index(COMPLETE_MARK) if side is not None else None
    if found is None or len(found[1]) != 8:
        return None
    started: float = struct.unpack("<d", found[1])[0]
    return started


def is_complete(store: StoreBase) -> bool:
    """Whether the last write to ``store`` ended a complete ingestion (True where the store cannot say)."""
    side = side_index_storage(store)
    return side is None or side.load_side_index(COMPLETE_MARK) is not None
