"""Outage checks for stores with a server: ``deckhand mcp`` heals by itself when the server comes back.

A store plugin's test suite starts its own server and hands the kit a ``database:`` block and
two callables, ``stop`` (kill the server as a crash would) and ``start`` (restart it on the
same port with the same data). The kit runs a real ``deckhand mcp --watch`` subprocess over
MCP's stdio transport and checks, without any restart of deckhand and without a manual
``deckhand_ingest``:

* :func:`check_outage_heals` -- the server dies during a search, during a ``deckhand_ingest``
  and during a ``--watch`` re-ingest; every call is answered in one line that says the store
  is unreachable since when; the listing keeps the last chunk count; once the server is back
  searches answer from the kept index and the file edited during the outage is ingested.
* :func:`check_down_at_start_heals` -- the server is down when ``deckhand mcp`` starts: the tool
  is ``unreachable`` (never silently served from an in-memory copy) until the server starts.
* :func:`check_kill_mid_ingest_heals` -- in process, deterministic: the server dies between two
  files of an ingest; the retries finish it once the server is back.
* :func:`check_frozen_server_fails_fast` -- in process: the server freezes (SIGSTOP, as in a network
  partition: connections stay open and nothing answers); a search fails within the store's deadline
  in one line naming the server, the listing answers at once meanwhile, and once the server goes
  on (SIGCONT) searches answer again.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from deckhand.testing.mcp_client import call, stdio_session

#: Seconds the kit waits for the tool to heal once the server is back (retries back off up to 30 s).
HEAL_TIMEOUT = 45.0
TOOL = "sailing"
DOCS = {
    "anchoring.md": "# Anchoring\n\nLet out chain five times the depth of the water, then back down slowly.\n",
    "reefing.md": "# Reefing\n\nTie in a reef when gusts exceed twenty knots.\n",
    "tides.md": "# Tides\n\nSpring tides follow the full and the new moon.\n",
}
EDITED = "# Fog\n\nIn fog, sound one long blast every two minutes and post a lookout at the bow.\n"


def write_agent(root: Path, database: Mapping[str, Any]) -> Path:
    """``root/docs`` with three small files and ``root/agent.yaml`` serving them from ``database``."""
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    config = root / "agent.yaml"
    tool = {"type": "vectorstore", "name": TOOL, "source": "docs/", "top_k": 1, "database": dict(database)}
    config.write_text(yaml.safe_dump({"tools": [tool]}, sort_keys=False), encoding="utf-8")
    return config


def _environment(root: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    merged = {**os.environ, **(env or {})}
    merged.setdefault("DECKHAND_HOME", str(root / "state"))
    return merged


async def _status(session: Any) -> dict[str, Any]:
    listing = await call(session, "deckhand_list_tools")
    assert listing["isError"] is False, listing["text"]
    status: dict[str, Any] = listing["structuredContent"]["tools"][0]
    status["text"] = listing["text"]
    return status


async def _until_ready(session: Any, timeout: float = HEAL_TIMEOUT) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = await _status(session)
        if status["state"] == "ready" and status.get("outage") is None:
            return status
        assert time.monotonic() < deadline, f"the tool did not heal within {timeout:g}s: {status['text']}"
        await asyncio.sleep(0.2)


def _assert_outage_line(text: str) -> None:
    assert "\n" not in text, f"not one line: {text!r}"
    assert "store unreachable since " in text, text
    assert "must be initialized" not in text, text


def _assert_ingest_is_an_outage(box: Any, otherwise: str) -> None:
    """Ingesting the tool fails with the one-line outage error (``otherwise``: what it means if it does not fail)."""
    from deckhand.calls.call_models import CallError

    try:
        box.ingest(TOOL)
    except CallError as exc:
        _assert_outage_line(str(exc))
    else:
        raise AssertionError(otherwise)


async def _source_of_best(session: Any, query: str) -> str:
    found = await call(session, TOOL, {"query": query, "top_k": 1})
    assert found["isError"] is False, found["text"]
    source: str = found["structuredContent"]["results"][0]["source"]
    return source


async def _answered_once_back(session: Any, query: str, timeout: float = HEAL_TIMEOUT) -> str:
    """The best source for ``query`` from the first search that succeeds after the server restarted."""
    deadline = time.monotonic() + timeout
    while True:
        found = await call(session, TOOL, {"query": query, "top_k": 1})
        if not found["isError"]:
            source: str = found["structuredContent"]["results"][0]["source"]
            return source
        _assert_outage_line(found["text"])  # meanwhile, still the one-line outage error
        assert time.monotonic() < deadline, f"no search succeeded within {timeout:g}s: {found['text']}"
        await asyncio.sleep(0.2)


async def check_outage_heals(
    root: Path,
    database: Mapping[str, Any],
    stop: Callable[[], None],
    start: Callable[[], None],
    *,
    env: Mapping[str, str] | None = None,
    secrets: tuple[str, ...] = (),
) -> None:
    """The server dies during a search, an ingest and a watched edit; the tool heals once it is back."""
    config = write_agent(root, database)
    args = ["mcp", "--config", str(config), "--watch"]
    async with stdio_session(args, env=_environment(root, env), cwd=root) as session:
        assert await _source_of_best(session, "when to reef") == "docs/reefing.md"
        before = await _status(session)
        assert (before["state"], before["document_count"]) == ("ready", len(DOCS))

        stop()  # during a search
        down = await call(session, TOOL, {"query": "when to reef"})
        assert down["isError"] is True and down["text"].startswith(f"{TOOL}: "), down["text"]
        _assert_outage_line(down["text"])
        status = await _status(session)
        assert status["state"] == "unreachable", status["text"]
        assert status["document_count"] == len(DOCS), "the listing keeps the last count, never 0"
        assert "the last index (3 searchable items) is kept" in status["outage"], status["outage"]

        ingest = await call(session, "deckhand_ingest", {})  # during an ingest
        assert ingest["isError"] is True
        _assert_outage_line(ingest["text"])

        (root / "docs" / "fog.md").write_text(EDITED, encoding="utf-8")  # during --watch
        await asyncio.sleep(1.5)  # the watcher's batch (0.4 s of quiet) and its failed re-ingest

        start()
        # The kept index answers as soon as the driver has reconnected (no re-ingest by hand; a pool
        # may wait a moment before its next connection attempt), and the retries bring in fog.md.
        assert await _answered_once_back(session, "how much anchor chain") == "docs/anchoring.md"
        healed = await _until_ready(session)
        assert healed["document_count"] == len(DOCS) + 1, healed["text"]
        assert await _source_of_best(session, "what to do in fog") == "docs/fog.md"

        for text in (down["text"], ingest["text"], status["text"], healed["text"]):
            for secret in secrets:
                assert secret not in text


def check_kill_mid_ingest_heals(
    root: Path, database: Mapping[str, Any], stop: Callable[[], None], start: Callable[[], None]
) -> None:
    """The server dies after the first of two changed files is written; the toolbox finishes the ingest later."""
    from deckhand.calls.call_models import SearchArguments
    from deckhand.calls.toolbox import Toolbox

    config = write_agent(root, database)
    box = Toolbox.from_config(config, memory=False)
    box.healing.retry_first, box.healing.retry_max = 0.1, 0.5
    try:
        box.ingest(TOOL)
        store = box.tool(TOOL).index.store
        written: list[str] = []
        original = store.replace_source

        def replace_then_crash(source: str, *args: Any, **kwargs: Any) -> Any:
            if written:
                stop()  # the second file meets a dead server
            result = original(source, *args, **kwargs)
            written.append(source)
            return result

        store.replace_source = replace_then_crash
        for name in ("anchoring.md", "tides.md"):
            (root / "docs" / name).write_text(DOCS[name].replace("# ", "# Revised ") + "Revised in 2026.\n")
        try:
            _assert_ingest_is_an_outage(box, "the ingest went on with the server dead")
        finally:
            store.replace_source = original
        assert len(written) == 1
        status = box.list_tools()[1].tools[0]
        assert status.state == "unreachable" and status.document_count == len(DOCS), status
        start()
        deadline = time.monotonic() + HEAL_TIMEOUT
        while box.list_tools()[1].tools[0].state != "ready":
            assert time.monotonic() < deadline, box.list_tools()[0]
            time.sleep(0.05)
        for query, source in (("anchor chain revised", "docs/anchoring.md"), ("spring tides revised", "docs/tides.md")):
            _, found = box.search(TOOL, SearchArguments(query=query, top_k=1))
            assert found.results[0].source == source
            assert "Revised in 2026." in found.results[0].content, "the file the crash interrupted was re-ingested"
        assert box.list_tools()[1].tools[0].document_count == len(DOCS)
    finally:
        box.close()


async def check_down_at_start_heals(
    root: Path,
    database: Mapping[str, Any],
    stop: Callable[[], None],
    start: Callable[[], None],
    *,
    env: Mapping[str, str] | None = None,
) -> None:
    """The server is down when ``deckhand mcp`` starts: the tool says so, and heals once it starts."""
    config = write_agent(root, database)
    stop()
    async with stdio_session(["mcp", "--config", str(config)], env=_environment(root, env), cwd=root) as session:
        deadline = time.monotonic() + HEAL_TIMEOUT
        status = await _status(session)
        while status["state"] in ("pending", "ingesting"):
            assert time.monotonic() < deadline, status["text"]
            await asyncio.sleep(0.1)
            status = await _status(session)
        assert status["state"] == "unreachable", status["text"]
        assert status.get("provider") != "memory", "a long-lived server never falls back to an in-memory copy"
        assert "nothing is indexed yet" in status["outage"], status["outage"]
        down = await call(session, TOOL, {"query": "when to reef"})
        assert down["isError"] is True and down["text"].startswith(f"{TOOL}: not available: store unreachable since ")
        start()
        healed = await _until_ready(session)
        assert healed["document_count"] == len(DOCS), healed["text"]
        assert await _source_of_best(session, "when to reef") == "docs/reefing.md"


#: Seconds the listing may take while a search waits on a frozen server (it never waits on the store).
LISTING_PROMPT = 1.0


def check_frozen_server_fails_fast(
    root: Path,
    database: Mapping[str, Any],
    pause: Callable[[], None],
    resume: Callable[[], None],
    *,
    deadline: float,
    server: str,
    secrets: tuple[str, ...] = (),
) -> None:
    """The server freezes: a search fails within ``deadline`` (the store's, set in ``database``) in one line.

    ``server`` is what the line must name (the host and port); ``secrets`` (the password) must not
    show. While the first search waits on the frozen server, the listing answers within
    :data:`LISTING_PROMPT` and a second search says the store is unreachable, never "still
    ingesting", and an ingest fails within the deadline too. Once the server goes on, searches answer
    from the kept index.
    """
    from deckhand.calls.call_models import CallError, SearchArguments
    from deckhand.calls.toolbox import Toolbox

    config = write_agent(root, database)
    box = Toolbox.from_config(config, memory=False)
    box.healing.retry_first, box.healing.retry_max = 0.2, 1.0
    outcome: dict[str, str] = {}

    def search(key: str) -> None:
        began = time.monotonic()
        try:
            box.search(TOOL, SearchArguments(query="when to reef", top_k=1))
            outcome[key] = "answered"
        except CallError as exc:
            outcome[key] = str(exc)
        outcome[key + " took"] = f"{time.monotonic() - began:.1f}"

    try:
        box.ingest(TOOL)
        _, found = box.search(TOOL, SearchArguments(query="when to reef", top_k=1))
        assert found.results[0].source == "docs/reefing.md"
        pause()
        try:
            first = threading.Thread(target=search, args=("first",), daemon=True)
            first.start()
            time.sleep(0.3)  # the first search now waits on the frozen server
            second = threading.Thread(target=search, args=("second",), daemon=True)
            second.start()
            began = time.monotonic()
            text, listing = box.list_tools()
            listed = time.monotonic() - began
            assert listed < LISTING_PROMPT, f"the listing waited {listed:.1f}s on a frozen store: {text}"
            assert listing.tools[0].document_count == len(DOCS), text
            first.join(deadline + 5)
            second.join(deadline + 5)
            assert not first.is_alive(), f"a search got no answer within {deadline + 5:g}s of a frozen server"
            assert not second.is_alive(), "a second search waited on the frozen server past the deadline"
            took = float(outcome["first took"])
            assert took < deadline + 3, f"the search failed after {took}s, the deadline is {deadline:g}s"
            for key in ("first", "second"):
                line = outcome[key]
                _assert_outage_line(line)
                assert "still ingesting" not in line, line
                for secret in secrets:
                    assert secret not in line, line
            assert server in outcome["first"], f"the line does not name the server {server}: {outcome['first']}"
            began = time.monotonic()
            text, listing = box.list_tools()
            assert time.monotonic() - began < LISTING_PROMPT, text
            assert listing.tools[0].state == "unreachable", text
            assert listing.tools[0].document_count == len(DOCS), text
            began = time.monotonic()  # an ingest (it may wait for a background retry first) fails in time too
            _assert_ingest_is_an_outage(box, "an ingest succeeded against a frozen server")
            took = time.monotonic() - began
            assert took < 2 * deadline + 3, f"the ingest failed after {took:.1f}s, the deadline is {deadline:g}s"
        finally:
            resume()
        limit = time.monotonic() + HEAL_TIMEOUT
        while True:
            try:
                _, found = box.search(TOOL, SearchArguments(query="how much anchor chain", top_k=1))
                break
            except CallError as exc:
                assert time.monotonic() < limit, f"no search succeeded within {HEAL_TIMEOUT:g}s: {exc}"
                time.sleep(0.2)
        assert found.results[0].source == "docs/anchoring.md"
    finally:
        box.close()
