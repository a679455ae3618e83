"""A key given to this plugin's components never shows, whole or in any 4-character piece, on any failure path.

The core suite (``core/tests/test_secrets_never_leak.py``) runs without this plugin, so there the
``llm`` reranker and context generator only reach "plugin not installed". Here, installed, the key
of the ``llm`` reranker, the ``llm`` context generator and the remote embedder (``api_key`` written
``${VAR}``, or ``api_key_env``; ASCII and non-ASCII markers holding ``@ : / % #``) meets every
failure reachable without a real service: an unreachable host, a stand-in that answers 400, 401 or
500 with the whole ``Authorization`` header in its body (a 400's message is shown), an invalid
option. Searched: stdout and stderr of ``deckhand -vv ingest``/``search``, every log record,
tracebacks, and the MCP tool results.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _chat_server import ChatServer, serve_chat
from _embedding_server import EmbeddingServer, serve_embeddings
from click.testing import CliRunner
from deckhand.api import Toolbox, redact
from deckhand.cli.main import cli
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.secrets import cli_shown, leaked_pieces, log_records, logged_text

#: ASCII (an HTTP header can carry it, so a server can echo it) and not (the request cannot be sent).
MARKERS = {
    "DH_SECRET_E": "Ctx#K3y:9/Zq%40Wm@x",
    "DH_SECRET_C": "Mk7@Zq:/%#ñø€-Wx9",
}
ASCII = MARKERS["DH_SECRET_E"]


def _echoed(headers: dict[str, str]) -> bytes:
    """An error body that repeats the request's whole Authorization header (a careless proxy's)."""
    message = f"refused Authorization: {headers.get('authorization', '')}"
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()


class EchoingChat(ChatServer):
    """The chat stand-in, whose error answers echo the key back."""

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        status, extra, payload = super().answer(body, headers)
        return status, extra, (payload if status == 200 else _echoed(headers))


class EchoingEmbeddings(EmbeddingServer):
    """The embeddings stand-in, whose error answers echo the key back."""

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        status, extra, payload = super().answer(path, body, headers)
        return status, extra, (payload if status == 200 else _echoed(headers))


@dataclass(frozen=True)
class Case:
    """One component holding a key (``{url}``: the stand-in's base URL), and what it fails on."""

    name: str
    #: The tool's lines holding the key.
    tool_extra: str
    #: The stand-in that answers (``chat``/``embeddings``), or "" for none.
    server: str = ""
    #: The status every request gets (400, 401, 500).
    status: int = 0


def _reranker(key: str, url: str = "http://127.0.0.1:1/v1") -> str:
    return f"    reranker: {{name: llm, base_url: '{url}', model: m, {key}, max_retries: 0}}\n"


def _context(key: str, url: str = "http://127.0.0.1:1/v1") -> str:
    return (
        "    contextual_embeddings: {enabled: true, generator: llm, options: "
        f"{{base_url: '{url}', model: m, {key}, max_retries: 0}}}}\n"
    )


def _embedder(key: str, url: str = "http://127.0.0.1:1/v1") -> str:
    return f"    embedding_model: {{name: openai-compatible, base_url: '{url}', model: m, {key}, max_retries: 0}}\n"


ENV_E, ENV_C, VALUE_E, VALUE_C = (
    "api_key_env: DH_SECRET_E",
    "api_key_env: DH_SECRET_C",
    "api_key: '${DH_SECRET_E}'",
    "api_key: '${DH_SECRET_C}'",
)
#: Invalid: a list where the key goes (with an invalid number beside it); the key where its variable's name goes.
INVALID = "api_key: ['${DH_SECRET_E}', '${DH_SECRET_C}'], max_retries: -1"
KEY_FOR_ITS_NAME = "api_key_env: '${DH_SECRET_C}'"

CASES = [
    Case("llm-reranker-unreachable", _reranker(ENV_E)),
    Case("llm-reranker-unreachable-not-ascii", _reranker(ENV_C)),
    Case("llm-reranker-value-unreachable", _reranker(VALUE_C)),
    Case("llm-reranker-401-echoes", _reranker(ENV_E, "{url}"), "chat", 401),
    Case("llm-reranker-400-echoes", _reranker(ENV_E, "{url}"), "chat", 400),  # the server's words are shown
    Case("llm-reranker-500-echoes", _reranker(VALUE_E, "{url}"), "chat", 500),
    Case("llm-reranker-not-ascii-to-server", _reranker(ENV_C, "{url}"), "chat", 401),
    Case("llm-reranker-invalid-option", _reranker(INVALID)),
    Case("llm-reranker-key-for-its-name", _reranker(KEY_FOR_ITS_NAME)),
    Case("llm-context-unreachable", _context(ENV_E)),
    Case("llm-context-unreachable-not-ascii", _context(ENV_C)),
    Case("llm-context-401-echoes", _context(ENV_E, "{url}"), "chat", 401),
    Case("llm-context-400-echoes", _context(ENV_E, "{url}"), "chat", 400),  # the server's words are shown
    Case("llm-context-500-echoes", _context(VALUE_E, "{url}"), "chat", 500),
    Case("llm-context-not-ascii-to-server", _context(VALUE_C, "{url}"), "chat", 500),
    Case("llm-context-invalid-option", _context(INVALID)),
    Case("llm-context-key-for-its-name", _context(KEY_FOR_ITS_NAME)),
    Case("embedder-unreachable", _embedder(VALUE_E)),
    Case("embedder-unreachable-not-ascii", _embedder(ENV_C)),
    Case("embedder-401-echoes", _embedder(VALUE_E, "{url}"), "embeddings", 401),
    Case("embedder-400-echoes", _embedder(VALUE_E, "{url}"), "embeddings", 400),  # the server's words are shown
    Case("embedder-500-echoes", _embedder(ENV_E, "{url}"), "embeddings", 500),
    Case("embedder-not-ascii-to-server", _embedder(VALUE_C, "{url}"), "embeddings", 401),
    Case("embedder-invalid-option", _embedder(INVALID)),
    Case("embedder-key-for-its-name", _embedder(KEY_FOR_ITS_NAME)),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, secret in MARKERS.items():
        monkeypatch.setenv(name, secret)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Backups\n\nBackups run nightly at two.\n\n## Restores\n\nAsk the on-call.\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Every log record of every logger, at every level."""
    with log_records() as seen:
        yield seen


@contextlib.contextmanager
def _served(case: Case) -> Iterator[ChatServer | EmbeddingServer | None]:
    """The case's stand-in, answering every request with its status, or None."""
    if case.server == "chat":
        with serve_chat(EchoingChat(reply=lambda prompt: "9", always_status=case.status)) as chat:
            yield chat
    elif case.server == "embeddings":
        with serve_embeddings(EchoingEmbeddings(dimension=16, always=str(case.status))) as embeddings:
            yield embeddings
    else:
        yield None


def _write(project: Path, case: Case, url: str) -> Path:
    (project / "agent.yaml").write_text(
        "name: secrets\ntools:\n  - name: docs\n    type: hierarchical_document\n    source: docs\n"
        + case.tool_extra.replace("{url}", url),
        encoding="utf-8",
    )
    return project / "agent.yaml"


def _assert_clean(where: str, text: str, secrets: Iterable[str] = MARKERS.values()) -> None:
    found = leaked_pieces(text, secrets)
    assert not found, f"{where} shows pieces of a secret {found}:\n{text[-3000:]}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_commands_never_show_a_key(project: Path, case: Case, records: list[logging.LogRecord]) -> None:
    runner = CliRunner()
    everything = ""
    with _served(case) as server:
        _write(project, case, server.url if server else "")
        for args in (
            ["-vv", "ingest", "--no-fallback"],
            ["-vv", "search", "backups", "--allow-fallback"],
            ["-vv", "search", "backups", "--json", "--no-fallback"],
        ):
            shown = cli_shown(runner.invoke(cli, args))
            _assert_clean(f"deckhand {' '.join(args)}", shown)
            everything += shown
        if case.status and "DH_SECRET_E" in case.tool_extra:
            assert server is not None and any(ASCII in h.get("authorization", "") for h in server.headers), (
                f"the ASCII key never reached the stand-in: {server.headers if server else None}"
            )
    _assert_clean("the log records", logged_text(records))
    if case.status == 400 and "DH_SECRET_E" in case.tool_extra:  # the echo was shown, masked
        assert "refused Authorization: Bearer ***" in everything + logged_text(records)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_mcp_results_never_show_a_key(project: Path, case: Case, records: list[logging.LogRecord]) -> None:
    async def nothing(progress: float, total: float | None, message: str | None) -> None:
        return None

    with _served(case) as server:
        config = _write(project, case, server.url if server else "")
        try:
            box = Toolbox.from_config(config, memory=False, search_wait=2)
        except Exception as exc:  # what `deckhand mcp` prints when the configuration cannot be served
            _assert_clean("the toolbox's error", redact(str(exc)))
            _assert_clean("the toolbox's traceback", "".join(traceback.format_exception(exc)))
            _assert_clean("the log records", logged_text(records))
            return
        answers: list[dict[str, Any]] = []
        try:
            app = DeckhandMcpServer(box)
            for name, arguments in [
                ("deckhand_ingest", {}),
                ("docs", {"query": "backups"}),
                ("deckhand_list_tools", {}),
            ]:
                answers.append(asyncio.run(app.call(name, arguments, nothing)))
        finally:
            box.close()
    _assert_clean("the MCP results", repr(answers))
    _assert_clean("the log records", logged_text(records))


def test_markers_are_real_pieces() -> None:
    """The check itself can fail: the echoing stand-ins' bodies hold the ASCII key's pieces."""
    assert leaked_pieces(_echoed({"authorization": f"Bearer {ASCII}"}).decode(), [ASCII])
    for secret in MARKERS.values():
        assert leaked_pieces(f"error: {secret[3:9]} refused", [secret])
