"""The bridged providers, their extras and the packages each needs (no Semantic Kernel import).

A provider whose packages are missing is still registered, so that ``provider: qdrant`` without
qdrant-client installed is a one-line error naming the command that installs it, not "no plugin
provides 'qdrant'".
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass

from deckhand.api import ComponentNotFoundError, Installation, extras_of
from deckhand.api import install_command as install_requirements

#: This plugin's distribution: the install hints name its extras.
DISTRIBUTION = "deckhand-ai-semantic-kernel"

#: Native deckhand plugins register at priority 0: a provider of the same name from one of them wins.
PRIORITY = -10


@dataclass(frozen=True)
class Provider:
    """One bridged provider."""

    name: str
    #: The extra of this distribution that installs the connector's packages.
    extra: str
    #: Modules that must be importable for the connector to work.
    modules: tuple[str, ...]
    description: str
    #: ``connection_string`` prefixes; empty: optional or free-form.
    url_schemes: tuple[str, ...] = ()
    #: Whether the store kit runs against it in CI (an engine that runs here with no server).
    live: bool = False


PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "chromadb", "chromadb", ("chromadb",), "Chroma via Semantic Kernel (embedded directory or server)", live=True
    ),
    Provider("qdrant", "qdrant", ("qdrant_client",), "Qdrant via Semantic Kernel (local mode or server)", live=True),
    Provider(
        "azure-ai-search",
        "azure-ai-search",
        ("azure.search.documents",),
        "Azure AI Search via Semantic Kernel",
        url_schemes=("https://",),
    ),
    Provider("pinecone", "pinecone", ("pinecone",), "Pinecone via Semantic Kernel"),
    Provider(
        "mongodb",
        "mongodb",
        ("pymongo",),
        "MongoDB Atlas vector search via Semantic Kernel",
        url_schemes=("mongodb://", "mongodb+srv://"),
    ),
    Provider(
        "azure-cosmos-mongo",
        "azure-cosmos-mongo",
        ("pymongo",),
        "Azure Cosmos DB for MongoDB (vCore) via Semantic Kernel",
        url_schemes=("mongodb://", "mongodb+srv://"),
    ),
    Provider(
        "azure-cosmos-nosql",
        "azure-cosmos-nosql",
        ("azure.cosmos",),
        "Azure Cosmos DB for NoSQL via Semantic Kernel",
        url_schemes=("https://",),
    ),
    Provider("sql-server", "sql-server", ("pyodbc",), "SQL Server / Azure SQL vectors via Semantic Kernel"),
    Provider(
        "faiss",
        "faiss",
        ("faiss",),
        "FAISS exact index in this process via Semantic Kernel (not persistent)",
    ),
)

BY_NAME = {provider.name: provider for provider in PROVIDERS}


@functools.cache
def plugin_extras() -> dict[str, tuple[str, ...]]:
    """This distribution's extras and what each requires (empty when run from a source tree)."""
    try:
        return extras_of(importlib.metadata.metadata(DISTRIBUTION))
    except importlib.metadata.PackageNotFoundError:
        return {}


def install_command(provider: Provider, *, where: Installation | None = None) -> str:
    """The command that installs what ``provider`` needs where deckhand is installed: this distribution's extra
    by name from an index, this plugin's directory (with the extra) from a clone of the repository."""
    normalized = re.sub(r"[-_.]+", "-", provider.extra).lower()  # as indexes compare extras (PEP 685)
    extra = provider.extra if normalized in plugin_extras() else None
    return install_requirements(f"{DISTRIBUTION}[{extra}]" if extra else DISTRIBUTION, where=where)


def missing_modules(provider: Provider) -> list[str]:
    """The modules ``provider`` needs that cannot be imported here."""
    missing = []
    for module in provider.modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a missing parent package (azure.* without azure)
            found = False
        if not found:
            missing.append(module)
    return missing


def require(provider: Provider) -> None:
    """Raise the one-line install hint when ``provider``'s packages are missing."""
    missing = missing_modules(provider)
    if missing:
        raise ComponentNotFoundError(
            f"store {provider.name!r} needs {', '.join(missing)}, which is not installed; "
            f"install it with: {install_command(provider)}"
        )
