"""A password from ``${VAR}`` never shows when a real PostgreSQL refuses it, whole or in part.

The core suite (``core/tests/test_secrets_never_leak.py``) covers the failures that need no
server; here the server answers: the password is wrong (``@``, ``:``, ``/``, ``%``, ``#`` and
non-ASCII in it, so a URL parser also cuts it at the wrong place), and every output is searched:
the command's stdout and stderr at ``-vv``, every log record, the MCP tool results.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from deckhand.agents.toolbox import Toolbox
from deckhand.cli.main import cli
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.secrets import leaked_pieces

pytestmark = pytest.mark.postgres

#: The first reaches the server, which refuses it; in the others ``@`` and ``/`` move the host, ``#`` cuts the URL.
MARKERS = ["Mk7:Zq%25ñø€-Wx9", "Wrong@TailLeak99", "Pg#Mk7:/%40ñø€@Zq", "Qx9%2F@pa55:wörd"]


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    root = logging.getLogger()
    handler, level = Keep(logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield seen
    root.removeHandler(handler)
    root.setLevel(level)


def _logged(records: list[logging.LogRecord]) -> str:
    formatter = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    return "\n".join(formatter.format(r) for r in records)


@pytest.mark.parametrize("secret", MARKERS)
def test_a_refused_password_never_shows(
    tmp_path: Path,
    postgres_url: str,
    secret: str,
    records: list[logging.LogRecord],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parts = urlsplit(postgres_url)
    monkeypatch.setenv("DH_PG_PASSWORD", secret)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tides.md").write_text("# Tides\n\nSpring tides follow the full moon.\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - name: harbour\n    type: vectorstore\n    source: docs\n    database:\n"
        "      provider: postgres\n"
        f"      connection_string: postgresql://{parts.username}:${{DH_PG_PASSWORD}}@{parts.hostname}:{parts.port}"
        f"{parts.path}\n"
    )
    shown = ""
    for args in (["-vv", "ingest"], ["-vv", "search", "tides", "--allow-fallback"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code != 0 or "--allow-fallback" in args, result.output  # (a moved host is unreachable)
        shown += result.output + result.stderr + repr(result.exception)
    assert not leaked_pieces(shown, [secret]), shown

    async def nothing(progress: float, total: float | None, message: str | None) -> None:
        return None

    box = Toolbox.from_config(tmp_path / "agent.yaml", memory=False, search_wait=2)
    app = DeckhandMcpServer(box)
    answers: list[dict[str, Any]] = []
    try:
        for name, arguments in [("deckhand_ingest", {}), ("harbour", {"query": "tides"}), ("deckhand_list_tools", {})]:
            answers.append(asyncio.run(app.call(name, arguments, nothing)))
    finally:
        box.close()
    if secret == MARKERS[0]:
        assert "password authentication failed" in repr(answers), answers
    assert not leaked_pieces(repr(answers), [secret]), answers
    assert not leaked_pieces(_logged(records), [secret]), _logged(records)[-3000:]
