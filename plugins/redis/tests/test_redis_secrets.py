"""A password from ``${VAR}`` never shows when a real Redis refuses it, whole or in part.

The core suite (``core/tests/test_secrets_never_leak.py``) covers the failures that need no
server; here a Redis started with a password (``requirepass``) answers a wrong one, and
markers holding ``@ : / % #`` and non-ASCII characters also break the URL (the issue's
``RdPw-Zq8@x:y/7%Secret`` printed ``invalid Redis URL redis://:***@x:y/7%Secret@...``).
Searched: the command's stdout and stderr at ``-vv``, every log record, the MCP tool results.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from deckhand.testing.secrets import leaked_pieces, log_records, logged_text, refused_store_outputs
from deckhand_redis.server import RedisServer

pytestmark = pytest.mark.redis

#: The first reaches the server, which refuses it; the others break the URL.
MARKERS = ["Mk7:Zq%25ñø€-Wx9", "RdPw-Zq8@x:y/7%Secret", "Pg#Mk7:/%40ñø€@Zq"]


@pytest.fixture(scope="module")
def guarded() -> Iterator[RedisServer]:
    """A Redis that wants a password nobody in this module gives."""
    with RedisServer() as server:
        client: Any = redis.Redis.from_url(server.url)
        client.config_set("requirepass", "the-right-one-9f3c")
        client.close()
        yield server


@pytest.mark.parametrize("secret", MARKERS)
def test_a_refused_password_never_shows(
    tmp_path: Path,
    guarded: RedisServer,
    secret: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DH_REDIS_PASSWORD", secret)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tides.md").write_text("# Tides\n\nSpring tides follow the full moon.\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - name: harbour\n    type: vectorstore\n    source: docs\n    database:\n"
        f"      provider: redis\n      connection_string: redis://default:${{DH_REDIS_PASSWORD}}@127.0.0.1:{guarded.port}/0\n"
    )
    with log_records() as records:
        shown, answers = refused_store_outputs(tmp_path / "agent.yaml", "harbour", "tides")
    assert not leaked_pieces(shown, [secret]), shown
    if secret == MARKERS[0]:
        assert "check the user name and password" in answers, answers
    assert not leaked_pieces(answers, [secret]), answers
    assert not leaked_pieces(logged_text(records), [secret]), logged_text(records)[-3000:]
