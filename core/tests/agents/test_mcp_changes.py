"""Change notifications through the SDK's own clients: an ingest by another process, and ``deckhand_ingest``.

Three server processes at most (each loads the default embedder once), each over a few short
files: stdio with a 2025 session (both SDK lines), HTTP with a 2025 session and a 2026-07-28
``subscriptions/listen`` stream at once, and docs/mcp.md's listen example over stdio (2.x only).
The other process is a real ``deckhand ingest``. The servers look for changes every 0.2 or 0.5 s
(``--changes-interval``), so each wait is short. The rest runs in-process over fake tools.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from _agent_fakes import box_of, in_thread
from deckhand.calls.toolbox import Toolbox
from deckhand.mcp.sdk import SDK_MAJOR
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import READ_TIMEOUT, HttpServerProcess, call, deckhand_command, memory_session, wire
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_mcp_e2e import DOCS, write_docs

#: Seconds a test waits for a notification (the stamp is looked at every 0.2 s).
WAIT = 20.0
needs_listen = pytest.mark.skipif(SDK_MAJOR < 2, reason="subscriptions/listen (2026-07-28) is served by the SDK 2.x")


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    write_docs(tmp_path)
    config = tmp_path / "agent.yaml"
    config.write_text(
        "name: harbor_agent\ntools:\n  - type: vectorstore\n    name: docs\n    source: docs/\n    top_k: 2\n"
    )
    return config


def _uri(path: Path) -> str:
    return path.resolve().as_uri()


def _ingest_elsewhere(agent: Path) -> None:
    """``deckhand ingest`` in a process of its own (what a CLI user, a cron job or a Ray run does)."""
    done = subprocess.run(
        [*deckhand_command(), "ingest", "--config", str(agent)],
        cwd=agent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "1 ingested" in done.stdout + done.stderr, done.stdout + done.stderr


class _Heard:
    """The change notifications a 2025-era session received: ``(method, uri)`` pairs."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str | None]] = []

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)  # 1.x wraps notifications in a RootModel
        method = getattr(root, "method", None)
        if isinstance(method, str) and method.startswith("notifications/resources/"):
            params = getattr(root, "params", None)
            uri = getattr(params, "uri", None)
            self.items.append((method, None if uri is None else str(uri)))

    async def wait_for(self, *wanted: tuple[str, str | None], timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while not set(wanted) <= set(self.items):
            if time.monotonic() > deadline:
                raise AssertionError(f"never heard {wanted}; heard {self.items}")
            await asyncio.sleep(0.05)


@asynccontextmanager
async def _stdio(agent: Path, heard: _Heard, *extra: str) -> AsyncIterator[ClientSession]:
    command = deckhand_command()
    args = [*command[1:], "mcp", "--config", str(agent), "--changes-interval", "0.2", *extra]
    params = StdioServerParameters(command=command[0], args=args, env=dict(os.environ), cwd=str(agent.parent))
    async with stdio_client(params) as (read, write), ClientSession(read, write, message_handler=heard) as session:
        await session.initialize()
        yield session


async def _subscribe(session: ClientSession, uri: str) -> None:
    argument: Any = uri
    if SDK_MAJOR < 2:
        from pydantic import AnyUrl

        argument = AnyUrl(uri)
    await session.subscribe_resource(argument)


UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_stdio_2025_session_hears_another_process_and_deckhand_ingest(agent: Path) -> None:
    docs = agent.parent / "docs"
    heard = _Heard()
    async with _stdio(agent, heard) as session:
        init = await call(session, "docs", {"query": "API keys"})  # waits for the first ingest
        assert init["isError"] is False
        templates = wire(await session.list_resource_templates())["resourceTemplates"]
        root = (docs.resolve().as_uri() + "/{+path}", _uri(docs))
        assert templates[0]["uriTemplate"] == root[0], "the tool's URI is its template's, less the path"
        await _subscribe(session, root[1])  # the whole tool
        await _subscribe(session, _uri(docs / "keys.md"))  # one file of it
        with pytest.raises(Exception, match="subscribe to a file a tool indexes"):
            await _subscribe(session, _uri(agent))  # outside every source: refused in one line
        await asyncio.sleep(0.5)  # the baseline stamp is read
        assert heard.items == [], "no change yet, nothing heard"

        # Another process changes the index: heard without a restart.
        (docs / "keys.md").write_text("# API keys\n\nRotate every API key at least every 14 days.\n")
        await asyncio.to_thread(_ingest_elsewhere, agent)
        await heard.wait_for((UPDATED, root[1]), (UPDATED, _uri(docs / "keys.md")), (LIST_CHANGED, None))
        found = await call(session, "docs", {"query": "How often should API keys be rotated?", "top_k": 1})
        assert "14 days" in found["structuredContent"]["results"][0]["content"], "the search sees it too"

        # deckhand_ingest of this server: heard too; a file not subscribed to gets no update of its own.
        heard.items.clear()
        (docs / "network.md").write_text("# Network\n\nThe server listens on port 9000 by default.\n")
        done = await call(session, "deckhand_ingest", {"tool": "docs"})
        assert done["isError"] is False and done["structuredContent"]["tools"][0]["ingested"] == 1
        await heard.wait_for((UPDATED, root[1]), (LIST_CHANGED, None))
        assert (UPDATED, _uri(docs / "keys.md")) not in heard.items
        assert len([h for h in heard.items if h[0] == LIST_CHANGED]) == 1, "announced once, not again by the poll"

        # Unsubscribed: the tool's URI is heard of no more; an ingest that changes nothing is no change.
        await session.unsubscribe_resource(root[1])  # type: ignore[arg-type]
        heard.items.clear()
        await call(session, "deckhand_ingest", {"tool": "docs"})
        await asyncio.sleep(0.6)
        assert heard.items == []


async def _events(stream: Any, count: int) -> list[Any]:
    events: list[Any] = []

    async def take() -> None:
        async for event in stream:
            events.append(event)
            if len(events) >= count:
                return

    await asyncio.wait_for(take(), WAIT)
    return events


@pytest.fixture
def http_server(agent: Path) -> Iterator[HttpServerProcess]:
    """``deckhand mcp --http --watch`` that looks for no outside change (``--changes-interval 0``): only its own
    ingests (``deckhand_ingest``, ``--watch``) are heard of."""
    server = HttpServerProcess(
        ["mcp", "--config", str(agent), "--http", "127.0.0.1:0", "--changes-interval", "0", "--watch"],
        env=dict(os.environ),
        cwd=agent.parent,
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_http_2025_session_and_2026_stream_hear_deckhand_ingest(
    agent: Path, http_server: HttpServerProcess
) -> None:
    from deckhand.testing.mcp_client import http_session

    docs = agent.parent / "docs"
    heard = _Heard()
    async with http_session(http_server.url, message_handler=heard) as session:
        assert (await call(session, "docs", {"query": "API keys"}))["isError"] is False
        await _subscribe(session, _uri(docs / "keys.md"))
        async with _maybe_listen(http_server.url, _uri(docs / "keys.md")) as stream:
            (docs / "keys.md").write_text("# API keys\n\nRotate every API key at least every 7 days.\n")
            done = await call(session, "deckhand_ingest", {"tool": "docs"})
            assert done["isError"] is False
            await heard.wait_for((UPDATED, _uri(docs / "keys.md")), (LIST_CHANGED, None))
            if stream is not None:
                events = await _events(stream, 2)
                assert {type(e).__name__ for e in events} == {"ResourceUpdated", "ResourcesListChanged"}

            # --watch re-ingests a saved file: heard the same way.
            heard.items.clear()
            (docs / "keys.md").write_text("# API keys\n\nRotate every API key at least every 3 days.\n")
            await heard.wait_for((UPDATED, _uri(docs / "keys.md")), (LIST_CHANGED, None))
            if stream is not None:
                events = await _events(stream, 2)
                assert {type(e).__name__ for e in events} == {"ResourceUpdated", "ResourcesListChanged"}


@asynccontextmanager
async def _maybe_listen(url: str, uri: str) -> AsyncIterator[Any]:
    """A 2026-07-28 client's listen stream on ``url`` (2.x), else None."""
    if SDK_MAJOR < 2:
        yield None
        return
    from mcp import Client

    async with (
        Client(url, mode="2026-07-28", read_timeout_seconds=READ_TIMEOUT) as client,
        client.listen(resources_list_changed=True, resource_subscriptions=[uri]) as stream,
    ):
        yield stream


# -- in-process: fake tools, no model, no process --------------------------------------------------------------


@pytest.fixture
def fake_box(make_tool: Any) -> tuple[Any, Toolbox]:
    tool = make_tool("docs")
    for name in ("keys.md", "network.md"):
        (Path(tool.config.source) / name).write_text(f"# {name}\n")
    box = box_of(tool)
    box.ingest("docs")
    return tool, box


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_a_change_seen_by_the_look_is_heard_once(fake_box: tuple[Any, Toolbox]) -> None:
    tool, box = fake_box
    app = DeckhandMcpServer(box, changes_interval=0.05)
    heard = _Heard()
    async with memory_session(app.server, message_handler=heard) as session:
        looking = asyncio.create_task(app.changes.run())
        try:
            await _subscribe(session, _uri(Path(tool.config.source)))
            await asyncio.sleep(0.2)
            assert heard.items == [] and app.changes.announced == 0, "the first look only reads the stamp"
            tool.files = 5  # what another process's ingest does to the count this fake tool reports
            await heard.wait_for((UPDATED, _uri(Path(tool.config.source))), (LIST_CHANGED, None), timeout=5)
            await asyncio.sleep(0.3)
            assert app.changes.announced == 1 and len(heard.items) == 2, "one change, heard once"
        finally:
            looking.cancel()


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_tool_changed_announces_at_once_from_any_thread_to_subscribers_only(
    fake_box: tuple[Any, Toolbox],
) -> None:
    tool, box = fake_box
    app = DeckhandMcpServer(box, changes_interval=0)  # no looking: only what the server is told
    heard = _Heard()
    root = _uri(Path(tool.config.source))

    def from_a_thread() -> None:
        thread = threading.Thread(target=app.changes.tool_changed, args=("docs",))
        thread.start()
        thread.join()

    async with memory_session(app.server, message_handler=heard) as session:
        await call(session, "deckhand_list_tools")
        from_a_thread()
        await asyncio.sleep(0.3)
        assert heard.items == [], "a session that subscribed to nothing is told nothing"
        await _subscribe(session, root)
        from_a_thread()
        await heard.wait_for((UPDATED, root), (LIST_CHANGED, None), timeout=5)
        await session.unsubscribe_resource(root)  # type: ignore[arg-type]
        heard.items.clear()
        from_a_thread()
        await asyncio.sleep(0.3)
        assert heard.items == []


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_subscriptions_are_confined_and_bounded(fake_box: tuple[Any, Toolbox], tmp_path: Path) -> None:
    from deckhand.mcp import notifications as changes

    tool, box = fake_box
    app = DeckhandMcpServer(box, changes_interval=0)
    (tmp_path / "outside.md").write_text("# Outside\n")
    async with memory_session(app.server) as session:
        await _subscribe(session, _uri(Path(tool.config.source) / "keys.md"))
        for refused in [
            _uri(tmp_path / "outside.md"),  # a file of no tool
            _uri(Path(tool.config.source)) + "/../outside.md",  # out through ..
            _uri(Path(tool.config.source) / "missing.md"),  # not a file the tool serves
            "https://example.com/docs",
            "file:///" + "a" * 5000,
        ]:
            with pytest.raises(Exception, match=r"^uri: subscribe to a file a tool indexes, an agent document"):
                await _subscribe(session, refused)
        assert (await call(session, "deckhand_list_tools"))["isError"] is False, "the server goes on"
    subscriber: Any = object()
    for bad in ["", "\0", "file:///\ud800", "x" * 1_000_000, "file://host/etc/passwd", "file:///%00"]:
        with pytest.raises(Exception, match=r"^uri: "):
            app.changes.subscribe("k", subscriber, bad)
    limit = changes.MAX_SUBSCRIPTIONS
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(changes, "MAX_SUBSCRIPTIONS", 2)
        app.changes.subscribe("k", subscriber, _uri(Path(tool.config.source)))
        app.changes.subscribe("k", subscriber, _uri(Path(tool.config.source) / "keys.md"))
        app.changes.subscribe("k", subscriber, _uri(Path(tool.config.source) / "keys.md"))  # again: no new one
        with pytest.raises(Exception, match="at most 2 URIs"):
            app.changes.subscribe("k", subscriber, _uri(Path(tool.config.source) / "network.md"))
    assert limit == changes.MAX_SUBSCRIPTIONS


def test_a_stamp_is_not_read_while_the_tool_is_busy(fake_box: tuple[Any, Toolbox]) -> None:
    tool, box = fake_box
    assert box.change_stamp("docs", 1.0) == ("count", 3)
    tool.release.clear()  # the next ingest holds the tool until released
    thread, _ = in_thread(lambda: box.ingest("docs"))
    assert tool.started.wait(5)
    started = time.monotonic()
    assert box.change_stamp("docs", 0.2) is None, "busy: no stamp this time"
    assert time.monotonic() - started < 2, "and no long wait for it"
    tool.release.set()
    thread.join(5)
    assert box.change_stamp("docs", 1.0) == ("count", 3)


@pytest.mark.parametrize("provider", ["sqlite", "in-memory"])
def test_the_stamp_moves_with_what_the_store_holds(
    provider: str, tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]
) -> None:
    """The sqlite store's records version, else (the in-memory store) a digest of the manifest: a file changed to
    the same number of chunks moves it, an ingest that changes nothing does not."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "keys.md").write_text(DOCS["keys.md"])
    (docs / "network.md").write_text(DOCS["network.md"])
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"name: a\ntools:\n  - type: vectorstore\n    name: docs\n    source: docs/\n"
        f"    database: {{provider: {provider}}}\n"
    )
    box = open_toolbox(config)
    assert box.change_stamp("docs", 1.0) is None, "not ingested yet"
    box.ingest("docs")
    first = box.change_stamp("docs", 1.0)
    assert first is not None and first[0] == ("version" if provider == "sqlite" else "manifest")
    files = box.indexed_files("docs", 1.0)
    assert files is not None and set(files) == {docs / "keys.md", docs / "network.md"}
    box.ingest("docs")
    assert box.change_stamp("docs", 1.0) == first, "nothing changed"
    (docs / "keys.md").write_text(DOCS["keys.md"].replace("90", "30"))
    box.ingest("docs")
    assert box.change_stamp("docs", 1.0) != first
    changed = box.indexed_files("docs", 1.0)
    assert changed is not None and changed[docs / "keys.md"] != files[docs / "keys.md"]
    assert changed[docs / "network.md"] == files[docs / "network.md"]


@pytest.mark.slow
@needs_listen
def test_the_listen_example_of_the_docs_runs(tmp_path: Path) -> None:
    """docs/mcp.md's 2026-07-28 example, as a script over a copy of examples/ (tests/test_doc_examples.py runs
    the page's other examples, in a session whose SDK is 1.x)."""
    root = Path(__file__).resolve().parents[3]
    blocks = re.findall(r"^```python\n(.*?)^```", (root / "docs" / "mcp.md").read_text(), re.M | re.S)
    (code,) = [b for b in blocks if "async with client.listen(" in b]
    shutil.copytree(root / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    script = tmp_path / "example.py"
    script.write_text(code.replace("/tmp/harbor/", f"{tmp_path.as_posix()}/examples/"))
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "DECKHAND_HOME": str(tmp_path / "state"),
    }
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    docs = (tmp_path / "examples" / "docs").resolve().as_uri()
    assert done.stdout.splitlines() == [f"ResourceUpdated(uri='{docs}')", "ResourcesListChanged()"]


def test_any_subscription_uri_is_taken_only_inside_a_source_or_refused_in_one_line(
    fake_box: tuple[Any, Toolbox],
) -> None:
    tool, box = fake_box
    app = DeckhandMcpServer(box, changes_interval=0)
    root = Path(tool.config.source).resolve()
    served = (_uri(root), _uri(root / "keys.md"), _uri(root / "network.md"))

    @settings(max_examples=300, deadline=None)
    @given(uri=st.one_of(st.text(max_size=300), st.builds(lambda tail: "file:///" + tail, st.text(max_size=200))))
    def check(uri: str) -> None:
        try:
            app.changes.subscribe("k", object(), uri)  # type: ignore[arg-type]
        except Exception as exc:
            assert str(exc).startswith("uri: ") and "\n" not in str(exc), str(exc)
        else:
            agent_document = uri.startswith("deckhand-agent://docs/")
            assert agent_document or uri in served or uri.startswith(tuple(s + "#" for s in served[1:])), uri

    check()


def test_the_help_says_the_default_interval() -> None:
    from click.testing import CliRunner
    from deckhand.cli.main import cli
    from deckhand.mcp.notifications import POLL_INTERVAL

    shown = " ".join(CliRunner().invoke(cli, ["mcp", "--help"]).output.split())
    assert "--changes-interval SECONDS" in shown and f"Default: {POLL_INTERVAL:g}." in shown


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_an_agents_write_is_heard(tmp_path: Path, open_toolbox: Callable[[Path], Toolbox]) -> None:
    """deckhand_add and deckhand_delete: the write listener announces at once (no look: --changes-interval 0),
    to a subscription of the document, even one made before it existed, and of the tool."""
    from test_mcp_writes import _config

    app = DeckhandMcpServer(open_toolbox(_config(tmp_path)), changes_interval=0)
    heard = _Heard()
    note = "deckhand-agent://docs/tides"
    async with memory_session(app.server, message_handler=heard) as session:
        assert (await call(session, "docs", {"query": "API keys"}))["isError"] is False
        await _subscribe(session, note)
        await _subscribe(session, _uri(tmp_path / "docs"))
        with pytest.raises(Exception, match=r"^uri: subscribe to"):
            await _subscribe(session, "deckhand-agent://nope/tides")  # no such tool
        added = await call(session, "deckhand_add", {"tool": "docs", "id": "tides", "title": "T", "text": "High at 6."})
        assert added["isError"] is False, added["text"]
        await heard.wait_for((UPDATED, note), (UPDATED, _uri(tmp_path / "docs")), (LIST_CHANGED, None), timeout=5)
        heard.items.clear()
        assert (await call(session, "deckhand_delete", {"tool": "docs", "id": "tides"}))["isError"] is False
        await heard.wait_for((UPDATED, note), (LIST_CHANGED, None), timeout=5)
