"""The bridged providers: one :class:`~.bridge.BridgeStore` subclass per Semantic Kernel connector.

Each says how its database is reached and what its connector needs worked around; the traps
named here were measured with semantic-kernel 1.45, chromadb 1.5 and qdrant-client 1.15.
Semantic Kernel and the connector's own packages are imported only when a store is built.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from deckhand.api import Algorithm, CollectionSpec, ConfigError, DatabaseConfig, StoreCapability, state_dir

from deckhand_semantic_kernel.stores import runner
from deckhand_semantic_kernel.stores.bridge import BridgeStore, NameRule
from deckhand_semantic_kernel.stores.lease import Lease, forget, lease_for
from deckhand_semantic_kernel.stores.options import (
    AzureAISearchOptions,
    BridgeOptions,
    ChromaOptions,
    CosmosNoSqlOptions,
    FaissOptions,
    MongoOptions,
    PineconeOptions,
    QdrantOptions,
    SqlServerOptions,
)
from deckhand_semantic_kernel.stores.query import SOURCE_KEY_FIELD, FilterStyle

PERSISTENT = frozenset({StoreCapability.PERSISTENT})
#: A managed connector's options model.
OptionsT = TypeVar("OptionsT", bound=BridgeOptions)


def _local_path(value: str | None, base_dir: Path, default: str) -> Path:
    """A directory option resolved against the agent's directory (default: under its state directory)."""
    if not value:
        return state_dir(base_dir) / default
    path = Path(value).expanduser()
    return path if path.is_absolute() else base_dir / path


class _ServerSession:
    """A long-lived handle to a database server, built on first use."""

    def __init__(self, build: Any) -> None:
        self._build = build
        self.handle: Any = None

    @contextlib.contextmanager
    def use(self) -> Iterator[Any]:
        if self.handle is None:
            self.handle = self._build()
        yield self.handle


class _ClientStore(BridgeStore):
    """Connectors given a client that the bridge opens: on a local directory, shared by the stores of this process
    through a :class:`~.lease.Lease` (keyed by the provider's name), or on a server, built on first use."""

    def __init__(self, config: DatabaseConfig, collection: str, *, batch_size: int) -> None:
        super().__init__(config, collection, batch_size=batch_size)
        self._lease: Lease | None = None
        self._server: _ServerSession | None = None

    def _session(self, *, write: bool) -> contextlib.AbstractContextManager[Any]:
        if self._lease is not None:
            return self._lease.client(write=write)
        assert self._server is not None
        return self._server.use()

    def _release(self) -> None:
        if self._lease is not None:
            forget(self.provider, self._lease)
            self._lease = None


class ChromaStore(_ClientStore):
    """Chroma through ``semantic_kernel.connectors.chroma``: an embedded directory or a Chroma server.

    Traps: SK's ``upsert`` calls Chroma's ``add``, which keeps an existing record unchanged, so
    the bridge deletes the keys first; Chroma's distances (1 - cos, squared L2, 1 - ip) are
    converted by the score table; Chroma has only HNSW indexes.
    """

    provider = "chromadb"
    capabilities = PERSISTENT
    upsert_overwrites = False
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.HNSW: "hnsw"}
    name_rule = NameRule(max_length=512)
    connector = "semantic_kernel.connectors.chroma:ChromaCollection"

    def __init__(self, config: DatabaseConfig, collection: str, *, base_dir: Path, options: ChromaOptions) -> None:
        super().__init__(config, collection, batch_size=options.batch_size)
        self.options = options
        url = config.connection_string
        if url or options.host:
            self._server = _ServerSession(lambda: _chroma_http(url, options))
        else:
            path = _local_path(options.persist_directory or options.path, base_dir, "chromadb")
            self._lease = lease_for("chromadb", path, _chroma_open, _chroma_close, keep_open=True)

    def _create_arguments(self, spec: CollectionSpec) -> dict[str, Any]:
        hnsw = {
            "ef_search": self.options.ef_search,
            "ef_construction": self.options.ef_construction,
            "max_neighbors": self.options.max_neighbors,
        }
        return {"configuration": {"hnsw": hnsw}}


def _chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)  # offline: no usage reports


def _chroma_open(path: Path) -> Any:
    import chromadb

    return chromadb.PersistentClient(path=str(path), settings=_chroma_settings())


def _chroma_close(client: Any) -> None:
    client.close()


