"""No request blocks the others (issue 34, item 10): over HTTP, while one session's call waits for an
ingest and another session sends a huge call, a third session's ``ping`` and ``tools/list`` answer
at once. Before, masking a 100,000-letter answer took quadratic time on the event loop and every
session waited behind it (another session's ping waited 16 s).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from _agent_fakes import box_of
from _wire import RawHttp, http_server
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.mcp.transports import http_app

#: How long a ping may take while the other calls are in flight (it takes milliseconds).
PROMPT = 2.0


def _request(ident: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def test_a_slow_call_and_a_huge_call_block_no_other_session(make_tool: Any) -> None:
    ready, slow = make_tool("ready"), make_tool("slow")
    slow.release.clear()  # its ingest waits for the test: a search of it stays in flight
    box = box_of(ready, slow)
    box.start_ingest()
    deadline = time.monotonic() + 10
    while not ready.is_initialized:
        assert time.monotonic() < deadline, "the first tool never finished ingesting"
        time.sleep(0.02)
    try:
        with http_server(http_app(DeckhandMcpServer(box), None, True)) as url:
            clients = [RawHttp(url) for _ in range(3)]
            sessions = [client.open_session() for client in clients]
            answers: dict[str, Any] = {}

            def send(name: str, index: int, body: bytes) -> None:
                answers[name] = clients[index].post(body, sessions[index])

            search = {"name": "slow", "arguments": {"query": "waits for the ingest"}}
            huge = {"name": "ready", "arguments": {"query": "a" * 100_000}}
            threads = [
                threading.Thread(target=send, args=("slow", 0, _request(1, "tools/call", search)), daemon=True),
                threading.Thread(target=send, args=("huge", 1, _request(2, "tools/call", huge)), daemon=True),
            ]
            for thread in threads:
                thread.start()
            time.sleep(0.2)
            for ident, method in enumerate(["ping", "tools/list", "ping"], start=3):
                clock = time.monotonic()
                status, messages, _ = clients[2].post(_request(ident, method), sessions[2])
                elapsed = time.monotonic() - clock
                assert status == 200 and "result" in messages[-1], messages
                assert elapsed < PROMPT, f"{method} took {elapsed:.1f}s while other sessions' calls were in flight"
            assert "slow" not in answers, "the slow call is still in flight"
            threads[1].join(PROMPT)
            status, messages, _ = answers["huge"]
            result = messages[-1]["result"]
            assert result["isError"] is True and result["content"][0]["text"].startswith("ready: query: string should")
            slow.release.set()  # the slow call ends too, answered
            threads[0].join(10)
            assert answers["slow"][1][-1]["result"]["isError"] is False
            for client in clients:
                client.close()
    finally:
        slow.release.set()
        box.close()
