"""What the Redis plugin declares when it registers: its URL schemes and its options model.

deckhand checks ``connection_string`` and ``database.options`` against them when agent.yaml
or config.yaml is loaded, and ``deckhand schema`` lists them (no server needed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.config import load_agent_config, resolve_database
from deckhand.errors import ConfigError

TOOL = "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n    database:\n      provider: redis\n"


def _error(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_agent_config(path)
    return path, str(err.value)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "      connection_string: http://localhost:6379\n",
            "tools[0].database: connection_string for provider 'redis' must start with redis:// or rediss:// or unix://",
        ),
        ("", "tools[0].database: connection_string is required for provider 'redis' (e.g. redis://host:port)"),
        (
            "      connection_string: redis://localhost:6379\n      options: {ef_runtme: 10}\n",
            "tools[0].database.options.EF_RUNTME: unknown option (did you mean 'EF_RUNTIME'? store 'redis' accepts "
            "M, EF_CONSTRUCTION, EF_RUNTIME, CONNECT_TIMEOUT, SOCKET_TIMEOUT, BATCH_SIZE)",
        ),
        (
            "      connection_string: redis://localhost:6379\n      options: {M: 1}\n",
            "tools[0].database.options.M: Input should be greater than or equal to 2 (got 1)",
        ),
    ],
)
def test_agent_yaml_is_checked_against_what_the_plugin_declares(tmp_path: Path, extra: str, message: str) -> None:
    path, error = _error(tmp_path, TOOL + extra)
    assert error == f"{path}: {message}"


def test_options_are_case_insensitive(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(TOOL + "      connection_string: rediss://h:6380\n      options: {ef_runtime: 20, M: 8}\n")
    database = load_agent_config(path).tools[0].database
    assert database is not None and database.options == {"ef_runtime": 20, "M": 8}


def test_global_config_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / ".deckhand").mkdir()
    (tmp_path / ".deckhand" / "config.yaml").write_text(
        "vectorstore:\n  provider: redis\n  connection_string: http://x\n"
    )
    with pytest.raises(ConfigError) as err:
        resolve_database(None, cwd=tmp_path, home=tmp_path / "h")
    assert str(err.value) == (
        f"{tmp_path / '.deckhand' / 'config.yaml'}: vectorstore: connection_string for provider 'redis' "
        "must start with redis:// or rediss:// or unix://"
    )


def test_schema_lists_the_redis_options_and_schemes() -> None:
    schema = json.loads(CliRunner().invoke(cli, ["schema", "--global"]).stdout)
    assert set(schema["$defs"]["RedisOptions"]["properties"]) == {
        "M",
        "EF_CONSTRUCTION",
        "EF_RUNTIME",
        "CONNECT_TIMEOUT",
        "SOCKET_TIMEOUT",
        "BATCH_SIZE",
    }
    rules = {
        tuple(rule["if"]["properties"]["provider"]["enum"]): rule["then"]
        for rule in schema["$defs"]["DatabaseConfig"]["allOf"]
    }
    redis = rules[("redis",)]
    assert redis["properties"]["options"] == {"$ref": "#/$defs/RedisOptions"}
    assert redis["properties"]["connection_string"]["pattern"] == "^(redis://|rediss://|unix://)"
    assert redis["required"] == ["connection_string"]


@pytest.mark.parametrize("name", ["kb\n", "kb\r\n", "k b", "kb:x", "", "kb/.."])
def test_a_collection_name_is_matched_whole(name: str) -> None:
    """Issue 40, case 3: ``kb\\n`` passed (a ``$`` also matches before a final newline) into Redis key names."""
    from deckhand.errors import StoreError
    from deckhand_redis.layout import Layout

    assert Layout("idx", "kb.v2-x_1").prefix == "idx:kb.v2-x_1:"
    with pytest.raises(StoreError, match="may only use letters"):
        Layout("idx", name)