def _chroma_http(url: str | None, options: ChromaOptions) -> Any:
    from urllib.parse import urlsplit

    import chromadb

    if url:
        parts = urlsplit(url)
        host, port, ssl = (
            parts.hostname or "localhost",
            parts.port or (443 if parts.scheme == "https" else 8000),
            (parts.scheme == "https"),
        )
    else:
        host, port, ssl = str(options.host), options.port, False
    return chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=_chroma_settings())


class QdrantStore(_ClientStore):
    """Qdrant through ``semantic_kernel.connectors.qdrant``: the client's local mode or a Qdrant server.

    Traps: point ids must be UUIDs or integers (the bridge's keys are UUIDv5); SK's hybrid search
    splits a keyword query into characters, so the store offers no keyword search; a filter of
    one comparison crashes SK's search (the filter is always compound, see :mod:`.query`);
    ``ensure_collection_exists`` fails on an existing collection and creates no payload index
    (the bridge checks first, and indexes ``source_key`` on a server); FLAT is Qdrant's exact
    search (``SearchParams(exact=True)``); SK 1.45 calls ``AsyncQdrantClient.search``, which
    qdrant-client 1.16 removed (the extra pins ``qdrant-client<1.16``).
    """

    provider = "qdrant"
    capabilities = PERSISTENT
    filter_style = FilterStyle.COMPOUND
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.HNSW: "hnsw", Algorithm.FLAT: "hnsw"}
    name_rule = NameRule(max_length=255)
    connector = "semantic_kernel.connectors.qdrant:QdrantCollection"

    def __init__(self, config: DatabaseConfig, collection: str, *, base_dir: Path, options: QdrantOptions) -> None:
        super().__init__(config, collection, batch_size=options.batch_size)
        self.options = options
        url = config.connection_string or options.url
        if url == ":memory:":
            raise ConfigError("database.connection_string: ':memory:' keeps nothing; use provider: in-memory instead")
        if url:
            self._server = _ServerSession(lambda: _qdrant_server(url, options))
        else:
            path = _local_path(options.path, base_dir, "qdrant")
            self._lease = lease_for("qdrant", path, _qdrant_open, _qdrant_close)

    def _search_extra(self, spec: CollectionSpec) -> dict[str, Any]:
        if self._lease is not None:
            return {}  # local mode always searches exhaustively
        from qdrant_client.models import SearchParams

        if spec.algorithm is Algorithm.FLAT:
            return {"search_params": SearchParams(exact=True)}
        if self.options.hnsw_ef:
            return {"search_params": SearchParams(hnsw_ef=self.options.hnsw_ef)}
        return {}

    def _after_create(self, handle: Any, name: str) -> None:
        if self._lease is not None:
            return  # local mode has no payload indexes
        from qdrant_client.models import PayloadSchemaType

        runner.run(handle.create_payload_index(name, SOURCE_KEY_FIELD, field_schema=PayloadSchemaType.KEYWORD))

    def _release(self) -> None:
        super()._release()
        if self._server is not None and self._server.handle is not None:
            runner.run(self._server.handle.close())
            self._server.handle = None


def _qdrant_open(path: Path) -> Any:
    from qdrant_client import AsyncQdrantClient

    return AsyncQdrantClient(path=str(path))


def _qdrant_close(client: Any) -> None:
    runner.run(client.close())


def _qdrant_server(url: str, options: QdrantOptions) -> Any:
    from qdrant_client import AsyncQdrantClient

    api_key = options.api_key.get_secret_value() if options.api_key else None
    grpc = url.startswith("qdrant+grpc://")
    if grpc:
        url = "http://" + url.removeprefix("qdrant+grpc://")
    return AsyncQdrantClient(url=url, api_key=api_key, prefer_grpc=grpc or options.prefer_grpc)


class _ManagedStore(BridgeStore, Generic[OptionsT]):
    """Connectors whose SK collection builds and owns its client from connection settings."""

    capabilities = PERSISTENT

    def __init__(self, config: DatabaseConfig, collection: str, *, options: OptionsT) -> None:
        super().__init__(config, collection, batch_size=options.batch_size)
        self.options = options

    def _session(self, *, write: bool) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext(None)

    def _release(self) -> None:
        for _, collection in list(self._collections.values()):
            with contextlib.suppress(Exception):
                runner.run(collection.__aexit__(None, None, None))
        self._collections.clear()


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None


