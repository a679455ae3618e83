"""Exit codes scripts can trust, against a real PostgreSQL: a refused login is a configuration error
(exit 3, no fallback anywhere); an unreachable server fails ``deckhand ingest`` (exit 1) unless the
fallback is allowed."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from click.testing import CliRunner, Result
from deckhand.cli.main import cli
from deckhand_postgres.server import free_port

pytestmark = pytest.mark.postgres

SECRET = "n0t-the-Pa55word"


def _agent(tmp_path: Path, url: str) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "tides.md").write_text("# Tides\n\nSpring tides follow the full and the new moon.\n")
    config = tmp_path / "agent.yaml"
    tool = {
        "type": "vectorstore",
        "name": "harbour",
        "source": "docs",
        "database": {"provider": "postgres", "connection_string": url},
    }
    config.write_text(yaml.safe_dump({"tools": [tool]}))
    return config


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_wrong_password_exits_3_without_fallback(tmp_path: Path, postgres_url: str) -> None:
    parts = urlsplit(postgres_url)
    url = f"postgresql://{parts.username}:{SECRET}@{parts.hostname}:{parts.port}{parts.path}"
    config = _agent(tmp_path, url)
    for args in (["ingest"], ["ingest", "--allow-fallback"], ["search", "spring tides"]):
        result = _run("-c", str(config), *args)
        assert result.exit_code == 3, (args, result.stderr)
        assert result.stderr.startswith("error: tool harbour: PostgreSQL at postgresql://"), result.stderr
        assert 'password authentication failed for user "postgres"' in result.stderr
        assert SECRET not in result.stderr and result.stderr.count("\n") == 1


def test_unreachable_server_fails_ingest_unless_fallback_is_allowed(tmp_path: Path) -> None:
    config = _agent(tmp_path, f"postgresql://deckhand:{SECRET}@127.0.0.1:{free_port()}/vectors")
    refused = _run("-c", str(config), "ingest")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: tool harbour: cannot connect to PostgreSQL at postgresql://deckhand:***@")
    assert "pass --allow-fallback (or set database.allow_fallback: true)" in refused.stderr
    assert SECRET not in refused.stderr
    allowed = _run("-c", str(config), "ingest", "--allow-fallback")
    assert allowed.exit_code == 0 and "harbour [in-memory]: 1 ingested" in allowed.stderr
