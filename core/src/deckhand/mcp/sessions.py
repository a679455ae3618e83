"""HTTP sessions of ``deckhand mcp --http``: at most :data:`MAX_SESSIONS`, none idle past :data:`IDLE_TIMEOUT`, because
clients that just go away would leak them (1,122 abandoned sessions held 34 MB). Sessionless requests pass through."""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("deckhand.mcp")

#: Seconds a session may go unused before it is closed (the SDK 2.x default too).
IDLE_TIMEOUT = 1800.0
#: Sessions open at once at most.
MAX_SESSIONS = 100
_SESSION_HEADER = b"mcp-session-id"
_VERSION_HEADER = b"mcp-protocol-version"


@dataclass
class _Session:
    host: bytes  # the Host header its client sends (the close request must pass the same check)
    last_used: float
    in_flight: int = 0


class SessionKeeper:
    """ASGI app in front of the SDK's ``StreamableHTTPSessionManager``: bounds the sessions it keeps."""

    def __init__(
        self,
        manager: Any,
        *,
        max_sessions: int = MAX_SESSIONS,
        idle_timeout: float = IDLE_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        if not idle_timeout > 0:
            raise ValueError("the session idle timeout must be a positive number of seconds")
        self.manager = manager
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self.closed = 0  # sessions closed by the keeper (idle or evicted)

    @property
    def live(self) -> int:
        """Sessions open now."""
        return len(self._sessions)

    @property
    def sweep_interval(self) -> float:
        """How often :meth:`close_idle` should run."""
        return max(0.05, min(self.idle_timeout / 4, 30.0))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.manager.handle_request(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self._sessionless(headers):
            # A self-contained request (2026-07-28) opens no session: it neither needs room nor may evict an idle one.
            await self.manager.handle_request(scope, receive, send)
            return
        sid = headers.get(_SESSION_HEADER, b"").decode("latin-1") or None
        method = scope.get("method", "")
        session = self._sessions.get(sid) if sid is not None else None
        if sid is None and method == "POST" and not await self._make_room():
            await _busy(send, self.max_sessions)
            return
        if session is not None:
            session.in_flight += 1
            self._sessions.move_to_end(sid)  # type: ignore[arg-type]
        opened: list[str] = []
        finished = False

        def done() -> None:
            """The request is over (its last byte sent, or the manager returned): the session is idle again."""
            nonlocal finished
            if finished:
                return
            finished = True
            for key in [sid] if sid is not None and session is not None else opened:
                entry = self._sessions.get(key)
                if entry is not None:
                    entry.in_flight -= 1
                    entry.last_used = self._clock()

        async def watching(message: dict[str, Any]) -> None:
            # Any response naming a new session (1.x opens one even for a request it then refuses).
            if sid is None and message["type"] == "http.response.start":
                for name, value in message.get("headers") or []:
                    if name.lower() == _SESSION_HEADER:
                        new = value.decode("latin-1")
                        self._sessions[new] = _Session(headers.get(b"host", b""), self._clock(), in_flight=1)
                        opened.append(new)
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                done()

        try:
            await self.manager.handle_request(scope, receive, watching)
        finally:
            done()
            if sid is not None and method == "DELETE":
                self._forget(sid)

    @staticmethod
    def _sessionless(headers: dict[bytes, bytes]) -> bool:
        from deckhand.mcp import sdk  # the SDK is loaded only by the server (this module's constants are not)

        version = headers.get(_VERSION_HEADER)
        return sdk.sessionless(version.decode("latin-1") if version is not None else None)

    async def close_idle(self) -> int:
        """Close every session unused for ``idle_timeout`` seconds; how many were closed."""
        now = self._clock()
        stale = [
            sid for sid, s in self._sessions.items() if s.in_flight == 0 and now - s.last_used >= self.idle_timeout
        ]
        for sid in stale:
            await self._close(sid, f"idle for more than {self.idle_timeout:g}s")
        return len(stale)

    async def _make_room(self) -> bool:
        """Room for one more session: close the least recently used idle one if the limit is reached."""
        if len(self._sessions) < self.max_sessions:
            return True
        for sid, session in self._sessions.items():
            if session.in_flight == 0:
                await self._close(sid, f"least recently used of {self.max_sessions}")
                return True
        return False

    async def _close(self, sid: str, why: str) -> None:
        session = self._sessions.get(sid)
        if session is None:
            return
        log.info("closing HTTP session %s… (%s)", sid[:8], why)
        self._forget(sid)
        self.closed += 1
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", session.host), (_SESSION_HEADER, sid.encode("latin-1"))],
            "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: dict[str, Any]) -> None:
            return None

        try:
            await self.manager.handle_request(scope, receive, discard)
        except Exception as exc:  # the session may have ended on its own meanwhile
            log.debug("closing HTTP session %s… failed: %s", sid[:8], exc)
        from deckhand.mcp import sdk  # the SDK is loaded only by the server (this module's constants are not)

        sdk.forget_session(self.manager, sid)

    def _forget(self, sid: str) -> None:
        self._sessions.pop(sid, None)


async def _busy(send: Any, limit: int) -> None:
    """HTTP 503 with a JSON-RPC error: every session is in use."""
    message = f"too many sessions: all {limit} are busy; retry in a moment or raise --max-sessions"
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    await send_json(send, 503, error, [(b"retry-after", b"1")])


async def send_json(send: Any, status: int, payload: Any, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """Answer an HTTP request with ``payload`` as JSON (and ``headers``)."""
    body = json.dumps(payload).encode()
    fields = [(b"content-type", b"application/json"), *headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": fields})
    await send({"type": "http.response.body", "body": body})