class AzureAISearchStore(_ManagedStore[AzureAISearchOptions]):
    """Azure AI Search: index names are lower-case with dashes; ``@search.score`` is rescaled per metric."""

    provider = "azure-ai-search"
    name_rule = NameRule(lower_dash=True, max_length=128)
    connector = "semantic_kernel.connectors.azure_ai_search:AzureAISearchCollection"

    def _connection_arguments(self, handle: Any) -> dict[str, Any]:
        return {"search_endpoint": self.config.connection_string, "api_key": _secret(self.options.api_key)}


class PineconeStore(_ManagedStore[PineconeOptions]):
    """Pinecone: index names are lower-case with dashes, at most 45 characters; euclidean scores are squared."""

    provider = "pinecone"
    name_rule = NameRule(lower_dash=True, max_length=45)
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.HNSW: "default", Algorithm.FLAT: "default"}
    connector = "semantic_kernel.connectors.pinecone:PineconeCollection"

    def _connection_arguments(self, handle: Any) -> dict[str, Any]:
        return {
            "api_key": _secret(self.options.api_key),
            "namespace": self.options.namespace,
            "use_grpc": self.options.use_grpc,
        }


class _MongoStore(_ManagedStore[MongoOptions]):
    """The MongoDB connectors: a connection string and a database name."""

    def _connection_arguments(self, handle: Any) -> dict[str, Any]:
        return {"connection_string": self.config.connection_string, "database_name": self.options.database_name}


class MongoDBAtlasStore(_MongoStore):
    """MongoDB Atlas vector search: ``vectorSearchScore`` is ``(1 + x) / 2`` for cosine and dot product."""

    provider = "mongodb"
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.HNSW: "hnsw", Algorithm.FLAT: "hnsw"}
    connector = "semantic_kernel.connectors.mongodb:MongoDBAtlasCollection"


class CosmosMongoStore(_MongoStore):
    """Azure Cosmos DB for MongoDB (vCore)."""

    provider = "azure-cosmos-mongo"
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.HNSW: "hnsw", Algorithm.FLAT: "ivf_flat"}
    connector = "semantic_kernel.connectors.azure_cosmos_db:CosmosMongoCollection"


class CosmosNoSqlStore(_ManagedStore[CosmosNoSqlOptions]):
    """Azure Cosmos DB for NoSQL: ``VectorDistance`` is a similarity for cosine and dot, a distance for euclidean."""

    provider = "azure-cosmos-nosql"
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.HNSW: "disk_ann", Algorithm.FLAT: "flat"}
    connector = "semantic_kernel.connectors.azure_cosmos_db:CosmosNoSqlCollection"

    def _connection_arguments(self, handle: Any) -> dict[str, Any]:
        return {
            "url": self.config.connection_string,
            "key": _secret(self.options.key),
            "database_name": self.options.database_name,
            "create_database": self.options.create_database,
        }


class SqlServerStore(_ManagedStore[SqlServerOptions]):
    """SQL Server / Azure SQL: ``VECTOR_DISTANCE`` returns distances (cosine distance, L2, negative dot)."""

    provider = "sql-server"
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.FLAT: "flat", Algorithm.HNSW: "flat"}
    connector = "semantic_kernel.connectors.sql_server:SqlServerCollection"

    def _collection_name(self, name: str) -> str:
        return name.replace("-", "_")  # a table name: no dashes

    def _connection_arguments(self, handle: Any) -> dict[str, Any]:
        return {"connection_string": self.config.connection_string}


class FaissStore(_ManagedStore[FaissOptions]):
    """FAISS: exact flat indexes held by the collection object, nothing on disk (declares no persistence).

    FAISS has no cosine index; cosine is the inner product of vectors normalised by the bridge.
    """

    provider = "faiss"
    capabilities = frozenset()
    index_kinds: ClassVar[dict[Algorithm, str]] = {Algorithm.FLAT: "flat", Algorithm.HNSW: "flat"}
    connector = "semantic_kernel.connectors.faiss:FaissCollection"

    def _connection_arguments(self, handle: Any) -> dict[str, Any]:
        return {}  # the collection object holds the index itself

    def _release(self) -> None:
        self._collections.clear()  # the collection objects hold the data: nothing else to close


STORE_CLASSES: dict[str, type[BridgeStore]] = {
    cls.provider: cls
    for cls in (
        ChromaStore,
        QdrantStore,
        AzureAISearchStore,
        PineconeStore,
        MongoDBAtlasStore,
        CosmosMongoStore,
        CosmosNoSqlStore,
        SqlServerStore,
        FaissStore,
    )
}
