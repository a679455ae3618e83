"""``database.options`` of provider weaviate: defaults, one-line errors naming the key, the API key kept secret."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from deckhand.config.loading import load_agent_config
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ConfigError
from deckhand.plugins import PluginRegistry
from deckhand_weaviate.connection import Endpoints
from deckhand_weaviate.options import WeaviateOptions
from deckhand_weaviate.queries import FUSION
from pydantic import ValidationError

KEY = "wv-Secret-Key-9f3a"


def test_defaults() -> None:
    options = WeaviateOptions.parse({})
    assert options.grpc_port == 50051 and options.api_key is None
    assert options.hybrid_alpha == 0.5 and options.hybrid_fusion == "relative_score"
    assert set(FUSION) == {"relative_score", "ranked"}


@pytest.mark.parametrize(
    ("options", "field", "fragment"),
    [
        ({"hybrid_alpha": 1.5}, "hybrid_alpha", "less than or equal to 1"),
        ({"hybrid_fusion": "rrf"}, "hybrid_fusion", "'relative_score' or 'ranked'"),
        ({"grpc_port": 0}, "grpc_port", "greater than or equal to 1"),
        ({"batch_size": "many"}, "batch_size", "valid integer"),
        ({"ef_construction": 2}, "ef_construction", "greater than or equal to 4"),
        ({"hybird_alpha": 0.3}, "hybird_alpha", "Extra inputs are not permitted"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(options: dict[str, object], field: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        WeaviateOptions.parse(options)
    message = str(info.value)
    assert message.startswith(f"database.options.{field}: "), message
    assert fragment in message and "\n" not in message
    assert "(weaviate options: api_key, batch_size," in message


def test_the_api_key_never_shows() -> None:
    options = WeaviateOptions.parse({"api_key": KEY})
    assert options.api_key_value() == KEY
    for text in (repr(options), str(options), options.model_dump_json(), str(options.model_dump())):
        assert KEY not in text
    numeric = WeaviateOptions.parse({"api_key": 12345678})  # YAML read an unquoted key as a number
    assert numeric.api_key_value() == "12345678"
    for bad in ({"k": KEY}, [KEY]):
        with pytest.raises(ConfigError) as info:
            WeaviateOptions.parse({"api_key": bad})
        assert KEY not in str(info.value) and "${WEAVIATE_API_KEY}" in str(info.value)
    with pytest.raises(ConfigError, match=r"database.options.api_key: is empty: is the environment variable"):
        WeaviateOptions.parse({"api_key": "  "})


def test_the_registry_checks_options_and_the_url_scheme() -> None:
    registry = PluginRegistry()
    context = {"registry": registry}
    ok = DatabaseConfig.model_validate(
        {"provider": "weaviate", "connection_string": "http://localhost:8080", "options": {"hybrid_alpha": 0.2}},
        context=context,
    )
    assert ok.options == {"hybrid_alpha": 0.2}
    with pytest.raises(ValidationError, match="must start with http:// or https://"):
        DatabaseConfig.model_validate(
            {"provider": "weaviate", "connection_string": "weaviate://localhost"}, context=context
        )
    with pytest.raises(ValidationError, match="connection_string is required for provider 'weaviate'"):
        DatabaseConfig.model_validate({"provider": "weaviate"}, context=context)


def test_agent_yaml_with_the_key_from_an_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEAVIATE_API_KEY", KEY)
    (tmp_path / "docs").mkdir()
    database = {
        "provider": "weaviate",
        "connection_string": "http://localhost:8080",
        "options": {"api_key": "${WEAVIATE_API_KEY}", "grpc_port": 50052},
    }
    path = tmp_path / "agent.yaml"
    path.write_text(
        yaml.safe_dump({"tools": [{"type": "vectorstore", "name": "kb", "source": "docs", "database": database}]})
    )
    config = load_agent_config(path)
    tool_db = config.tools[0].database  # type: ignore[union-attr]
    assert tool_db is not None
    assert WeaviateOptions.parse(tool_db.options).api_key_value() == KEY

    database["options"] = {"api_key": "${WEAVIATE_API_KEY}", "grpc_port": "fifty"}
    path.write_text(
        yaml.safe_dump({"tools": [{"type": "vectorstore", "name": "kb", "source": "docs", "database": database}]})
    )
    with pytest.raises(ConfigError) as info:
        load_agent_config(path)
    assert "tools[0].database.options.grpc_port" in str(info.value) and KEY not in str(info.value)


def test_endpoints_from_the_url_and_options() -> None:
    plain = Endpoints.of("http://localhost:8080", WeaviateOptions())
    assert (plain.http_host, plain.http_port, plain.http_secure) == ("localhost", 8080, False)
    assert (plain.grpc_host, plain.grpc_port, plain.grpc_secure) == ("localhost", 50051, False)
    cloud = Endpoints.of(
        "https://abc.weaviate.cloud", WeaviateOptions(grpc_host="grpc-abc.weaviate.cloud", grpc_port=443)
    )
    assert (cloud.http_port, cloud.http_secure, cloud.grpc_host, cloud.grpc_port, cloud.grpc_secure) == (
        443,
        True,
        "grpc-abc.weaviate.cloud",
        443,
        True,
    )
    assert Endpoints.of("https://h:9", WeaviateOptions(grpc_secure=False)).grpc_secure is False


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("localhost:8080", "expected http://host:port"),
        ("ftp://localhost", "expected http://host:port"),
        ("http://localhost:8080/v1", "give only scheme, host and port"),
        (f"http://localhost:8080?api_key={KEY}", "put the API key in database.options.api_key"),
        (f"http://admin:{KEY}@localhost:8080", "give only scheme, host and port"),
        ("http://localhost:99999", "expected http://host:8080"),
    ],
)
def test_a_bad_url_is_a_config_error_without_secrets(url: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        Endpoints.of(url, WeaviateOptions())
    message = str(info.value)
    assert fragment in message and KEY not in message and "\n" not in message
