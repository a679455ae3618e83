"""What the PostgreSQL plugin declares when it registers: its URL schemes and its options model.

deckhand checks ``connection_string`` and ``database.options`` against them when agent.yaml
is loaded, without logging or echoing secrets, and ``deckhand schema`` lists them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.config import load_agent_config
from deckhand.errors import ConfigError

TOOL = "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n    database:\n      provider: postgres\n"


def _error(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_agent_config(path)
    return path, str(err.value)


def test_no_secret_in_validation_messages(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    path, message = _error(tmp_path, TOOL + "      connection_string: mysql://admin:hunter2-secret@db/x\n")
    assert message == (
        f"{path}: tools[0].database: connection_string for provider 'postgres' must start with postgresql:// "
        "or postgres://"
    )
    assert "hunter2-secret" not in message and "hunter2-secret" not in caplog.text


def test_options_are_validated_at_load(tmp_path: Path) -> None:
    url = "      connection_string: postgresql://u:p@localhost/db\n"
    path, message = _error(tmp_path, TOOL + url + "      options: {ef_serach: 10}\n")
    assert message.startswith(
        f"{path}: tools[0].database.options.ef_serach: unknown option (did you mean 'ef_search'? store 'postgres' "
        "accepts M, ef_construction, ef_search, "
    )
    path, message = _error(tmp_path, TOOL + url + "      options: {M: 1}\n")
    assert message == f"{path}: tools[0].database.options.M: Input should be greater than or equal to 2 (got 1)"
    path.write_text(TOOL + url + "      options: {M: 8, pool_max_size: 2}\n")
    database = load_agent_config(path).tools[0].database
    assert database is not None and database.options == {"M": 8, "pool_max_size": 2}


def test_schema_lists_the_postgres_options() -> None:
    schema = json.loads(CliRunner().invoke(cli, ["schema"]).stdout)
    assert {"M", "ef_search", "pool_max_size"} <= set(schema["$defs"]["PostgresOptions"]["properties"])
    rules = [
        rule["then"]
        for rule in schema["$defs"]["DatabaseConfig"]["allOf"]
        if "postgres" in rule["if"]["properties"]["provider"]["enum"]
    ]
    assert rules[0]["properties"]["options"] == {"$ref": "#/$defs/PostgresOptions"}
