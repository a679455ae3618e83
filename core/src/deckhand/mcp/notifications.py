"""Change notifications: subscribed clients hear when what a tool holds changes, whoever changed it (docs/mcp.md). Each
tool's change stamp is polled every :data:`POLL_INTERVAL` seconds while someone listens, within deadlines."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from deckhand.calls.call_models import CallError
from deckhand.calls.source_reading import SourceReader
from deckhand.calls.toolbox import Toolbox
from deckhand.index.agent_documents import is_agent_source, parse_agent_uri
from deckhand.limits import MAX_URI_CHARS
from deckhand.mcp import sdk
from deckhand.mcp.server import in_daemon_thread

log = logging.getLogger("deckhand.mcp")

#: Seconds between two reads of every tool's change stamp (``deckhand mcp --changes-interval``).
POLL_INTERVAL = 2.0
#: Most seconds a stamp read waits for a tool a search or an ingest holds (then it is read next time).
STAMP_WAIT = 0.5
#: Most seconds a stamp read waits for the store to answer (a stalled server is read next time).
STAMP_DEADLINE = 10.0
#: Most seconds one notification may take to send (a client that stopped reading is forgotten, not waited for).
SEND_DEADLINE = 5.0
#: Most URIs one session may subscribe to.
MAX_SUBSCRIPTIONS = 1000
#: Most 2025-era sessions with subscriptions remembered (the least recently subscribed is forgotten first).
MAX_SESSIONS = 1024
#: Most URIs, and characters of them, held for all sessions together (1,024 x 1,000 x 4 KB would be 4 GB).
MAX_HELD_URIS = 20_000
MAX_HELD_CHARS = 2_000_000
#: JSON-RPC error of a subscription refused (the spec's "resource not found").
RESOURCE_NOT_FOUND = -32002


@dataclass
class _Session:
    """A 2025-era session: how to reach it, and the URIs it subscribed to (as :func:`canonical` has them)."""

    subscriber: sdk.Subscriber
    uris: set[str] = field(default_factory=set)


def canonical(uri: str) -> str:
    """``uri`` as a subscription is kept and announced: without its fragment (an update may name the resource holding
    what was subscribed to), and ``file://localhost/`` as ``file:///``."""
    uri = uri.partition("#")[0]
    if uri[:17].lower() == "file://localhost/":
        uri = "file:///" + uri[17:]
    return uri


