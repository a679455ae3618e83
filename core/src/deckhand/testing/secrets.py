"""Checks that a secret never shows: its pieces, and which of them a text holds.

A test puts a marker secret into a ``${VAR}`` field, triggers a failure, and asserts
``leaked_pieces(output, [marker]) == []`` over everything a person or an agent could see. A
piece is any :data:`~deckhand.redaction.MIN_PIECE`-character run of the secret, or of its
URL-quoted forms, compared without case (deckhand masks exactly these).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from deckhand.redaction import MIN_PIECE


def secret_pieces(secret: str) -> set[str]:
    """Every piece of ``secret`` and of its URL-quoted forms, lower case."""
    found: set[str] = set()
    for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
        low = form.lower()
        found |= {low[i : i + MIN_PIECE] for i in range(len(low) - MIN_PIECE + 1)}
    return found


def leaked_pieces(text: str, secrets: Iterable[str]) -> list[str]:
    """The pieces of ``secrets`` that ``text`` shows, sorted (empty when none)."""
    low = text.lower()
    return sorted({piece for secret in secrets for piece in secret_pieces(secret) if piece in low})


@contextlib.contextmanager
def log_records() -> Iterator[list[logging.LogRecord]]:
    """Every log record of every logger, at every level, while the block runs (the root logger at DEBUG)."""
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    root = logging.getLogger()
    handler, level = Keep(logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield seen
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def logged_text(records: Iterable[logging.LogRecord]) -> str:
    """The records as a handler prints them (message arguments filled in)."""
    formatter = logging.Formatter("%(levelname)s %(name)s: %(message)s")
    return "\n".join(formatter.format(r) for r in records)


def cli_shown(result: Any) -> str:
    """Everything a click ``Result`` showed: its output, its stderr where captured apart, and the traceback of an
    exception other than ``SystemExit``."""
    import traceback

    text: str = result.output
    with contextlib.suppress(ValueError):  # (stderr is not captured apart on every click version)
        text += result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        text += "".join(traceback.format_exception(result.exception))
    return text


def refused_store_outputs(agent: Path, tool: str, query: str) -> tuple[str, str]:
    """What a person and an agent see when the store of ``tool`` refuses its credentials.

    Runs ``deckhand -vv ingest`` (which must fail) and ``deckhand -vv search QUERY --allow-fallback``
    in the agent's directory (the caller ``chdir``s there), then the MCP calls ``deckhand_ingest``,
    the tool's search and ``deckhand_list_tools``. Returns the CLI text (stdout, stderr, exception)
    and the MCP answers' ``repr``, for :func:`leaked_pieces`.
    """
    import asyncio

    from click.testing import CliRunner

    from deckhand.calls.toolbox import Toolbox
    from deckhand.cli.main import cli
    from deckhand.mcp.server import DeckhandMcpServer

    shown = ""
    for args in (["-vv", "ingest"], ["-vv", "search", query, "--allow-fallback"]):
        result = CliRunner().invoke(cli, ["-c", str(agent), *args])
        assert result.exit_code != 0 or "--allow-fallback" in args, result.output
        shown += result.output + result.stderr + repr(result.exception)

    async def nothing(progress: float, total: float | None, message: str | None) -> None:
        return None

    box = Toolbox.from_config(agent, memory=False, search_wait=2)
    app = DeckhandMcpServer(box)
    answers: list[dict[str, Any]] = []
    try:
        for name, arguments in [("deckhand_ingest", {}), (tool, {"query": query}), ("deckhand_list_tools", {})]:
            answers.append(asyncio.run(app.call(name, arguments, nothing)))
    finally:
        box.close()
    return shown, repr(answers)
