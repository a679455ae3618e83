"""``database.options`` of each bridged provider, as pydantic models (validated when agent.yaml loads).

The field names are those the original platform's ``database:`` blocks used (``persist_directory``,
``path``, ``url``, ``api_key``, ``namespace``, ``database_name``), so its agent.yaml files validate
unchanged; deckhand accepts them at the top of ``database:`` as well as under ``options:``.
Secrets are given as ``${VAR}`` references in agent.yaml and are never printed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class BridgeOptions(BaseModel):
    """Settings every bridged store takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch_size: int = Field(default=500, ge=1, le=10_000, description="Records per upsert or get call.")


class ChromaOptions(BridgeOptions):
    """``provider: chromadb``: an embedded persistent directory, or a Chroma server via connection_string (http://...)."""

    persist_directory: str | None = Field(
        default=None,
        description="Directory of the embedded database (relative to agent.yaml); default <state dir>/chromadb.",
    )
    path: str | None = Field(default=None, description="Same as persist_directory (the original platform's name).")
    host: str | None = Field(default=None, description="Chroma server host (instead of connection_string).")
    port: int = Field(default=8000, ge=1, le=65535, description="Chroma server port, with host.")
    ef_search: int = Field(default=100, ge=1, le=10_000, description="HNSW candidates while searching.")
    ef_construction: int = Field(default=100, ge=1, le=10_000, description="HNSW candidates while building.")
    max_neighbors: int = Field(default=16, ge=2, le=512, description="HNSW edges per node.")


class QdrantOptions(BridgeOptions):
    """``provider: qdrant``: the client's local mode in a directory, or a Qdrant server."""

    path: str | None = Field(
        default=None, description="Local-mode directory (relative to agent.yaml); default <state dir>/qdrant."
    )
    url: str | None = Field(default=None, description="Qdrant server URL (instead of connection_string).")
    api_key: SecretStr | None = Field(default=None, description="Server API key, as ${QDRANT_API_KEY}.")
    prefer_grpc: bool = Field(default=False, description="Talk gRPC to the server.")
    hnsw_ef: int | None = Field(default=None, ge=1, le=10_000, description="Server HNSW candidates while searching.")


class AzureAISearchOptions(BridgeOptions):
    """``provider: azure-ai-search``: connection_string is the service endpoint (https://NAME.search.windows.net)."""

    api_key: SecretStr | None = Field(default=None, description="Admin key, as ${AZURE_AI_SEARCH_API_KEY}.")


class PineconeOptions(BridgeOptions):
    """``provider: pinecone``: serverless indexes reached with an API key."""

    api_key: SecretStr | None = Field(default=None, description="API key, as ${PINECONE_API_KEY}.")
    namespace: str | None = Field(default=None, description="Namespace inside the index.")
    use_grpc: bool = Field(default=False, description="Use the gRPC client.")


class MongoOptions(BridgeOptions):
    """``provider: mongodb`` (Atlas) and ``azure-cosmos-mongo``: connection_string is the mongodb(+srv):// URL."""

    database_name: str | None = Field(default=None, description="Database holding the collections.")


class CosmosNoSqlOptions(BridgeOptions):
    """``provider: azure-cosmos-nosql``: connection_string is the account endpoint (https://NAME.documents.azure.com)."""

    key: SecretStr | None = Field(default=None, description="Account key, as ${AZURE_COSMOS_KEY}.")
    database_name: str | None = Field(default=None, description="Database holding the containers.")
    create_database: bool = Field(default=True, description="Create the database when it does not exist.")


class SqlServerOptions(BridgeOptions):
    """``provider: sql-server``: connection_string is an ODBC connection string (``Driver=...;Server=...``)."""


class FaissOptions(BridgeOptions):
    """``provider: faiss``: an exact FAISS index in this process (SK's connector keeps nothing on disk)."""