class Changes:
    """Who listens to which changes, and telling them: one per server (docs/mcp.md)."""

    def __init__(
        self, toolbox: Toolbox, reader: SourceReader, *, interval: float = POLL_INTERVAL, sessions: bool = True
    ) -> None:
        """``interval``: seconds between two stamp reads of every tool (0: only after this process's ingests);
        ``sessions`` False (``--stateless``): 2025 sessions end with their request, so none may subscribe."""
        self.sessions = sessions
        self.toolbox = toolbox
        self.reader = reader
        self.interval = interval
        self.listen = sdk.ListenStreams(on_open=self._listener_came)
        self._sessions: OrderedDict[object, _Session] = OrderedDict()
        self._held = [0, 0]  # URIs and their characters held for every session together
        self._stamps: dict[str, Any] = {}
        self._files: dict[str, dict[Path | str, str]] = {}
        self._reading: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening = False  # some client listened at the last look
        self.announced = 0  # changes announced (for tests and diagnostics)

    # -- the entry points ----------------------------------------------------------------------
    def tool_changed(self, name: str) -> None:
        """Tell every listening client that tool ``name`` changed, at once, from any thread."""
        self._soon(self._changed, name)

    def check_soon(self, name: str) -> None:
        """Read tool ``name``'s stamp now and announce a change if it moved (after an ingest of this process)."""
        self._soon(self._check, name)

    async def run(self) -> None:
        """Read every tool's stamp every :attr:`interval` seconds while a client listens (never when 0)."""
        self.attach()
        if self.interval <= 0:
            return
        while True:
            self._listening = self._listened()
            if self._listening:  # else no store is read (and the next listener reads fresh stamps first)
                await asyncio.gather(*(self._check(name) for name in self.toolbox.tool_names))
            await asyncio.sleep(self.interval)

    def _listened(self) -> bool:
        """Whether some client subscribed to a URI or holds a listen stream open (the looks run only then)."""
        return self._subscribed_uris() or self.listen.open > 0

    def _listener_came(self) -> None:
        """A subscription or listen stream; the first since nobody listened reads the stamps afresh now."""
        if self._listening:
            return
        self._listening = True
        for name in self.toolbox.tool_names:
            self._soon(self._rebase, name)

    async def _rebase(self, name: str) -> None:
        read, stamp = await self._read(name, self.toolbox.change_stamp)
        if read:
            self._stamps[name] = stamp
            self._files.pop(name, None)

    def attach(self) -> None:
        """Remember the running event loop: announcements from other threads are made on it."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()

    # -- what sdk.py reports -------------------------------------------------------------------
    def subscribe(self, key: object, subscriber: sdk.Subscriber, uri: str) -> None:
        """``resources/subscribe``: an SDK error (one line) for a URI no tool serves, or one too many."""
        if not self.sessions:
            raise sdk.resource_error(
                RESOURCE_NOT_FOUND,
                "resources/subscribe: this server runs with --stateless, where a 2025 session ends with its request "
                "and could hear no change; listen with a 2026-07-28 client (subscriptions/listen) or serve without "
                "--stateless",
            )
        if not self._served(uri):
            raise sdk.resource_error(
                RESOURCE_NOT_FOUND,
                "uri: subscribe to a file a tool indexes, an agent document (deckhand-agent://tool/id) or a tool's "
                "source directory (resources/templates/list names them)",
            )
        uri = canonical(uri)
        session = self._sessions.get(key)
        if session is not None and uri in session.uris:
            session.subscriber = subscriber
            self._sessions.move_to_end(key)
            return
        if session is not None and len(session.uris) >= MAX_SUBSCRIPTIONS:
            raise sdk.resource_error(
                RESOURCE_NOT_FOUND, f"uri: a session may subscribe to at most {MAX_SUBSCRIPTIONS} URIs"
            )
        if self._held[0] + 1 > MAX_HELD_URIS or self._held[1] + len(uri) > MAX_HELD_CHARS:
            raise sdk.resource_error(
                RESOURCE_NOT_FOUND,
                f"uri: the server holds its most subscriptions ({MAX_HELD_URIS:,} URIs or {MAX_HELD_CHARS:,} "
                "characters for every session together); unsubscribe from some, or subscribe to a tool's source "
                "directory instead of its files",
            )
        if session is None:
            session = self._sessions[key] = _Session(subscriber)
            sdk.on_close(key, lambda: self.forget(key))  # a closed session leaves the hub with its URIs
            while len(self._sessions) > MAX_SESSIONS:  # the least recently subscribed goes first
                self.forget(next(iter(self._sessions)))
        else:
            session.subscriber = subscriber
            self._sessions.move_to_end(key)
        session.uris.add(uri)
        self._held[0] += 1
        self._held[1] += len(uri)
        self._listener_came()

    def unsubscribe(self, key: object, uri: str) -> None:
        """``resources/unsubscribe`` (a URI never subscribed to is no error)."""
        session = self._sessions.get(key)
        uri = canonical(uri)
        if session is not None and uri in session.uris:
            session.uris.discard(uri)
            self._held[0] -= 1
            self._held[1] -= len(uri)

    def forget(self, key: object) -> None:
        """Drop session ``key`` and its subscriptions (it closed, or stopped reading)."""
        session = self._sessions.pop(key, None)
        if session is not None:
            self._held[0] -= len(session.uris)
            self._held[1] -= sum(len(u) for u in session.uris)

    @property
    def held(self) -> tuple[int, int, int]:
        """Sessions remembered, and the URIs and characters they hold together (for tests and diagnostics)."""
        return len(self._sessions), self._held[0], self._held[1]

    # -- inside --------------------------------------------------------------------------------
    def _soon(self, step: Any, name: str) -> None:
        loop = self._loop
        if loop is None:
            return  # not serving yet: nobody to tell
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile

            def start() -> None:
                task = loop.create_task(step(name))
                task.add_done_callback(_log_failure)

            loop.call_soon_threadsafe(start)

    async def _read(self, name: str, read: Callable[[str, float], Any]) -> tuple[bool, Any]:
        """``(done, value)`` of ``read(name, STAMP_WAIT)`` in a thread, bounded by :data:`STAMP_DEADLINE`."""
        if name in self._reading:
            return False, None
        self._reading.add(name)
        try:
            value = await asyncio.wait_for(in_daemon_thread(read, name, STAMP_WAIT), STAMP_DEADLINE)
        except (TimeoutError, CallError):
            return False, None
        finally:
            self._reading.discard(name)
        return value is not None, value

    async def _check(self, name: str) -> None:
        read, stamp = await self._read(name, self.toolbox.change_stamp)
        if not read:
            return
        before = self._stamps.get(name)
        self._stamps[name] = stamp
        moved = before is not None and before != stamp
        changed = await self._changed_files(name, fresh=moved or name not in self._files)
        if moved:
            log.info("tool %s changed; telling the clients that listen", name)
            await self._announce(name, changed)

    async def _changed_files(self, name: str, *, fresh: bool) -> set[Path | str] | None:
        """The files whose index changed since the last read (None: not known), read only while a client
        listens to some URI (and then only after a change): the manifest is read once per change, not per look."""
        if not self._subscribed_uris():
            self._files.pop(name, None)
            return None
        if not fresh:
            return set()
        before = self._files.get(name)
        read, files = await self._read(name, self.toolbox.indexed_files)
        if not read:
            self._files.pop(name, None)
            return None
        self._files[name] = files
        if before is None:
            return None
        return {p for p in before.keys() | files.keys() if before.get(p) != files.get(p)}

    async def _changed(self, name: str) -> None:
        await self._announce(name, None)
        read, stamp = await self._read(name, self.toolbox.change_stamp)
        if read:
            self._stamps[name] = stamp
            await self._changed_files(name, fresh=True)

    async def _announce(self, name: str, changed: set[Path | str] | None) -> None:
        """Tell every listener of tool ``name``; a subscribed file only when it is among ``changed`` (None: all)."""
        self.announced += 1

        def touched(uri: str) -> bool:
            where = self._where(uri)
            return where is not None and where[0] == name and (where[2] or changed is None or where[1] in changed)

        for key, session in list(self._sessions.items()):
            if not session.uris:
                continue  # unsubscribed from everything: it asked to hear nothing
            try:
                for uri in sorted(session.uris):
                    if touched(uri):
                        await asyncio.wait_for(session.subscriber.resource_updated(uri), SEND_DEADLINE)
                await asyncio.wait_for(session.subscriber.resources_changed(), SEND_DEADLINE)
            except Exception as exc:  # the client went away, or stopped reading: forget it
                log.debug("change notification not delivered (%s); forgetting the session", exc)
                self.forget(key)
        for uri in self.listen.resource_uris():
            if touched(uri):
                await self.listen.resource_updated(uri)
        await self.listen.resources_changed()

    def _subscribed_uris(self) -> bool:
        return any(s.uris for s in self._sessions.values()) or bool(self.listen.resource_uris())

    def _where(self, uri: str) -> tuple[str, Path | str, bool] | None:
        """``(tool, place, whole)``: the tool whose source holds ``uri``, the file's path (or agent document's URI), and
        whether the URI names the source itself; None outside every source."""
        if not isinstance(uri, str) or len(uri) > MAX_URI_CHARS or "\0" in uri:
            return None
        if is_agent_source(uri):
            place = uri.partition("#")[0]
            try:
                tool, _ = parse_agent_uri(place)
            except ValueError:
                return None
            return (tool, place, False) if tool in self.toolbox.tool_names else None
        parts = urlsplit(uri)
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
            return None
        path = Path(unquote(parts.path))
        for name in self.toolbox.tool_names:
            root = self.reader.root(name)
            if root is not None and (path == root or root in path.parents):
                return name, path, path == root
        return None

    def _served(self, uri: str) -> bool:
        """Whether ``uri`` may be subscribed to: a tool's source directory, or a file a tool serves."""
        where = self._where(uri)
        if where is None:
            return False
        if where[2] or isinstance(where[1], str):  # a whole tool, or an agent document (maybe added later)
            return True
        try:
            self.reader.resolve(uri)
        except CallError:
            return False
        return True


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("change notification failed: %s", task.exception())
