"""Exit codes scripts can trust, against a real Redis: a refused password is a configuration error
(exit 3, no fallback anywhere); an unreachable server fails ``deckhand ingest`` (exit 1) unless the
fallback is allowed, and falls back for ``search`` unless ``--no-fallback`` (or ``--strict``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
import yaml
from click.testing import CliRunner, Result
from deckhand.cli.main import cli
from deckhand_redis.hints import SERVER_EXTRA_INSTALL
from deckhand_redis.server import RedisServer

pytestmark = pytest.mark.redis


def _agent(tmp_path: Path, url: str, **database: object) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "tides.md").write_text("# Tides\n\nSpring tides follow the full and the new moon.\n")
    config = tmp_path / "agent.yaml"
    tool = {
        "type": "vectorstore",
        "name": "harbour",
        "source": "docs",
        "database": {"provider": "redis", "connection_string": url, **database},
    }
    config.write_text(yaml.safe_dump({"tools": [tool]}))
    return config


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def closed_url() -> Iterator[str]:
    with RedisServer() as server:
        url = server.url
    yield url.replace("redis://", "redis://:hunter2pw@")  # the server is gone: nothing listens there


def test_wrong_password_exits_3_without_fallback(tmp_path: Path, redis_url: str) -> None:
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        client.config_set("requirepass", "right-password")
        client.close()
        config = _agent(tmp_path, server.url.replace("redis://", "redis://:wrong-password@"))
        for args in (["ingest"], ["ingest", "--allow-fallback"], ["search", "spring tides"]):
            result = _run("-c", str(config), *args)
            assert result.exit_code == 3, (args, result.stderr)
            assert result.stderr.startswith("error: tool harbour: Redis at redis://:***@127.0.0.1:"), result.stderr
            assert "refused the credentials" in result.stderr and "wrong-password" not in result.stderr
            assert "in-memory" not in result.stderr and "[in-memory]" not in result.stdout


def test_unreachable_server_fails_ingest_unless_fallback_is_allowed(
    tmp_path: Path, closed_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = _agent(tmp_path, closed_url)
    refused = _run("-c", str(config), "ingest")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: tool harbour: cannot reach Redis at redis://:***@127.0.0.1:")
    assert refused.stderr.endswith(
        "; to use the in-memory store for this run instead, pass --allow-fallback "
        "(or set database.allow_fallback: true)\n"
    )
    assert refused.stderr.count("\n") == 1 and "hunter2pw" not in refused.stderr

    allowed = _run("-c", str(config), "ingest", "--allow-fallback")
    assert allowed.exit_code == 0, allowed.stderr
    assert "falling back to the in-memory store for this run" in caplog.text
    assert "harbour [in-memory]: 1 ingested" in allowed.stderr

    searched = _run("-c", str(config), "search", "spring tides")  # interactive commands fall back by default
    assert searched.exit_code == 0 and "Source: docs/tides.md" in searched.stdout
    strict = _run("-c", str(config), "search", "--no-fallback", "spring tides")
    assert strict.exit_code == 1 and strict.stderr.startswith("error: tool harbour: cannot reach Redis at")


def test_the_config_switch_and_the_flag_override_it(tmp_path: Path, closed_url: str) -> None:
    allowed = _agent(tmp_path, closed_url, allow_fallback=True)
    assert _run("-c", str(allowed), "ingest").exit_code == 0
    assert _run("-c", str(allowed), "ingest", "--no-fallback").exit_code == 1
    strict = _run("-c", str(allowed), "search", "--strict", "spring tides")  # --strict is --no-fallback
    assert strict.exit_code == 1 and strict.stdout == ""
    assert strict.stderr.startswith("error: tool harbour: cannot reach Redis at redis://:***@127.0.0.1:")
    assert strict.stderr.count("\n") == 1 and "hunter2pw" not in strict.stderr
    denied = _agent(tmp_path, closed_url, allow_fallback=False)
    assert _run("-c", str(denied), "search", "spring tides").exit_code == 1
    assert _run("-c", str(denied), "search", "--allow-fallback", "spring tides").exit_code == 0


def test_the_strict_example_of_docs_cli_md(tmp_path: Path, closed_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md's --strict example, run as written (on a port where nothing listens)."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "cli.md").read_text()
    section = text[text.index("## When a store server is unreachable") :]
    config = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    command, shown = re.search(r"```\n\$ (.*)\n(.*)\n```", section).groups()  # type: ignore[union-attr]
    port = str(urlsplit(closed_url).port)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tides.md").write_text("# Tides\n\nSpring tides follow the full and the new moon.\n")
    (tmp_path / "agent.yaml").write_text(config.replace("6390", port))
    monkeypatch.chdir(tmp_path)
    strict = _run(*shlex.split(command)[1:])
    assert strict.exit_code == 1
    # The docs show a published install's hint; installed from this checkout, it names the plugin's directory.
    shown = shown.replace('pip install "deckhand-ai-redis[server]"', SERVER_EXTRA_INSTALL)
    assert strict.stderr == shown.replace("6390", port) + "\n"
    fallback = _run(*[a for a in shlex.split(command)[1:] if a != "--strict"])
    assert fallback.exit_code == 0 and "Source: docs/tides.md:1" in fallback.stdout
