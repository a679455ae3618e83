"""A secret given through ``${VAR}`` never shows, whole or in any 4-character piece, on any failure path.

Marker secrets holding ``@ : / % #`` and non-ASCII characters are put into every field that
takes one -- connection strings of each store (as the password, as a query parameter, as the
whole URL), API keys of stores, rerankers and context generators -- and every failure those
configurations can reach without a server is triggered: an unreachable host, a URL the
password breaks (``@`` and ``/`` move the host), a provider that is not installed, an invalid
option. Everything a person or an agent could see is searched for the marker: stdout and
stderr of the commands (``-vv``), every log record at every level (message, exception and
stack), tracebacks of exceptions, MCP tool results. Regression of issue 19 item 1: PostgreSQL
printed ``failed to resolve host 'TailLeak99@127.0.0.1'`` for the password ``Wrong@TailLeak99``.

Servers that refuse the password are tested in the Redis and PostgreSQL plugins
(``test_redis_secrets.py``, ``test_postgres_secrets.py``). The ``llm`` reranker and context generator
live in the openai plugin, which this session does not install: their cases here reach "plugin not
installed"; with the plugin installed, their keys and the remote embedders' (unreachable host, a
server echoing the key in a 400/401/500, invalid options) are tested in ``plugins/openai/tests/test_openai_secrets.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from deckhand.calls.toolbox import Toolbox
from deckhand.cli.main import cli
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.redaction import SECRETS, redact
from deckhand.testing.secrets import cli_shown, leaked_pieces, log_records, logged_text

#: The markers: URL delimiters, percent, hash, non-ASCII; none of their 4-character pieces is an ordinary word.
MARKERS = {
    "DH_SECRET_A": "Wrong@TailLeak99",
    "DH_SECRET_B": "RdPw-Zq8@x:y/7%Secret",
    "DH_SECRET_C": "Mk7@Zq:/%#ñø€-Wx9",
    "DH_SECRET_D": "pA55#wörd/€@:Qz%41",
    "DH_SECRET_E": "Ctx#K3y:9/Zq%40Wm@x",  # ASCII: an HTTP header (Authorization) carries only that
}


def leaks(text: str, secrets: Iterable[str] = MARKERS.values()) -> list[str]:
    """The pieces of ``secrets`` (default: every marker) ``text`` shows (empty when none)."""
    return leaked_pieces(text, secrets)


@dataclass(frozen=True)
class Case:
    """One configuration holding secrets, and what a run of it fails on."""

    name: str
    database: str = ""
    tool_extra: str = ""


def db(*lines: str) -> str:
    """A ``database:`` block's lines."""
    return "\n      ".join(lines)


