"""Opening a tool's collection: the configured store, the unreachable-server fallback, and the
compatibility check against the settings the index was built with.

Fallback policy: when the configured server cannot be reached, a tool uses the in-memory
store for the run if fallback is allowed. Whether it is: the command line's choice
(:func:`fallback_policy`, set by ``--allow-fallback/--no-fallback``), else the database's
``allow_fallback``, else the caller's default (``deckhand ingest`` refuses, search/chat/test
and library use fall back). Authentication and permission errors never fall back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from deckhand.config.loading import resolve_database
from deckhand.config.models import IN_MEMORY, DatabaseConfig
from deckhand.errors import ConfigError, ModelMismatchError, StoreAuthenticationError, StoreConnectionError
from deckhand.plugins import PluginRegistry
from deckhand.protocols import Embedder, VectorStore
from deckhand.redaction import redact_url
from deckhand.types import CollectionSpec

log = logging.getLogger("deckhand")


@dataclass(frozen=True)
class FallbackPolicy:
    """``allow``: the command line's explicit choice (None: not given); ``default``: the command's default."""

    allow: bool | None = None
    default: bool = True

    def allows(self, database: DatabaseConfig) -> bool:
        if self.allow is not None:
            return self.allow
        if database.allow_fallback is not None:
            return database.allow_fallback
        return self.default


_policy: ContextVar[FallbackPolicy | None] = ContextVar("deckhand_fallback_policy", default=None)


@contextmanager
def fallback_policy(allow: bool | None, *, default: bool = True) -> Iterator[None]:
    """Stores opened inside the block fall back to in-memory per ``allow`` (None: the config, else ``default``)."""
    token = _policy.set(FallbackPolicy(allow, default))
    try:
        yield
    finally:
        _policy.reset(token)


def open_store(
    registry: PluginRegistry,
    database: DatabaseConfig | None,
    collection: str,
    spec: CollectionSpec,
    *,
    cwd: Path | None = None,
) -> tuple[VectorStore, CollectionSpec | None, DatabaseConfig]:
    """Open the tool's store per the precedence rules; fall back to in-memory if the server is down.

    Returns the store, the spec the collection had before (None if new), and the database
    configuration actually used.
    """
    config, origin = resolve_database(database, cwd=cwd)
    log.debug("tool %s: database %s (from %s)", collection, config.provider, origin)
    component = registry.resolve("store", config.provider)
    try:
        store: VectorStore = component.factory(config, collection)
        previous = store.open(spec)
        return store, previous, config
    except StoreAuthenticationError as exc:  # a configuration error: never a reason to fall back
        raise StoreAuthenticationError(f"tool {collection}: {exc}") from None
    except (ConnectionError, TimeoutError) as exc:  # StoreConnectionError, or a plugin's raw socket error
        if config.provider == IN_MEMORY:
            raise
        where = f" at {redact_url(config.connection_string)}" if config.connection_string else ""
        if not (_policy.get() or FallbackPolicy()).allows(config):
            raise StoreConnectionError(
                f"tool {collection}: {redact_url(str(exc))}; to use the in-memory store for this run instead, "
                "pass --allow-fallback (or set database.allow_fallback: true)"
            ) from None
        log.warning(
            "tool %s: cannot reach %s%s (%s); falling back to the in-memory store for this run",
            collection,
            config.provider,
            where,
            redact_url(str(exc)),
        )
        fallback = DatabaseConfig(provider=IN_MEMORY)
        store = registry.resolve("store", IN_MEMORY).factory(fallback, collection)
        return store, store.open(spec), fallback


def check_collection(
    name: str, store: VectorStore, previous: CollectionSpec, spec: CollectionSpec, force: bool
) -> None:
    """Rebuild (with ``force``) or refuse tool ``name``'s index built with another model, dimension, metric or
    algorithm (shared by every tool type)."""
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
    if not force:
        store.close()
        if model_changed:
            raise ModelMismatchError(
                f"tool {name!r}: the index was built with embedding model {previous.embedding_model!r} "
                f"({previous.dimension} dims) but the configuration now uses {spec.embedding_model!r} "
                f"({spec.dimension} dims); run again with --force-ingest to rebuild it"
            )
        changes = "; ".join(layout)
        raise ConfigError(
            f"tool {name!r}: the index was built with {changes}; run again with --force-ingest to rebuild it"
        )
    log.info("tool %s: the index settings changed; rebuilding the index", name)
    store.drop()
    store.open(spec)


def open_collection(
    registry: PluginRegistry,
    name: str,
    database: DatabaseConfig | None,
    embedder: Embedder,
    *,
    base_dir: Path,
    force_ingest: bool,
) -> tuple[VectorStore, DatabaseConfig]:
    """Open tool ``name``'s collection for ``embedder``'s vectors, as the vectorstore tool does.

    The database is resolved first (tool > project > user > in-memory) so the collection is
    created with the metric and algorithm of whichever configuration applies; an index built
    with other settings is refused unless ``force_ingest`` (see :func:`check_collection`).
    """
    config, origin = resolve_database(database, cwd=base_dir)
    log.debug("tool %s: database %s from %s", name, config.provider, origin)
    spec = CollectionSpec(
        name=name,
        dimension=embedder.dimension,
        embedding_model=embedder.model_id,
        metric=config.distance_metric,
        algorithm=config.vector_algorithm,
    )
    store, previous, used = open_store(registry, config, name, spec, cwd=base_dir)
    if previous is not None:
        check_collection(name, store, previous, spec, force_ingest)
    return store, used
