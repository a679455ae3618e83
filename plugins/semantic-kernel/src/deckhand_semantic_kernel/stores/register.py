"""The ``deckhand`` entry point of the store bridge: registers every provider of :mod:`.providers`.

Registration imports neither Semantic Kernel nor any connector package; a factory imports them
when a store is built, after checking they are installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.api import ConfigError, Registrar, StoreFactory, hookimpl
from pydantic import BaseModel, ValidationError

from deckhand_semantic_kernel.stores.options import (
    AzureAISearchOptions,
    ChromaOptions,
    CosmosNoSqlOptions,
    FaissOptions,
    MongoOptions,
    PineconeOptions,
    QdrantOptions,
    SqlServerOptions,
)
from deckhand_semantic_kernel.stores.providers import (
    PRIORITY,
    PROVIDERS,
    Provider,
    install_command,
    missing_modules,
    require,
)

if TYPE_CHECKING:
    from deckhand.api import DatabaseConfig

OPTIONS: dict[str, type[BaseModel]] = {
    "chromadb": ChromaOptions,
    "qdrant": QdrantOptions,
    "azure-ai-search": AzureAISearchOptions,
    "pinecone": PineconeOptions,
    "mongodb": MongoOptions,
    "azure-cosmos-mongo": MongoOptions,
    "azure-cosmos-nosql": CosmosNoSqlOptions,
    "sql-server": SqlServerOptions,
    "faiss": FaissOptions,
}


def build(provider: Provider, config: Any, collection: str, *, base_dir: Path, options: BaseModel | None = None) -> Any:
    """Build the bridged store ``provider`` names (the registered factory); ``options`` are the validated
    ``database.options`` (parsed from ``config.options`` when a caller passes none)."""
    require(provider)
    from deckhand_semantic_kernel.stores.connectors import STORE_CLASSES

    if options is None:
        try:
            options = OPTIONS[provider.name].model_validate(config.options or {})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "options"
            raise ConfigError(f"database.options.{where}: {error['msg']} (provider {provider.name})") from None
    cls = STORE_CLASSES[provider.name]
    if provider.name in {"chromadb", "qdrant"}:
        return cls(config, collection, base_dir=base_dir, options=options)  # type: ignore[call-arg]
    return cls(config, collection, options=options)  # type: ignore[call-arg]


def _factory(provider: Provider) -> StoreFactory[Any]:
    def factory(config: DatabaseConfig, collection: str, options: BaseModel | None, /, *, base_dir: Path) -> Any:
        return build(provider, config, collection, base_dir=base_dir, options=options)

    factory.__name__ = f"build_{provider.name.replace('-', '_')}"
    return factory


@hookimpl
def deckhand_register(register: Registrar) -> None:
    for provider in PROVIDERS:
        # find_spec imports nothing: listing what is missing costs no start-up time.
        missing = f" (not installed: {install_command(provider)})" if missing_modules(provider) else ""
        register.store(
            provider.name,
            _factory(provider),
            description=provider.description + missing,
            options=OPTIONS[provider.name],
            priority=PRIORITY,
            url_schemes=provider.url_schemes,
        )