CASES = [
    Case(
        "postgres-unreachable",
        db("provider: postgres", "connection_string: postgresql://app:${DH_SECRET_A}@127.0.0.1:1/db"),
    ),
    Case(
        "postgres-at-moves-host",
        db("provider: postgres", "connection_string: postgresql://u:${DH_SECRET_A}@127.0.0.1/db"),
    ),
    Case(
        "postgres-slash-hash",
        db("provider: postgres", "connection_string: postgresql://u:${DH_SECRET_C}@127.0.0.1:1/db"),
    ),
    Case("postgres-whole-url", db("provider: postgres", "connection_string: ${DH_URL_PG}")),
    Case(
        "postgres-keywords",
        db("provider: postgres", 'connection_string: "host=127.0.0.1 port=1 password=${DH_SECRET_D}"'),
    ),
    Case("redis-malformed", db("provider: redis", "connection_string: redis://:${DH_SECRET_B}@127.0.0.1:1/0")),
    Case("redis-unreachable", db("provider: redis", "connection_string: redis://default:${DH_SECRET_D}@127.0.0.1:1/0")),
    Case(
        "redis-query-password",
        db("provider: redis", "connection_string: redis://127.0.0.1:1/0?password=${DH_SECRET_C}"),
    ),
    Case("redis-whole-url", db("provider: redis", "connection_string: ${DH_URL_REDIS}")),
    Case("redis-not-a-url", db("provider: redis", "connection_string: ${DH_SECRET_C}")),
    Case(
        "weaviate-api-key",
        db(
            "provider: weaviate",
            "connection_string: http://u:${DH_SECRET_A}@127.0.0.1:1",
            "api_key: ${DH_SECRET_C}",
            "connect_timeout: 1",
        ),
    ),
    Case("sqlite-connection-string", db("provider: sqlite", "connection_string: sqlite:///x?password=${DH_SECRET_B}")),
    Case(
        "unknown-provider",
        db("provider: nosuchstore", "connection_string: x://u:${DH_SECRET_D}@h", "token: ${DH_SECRET_A}"),
    ),
    Case(
        "invalid-option",
        db("provider: redis", "connection_string: redis://:${DH_SECRET_A}@127.0.0.1:1", "api_key: [${DH_SECRET_C}]"),
    ),
    Case(
        "llm-reranker-key",
        tool_extra="    reranker: {name: llm, base_url: 'http://127.0.0.1:1/v1', model: m, api_key_env: DH_SECRET_E,"
        " max_retries: 0}\n",
    ),
    Case(
        "llm-reranker-key-not-ascii",
        tool_extra="    reranker: {name: llm, base_url: 'http://127.0.0.1:1/v1', model: m, api_key_env: DH_SECRET_C}\n",
    ),
    Case(
        "llm-context-key",
        tool_extra="    contextual_embeddings: {enabled: true, generator: llm, options: {base_url: 'http://127.0.0.1:1/v1',"
        " model: m, api_key_env: DH_SECRET_E, max_retries: 0}}\n",
    ),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, secret in MARKERS.items():
        monkeypatch.setenv(name, secret)
    monkeypatch.setenv("DH_URL_PG", f"postgresql://app:{MARKERS['DH_SECRET_B']}@127.0.0.1:1/db")
    monkeypatch.setenv("DH_URL_REDIS", f"redis://:{MARKERS['DH_SECRET_C']}@127.0.0.1:1/0")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Backups\n\nBackups run nightly at two.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Every log record of every logger, at every level, formatted by the handlers that print them."""
    with log_records() as seen:
        yield seen


def _write(project: Path, case: Case) -> Path:
    database = f"    database:\n      {case.database}\n" if case.database else ""
    text = (
        "name: secrets\ntools:\n  - name: docs\n    type: hierarchical_document\n    source: docs\n"
        f"{database}{case.tool_extra}"
    )
    (project / "agent.yaml").write_text(text, encoding="utf-8")
    return project / "agent.yaml"


def _logged(records: list[logging.LogRecord]) -> str:
    return logged_text(records)


def _assert_clean(where: str, text: str, *, ordinary: str = "", secrets: Iterable[str] = MARKERS.values()) -> None:
    """No piece of ``secrets`` in ``text``, except pieces ``ordinary`` (the same output without secrets) has."""
    found = sorted(set(leaks(text, secrets)) - set(leaks(ordinary, secrets)))
    assert not found, f"{where} shows pieces of a secret {found}:\n{text[-3000:]}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_commands_never_show_a_secret(
    project: Path, case: Case, records: list[logging.LogRecord], minilm: object
) -> None:
    _write(project, case)
    runner = CliRunner()
    runs = [
        ["-vv", "ingest", "--no-fallback"],
        ["-vv", "search", "backups", "--allow-fallback"],
        ["-vv", "search", "backups", "--json", "--no-fallback", "--filter", "author=x"],
    ]
    for args in runs:
        result = runner.invoke(cli, args)
        _assert_clean(f"deckhand {' '.join(args)}", cli_shown(result))
    _assert_clean("the log records", _logged(records))


@pytest.mark.parametrize("case", [c for c in CASES if c.database], ids=[c.name for c in CASES if c.database])
def test_mcp_results_and_logs_never_show_a_secret(project: Path, case: Case, records: list[logging.LogRecord]) -> None:
    config = _write(project, case)

    async def nothing(progress: float, total: float | None, message: str | None) -> None:
        return None

    try:
        box = Toolbox.from_config(config, memory=False, search_wait=2)
    except Exception as exc:  # what `deckhand mcp` prints when the configuration cannot be served
        _assert_clean("the toolbox's error", redact(str(exc)))
        _assert_clean("the log records", _logged(records))
        return
    app = DeckhandMcpServer(box)
    answers: list[dict[str, Any]] = []
    try:
        for name, arguments in [
            ("deckhand_ingest", {}),
            ("docs", {"query": "backups"}),
            ("docs", {"query": "backups", "filter": {"metadata": {"level": {"gte": 10**400}}}}),
            ("deckhand_list_tools", {}),
        ]:
            answers.append(asyncio.run(app.call(name, arguments, nothing)))
    finally:
        box.close()
    _assert_clean("the MCP results", repr(answers))
    _assert_clean("the log records", _logged(records))


def test_plugins_and_schema_never_show_a_secret(
    project: Path, records: list[logging.LogRecord], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Secret`` is a word of the schema itself: only what the secrets add would be a leak."""
    _write(project, CASES[0])
    for args in (["-vv", "plugins"], ["-vv", "plugins", "--json"], ["-vv", "schema"], ["-vv", "schema", "--global"]):
        with monkeypatch.context() as env:
            for name in MARKERS:
                env.delenv(name)
            ordinary = cli_shown(CliRunner().invoke(cli, args))
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        _assert_clean(f"deckhand {' '.join(args)}", cli_shown(result), ordinary=ordinary)
    _assert_clean("the log records", _logged(records))


def test_a_secret_split_across_log_arguments_is_masked(records: list[logging.LogRecord]) -> None:
    from deckhand.redaction import register_secret

    register_secret(MARKERS["DH_SECRET_C"])
    log = logging.getLogger("deckhand.test")
    secret = MARKERS["DH_SECRET_C"]
    log.debug("host %s%s", secret[:6], secret[6:])
    log.info("quoted %s and %r", quote(secret, safe=""), secret)
    try:
        raise RuntimeError(f"driver said: {secret.upper()}")
    except RuntimeError:
        log.exception("failed")
    log.warning("stack %s", secret[2:], stack_info=True)
    assert len(records) == 4
    _assert_clean("the log records", _logged(records), secrets=[secret])  # (this file's own name says "leak")
    assert SECRETS


def test_markers_are_real_pieces() -> None:
    """The check itself can fail: each marker's pieces are found in text that holds it."""
    for secret in MARKERS.values():
        assert leaks(f"error: {secret[3:9]} refused")
        assert leaks(quote(secret, safe=""))
    assert not leaks("error: cannot connect to PostgreSQL at postgresql://user:***@127.0.0.1:1/db")
