"""``deckhand migrate`` from the embedded sqlite store to a real PostgreSQL (pgvector): every record, vector and
manifest entry arrives, nothing is embedded, and the tool searches the new store at once; an unreachable server is
one line without the password."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.testing.migration_kit import check_migrates_from_sqlite
from deckhand_postgres.server import free_port

pytestmark = pytest.mark.postgres

SECRET = "n0t-the-Pa55word"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # no user-level config leaks in
    return tmp_path


def test_sqlite_to_postgres(env: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    index = f"migrate_{uuid.uuid4().hex[:8]}"
    target = {"provider": "postgres", "connection_string": postgres_url, "index_name": index}
    check_migrates_from_sqlite(env, target, monkeypatch)


def test_unreachable_target_is_one_line_without_the_password(env: Path) -> None:
    (env / "docs").mkdir()
    (env / "docs" / "tides.md").write_text("# Tides\n\nSpring tides follow the full and the new moon.\n")
    url = f"postgresql://deckhand:{SECRET}@127.0.0.1:{free_port()}/vectors"
    configs = {}
    for name, database in (
        ("old", {"provider": "sqlite"}),
        ("new", {"provider": "postgres", "connection_string": url}),
    ):
        configs[name] = env / f"{name}.yaml"
        tool = {"type": "vectorstore", "name": "harbour", "source": "docs", "database": database}
        configs[name].write_text(yaml.safe_dump({"tools": [tool]}))
    runner = CliRunner()
    assert runner.invoke(cli, ["-c", str(configs["old"]), "ingest"]).exit_code == 0
    refused = runner.invoke(cli, ["-c", str(configs["old"]), "migrate", "--to", str(configs["new"])])
    assert refused.exit_code == 1
    assert (
        refused.stderr.startswith("error: tool 'harbour' of ")
        and "postgresql://deckhand:***@127.0.0.1:" in refused.stderr
    )
    assert SECRET not in refused.output and refused.stderr.count("\n") == 1
