"""What each bridged store hands its Semantic Kernel collection class, checked without the services: the
connector module is replaced by a stand-in that records the call (the live kits cover chromadb and qdrant;
the managed providers' kits need accounts, see test_bridge_live_services.py)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

pytest.importorskip(
    "deckhand_semantic_kernel", reason="the plugin is not installed here: nox -s \"tests(package='semantic-kernel')\""
)

from deckhand.config.models import DatabaseConfig
from deckhand_semantic_kernel.stores.connectors import STORE_CLASSES
from deckhand_semantic_kernel.stores.register import OPTIONS
from pydantic import SecretStr

NAME = "dh-deckhand_vectors-kb"
DEFINITION = object()

#: provider → (connection_string, options, the keyword arguments its SK collection must be given).
MANAGED: dict[str, tuple[str | None, dict[str, Any], dict[str, Any]]] = {
    "azure-ai-search": (
        "https://acme.search.windows.net",
        {"api_key": "k1"},
        {"collection_name": NAME, "search_endpoint": "https://acme.search.windows.net", "api_key": "k1"},
    ),
    "pinecone": (
        None,
        {"api_key": "k2", "namespace": "ns", "use_grpc": True},
        {"collection_name": NAME, "api_key": "k2", "namespace": "ns", "use_grpc": True},
    ),
    "mongodb": (
        "mongodb+srv://u:p@host",
        {"database_name": "db"},
        {"collection_name": NAME, "connection_string": "mongodb+srv://u:p@host", "database_name": "db"},
    ),
    "azure-cosmos-mongo": (
        "mongodb://host",
        {},
        {"collection_name": NAME, "connection_string": "mongodb://host", "database_name": None},
    ),
    "azure-cosmos-nosql": (
        "https://acme.documents.azure.com",
        {"key": "k3", "database_name": "db", "create_database": False},
        {
            "collection_name": NAME,
            "url": "https://acme.documents.azure.com",
            "key": "k3",
            "database_name": "db",
            "create_database": False,
        },
    ),
    "sql-server": (
        "Driver=x;Server=y",
        {},
        {"collection_name": NAME.replace("-", "_"), "connection_string": "Driver=x;Server=y"},
    ),
    "faiss": (None, {}, {"collection_name": NAME}),
}


def _stand_in(monkeypatch: pytest.MonkeyPatch, connector: str) -> list[dict[str, Any]]:
    module_name, _, class_name = connector.partition(":")
    calls: list[dict[str, Any]] = []

    def collection_class(**kwargs: Any) -> object:
        calls.append(kwargs)
        return object()

    module = types.ModuleType(module_name)
    setattr(module, class_name, collection_class)
    monkeypatch.setitem(sys.modules, module_name, module)
    return calls


def test_every_provider_names_its_connector_class() -> None:
    for provider, cls in STORE_CLASSES.items():
        module, _, name = cls.connector.partition(":")
        assert module.startswith("semantic_kernel.connectors.") and name.endswith("Collection"), provider


@pytest.mark.parametrize("provider", sorted(MANAGED))
def test_managed_connector_gets_its_connection_settings(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    url, options, expected = MANAGED[provider]
    cls = STORE_CLASSES[provider]
    calls = _stand_in(monkeypatch, cls.connector)
    config = DatabaseConfig(provider=provider, connection_string=url)
    store = cls(config, "kb", options=OPTIONS[provider].model_validate(options))  # type: ignore[call-arg]
    store._build_collection(None, NAME, DEFINITION)
    [call] = calls
    sent = {k: v.get_secret_value() if isinstance(v, SecretStr) else v for k, v in call.items()}
    assert sent.pop("record_type") is dict and sent.pop("definition") is DEFINITION
    assert sent == expected


@pytest.mark.parametrize("provider", ["chromadb", "qdrant"])
def test_client_connector_gets_the_sessions_client(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    cls = STORE_CLASSES[provider]
    calls = _stand_in(monkeypatch, cls.connector)
    store = object.__new__(cls)  # the client comes from _session: nothing is opened here
    client = object()
    store._build_collection(client, NAME, DEFINITION)
    assert calls == [{"record_type": dict, "definition": DEFINITION, "collection_name": NAME, "client": client}]
