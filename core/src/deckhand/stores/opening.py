"""Opening a tool's collection: the configured store, the unreachable-server fallback, and the
compatibility check against the settings the index was built with."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deckhand.config.loading import resolve_database
from deckhand.config.models import IN_MEMORY, DatabaseConfig
from deckhand.errors import ConfigError, ModelMismatchError
from deckhand.paths import state_dir
from deckhand.plugins import Component, PluginRegistry
from deckhand.protocols import Embedder, VectorStore
from deckhand.redaction import redact_url
from deckhand.types import CollectionSpec

log = logging.getLogger("deckhand")


def _wants_state_dir(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` names a ``state_dir`` parameter (``**kwargs`` alone does not count)."""
    try:
        parameter = inspect.signature(factory).parameters.get("state_dir")
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False
    return parameter is not None and parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)


def create_store(component: Component, config: DatabaseConfig, collection: str, *, base_dir: Path) -> VectorStore:
    """Build (not open) ``collection``'s store with ``component``'s factory, as every tool does.

    The factory is called as ``factory(config, collection)``; one that declares a
    ``state_dir`` parameter also gets ``state_dir=``:func:`deckhand.paths.state_dir`
    ``(base_dir)``, where ``base_dir`` is the agent config's directory, so a file-based
    store puts relative paths under the project's state directory.
    """
    if _wants_state_dir(component.factory):
        store: VectorStore = component.factory(config, collection, state_dir=state_dir(base_dir))
    else:
        store = component.factory(config, collection)
    return store


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
    base_dir = cwd or Path.cwd()
    try:
        store = create_store(component, config, collection, base_dir=base_dir)
        previous = store.open(spec)
        return store, previous, config
    except (ConnectionError, TimeoutError) as exc:  # StoreConnectionError, or a plugin's raw socket error
        if config.provider == IN_MEMORY:
            raise
        where = f" at {redact_url(config.connection_string)}" if config.connection_string else ""
        log.warning(
            "tool %s: cannot reach %s%s (%s); falling back to the in-memory store for this run",
            collection,
            config.provider,
            where,
            redact_url(str(exc)),
        )
        fallback = DatabaseConfig(provider=IN_MEMORY)
        store = create_store(registry.resolve("store", IN_MEMORY), fallback, collection, base_dir=base_dir)
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
