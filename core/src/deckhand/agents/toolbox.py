"""An agent config's tools and memory, answering calls from any number of threads.

The MCP server and the Semantic Kernel plugin both drive a :class:`Toolbox`. It owns the
policy every front end shares:

* **One thing at a time per tool.** A search and an ingest of the same tool never overlap
  (the stores and indexes are not built for concurrent writers and readers), so a search
  that arrives while its tool ingests *waits* for the ingest to finish, at most
  :data:`SEARCH_WAIT` seconds, and then answers from the fresh index; past that it fails
  with a one-line "still ingesting (stage n/N)" error. Different tools work in parallel.
* **Lazy or background ingestion.** :meth:`Toolbox.start_ingest` ingests every tool in a
  background thread (the server answers ``initialize`` meanwhile); a tool nobody ingested
  yet is ingested by its first search.
* **Errors are one line**, secrets masked (:mod:`deckhand.redaction` plus every value the
  config files took from ``${VARS}``), raised as :class:`~deckhand.agents.calls.CallError`.
* **Outages heal by themselves.** A store server that cannot be reached (a call or an ingest
  fails with a connection error) is an *outage*, not a failure: the tool keeps its store and
  its last index, the listing says since when the store is unreachable, and a background
  thread retries with a doubling delay (:data:`RETRY_FIRST` up to :data:`RETRY_MAX`) until
  an incremental re-ingest succeeds, which also picks up what changed meanwhile. A server
  that is down when the toolbox starts is never replaced by the in-memory store (unless the
  database sets ``allow_fallback: true``), so the tool comes back to it.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.agents.calls import (
    CallError,
    DecisionOutput,
    DecisionsOutput,
    DefinitionOut,
    Hit,
    IngestArguments,
    IngestOutput,
    IngestSummary,
    MemoryBeforeArguments,
    MemoryGetArguments,
    MemoryRangeArguments,
    MemorySearchContentArguments,
    MemorySearchSemanticArguments,
    MemoryStatus,
    MemoryStoreArguments,
    ReferenceOut,
    SearchArguments,
    SearchOutput,
    ToolListOutput,
    ToolStatus,
)
from deckhand.agents.calls import Decision as DecisionOut
from deckhand.errors import ConfigError, DeckhandError, is_outage
from deckhand.redaction import MASK, redact_url

if TYPE_CHECKING:
    from deckhand.memory.manager import VectorMemoryManager

log = logging.getLogger("deckhand.agents")

#: Seconds a search waits for its tool's ingest before answering "still ingesting".
SEARCH_WAIT = 60.0
#: Seconds before the first retry after a store became unreachable; each failed retry doubles the delay...
RETRY_FIRST = 1.0
#: ...up to this many seconds between two retries, for as long as the outage lasts.
RETRY_MAX = 30.0
#: Names the front ends use for their own calls; a tool cannot take them.
MEMORY_CALLS = (
    "memory_store",
    "memory_get",
    "memory_query_range",
    "memory_query_before",
    "memory_search_content",
    "memory_search_semantic",
)
HOUSEKEEPING_CALLS = ("deckhand_list_tools", "deckhand_ingest", "deckhand_read")
RESERVED_NAMES = frozenset(MEMORY_CALLS + HOUSEKEEPING_CALLS)
#: Default result counts of the memory searches (the CLI's).
MEMORY_CONTENT_TOP_K = 10
MEMORY_SEMANTIC_TOP_K = 5

#: Receives ingest progress: a number that only grows, and a message such as "docs: embedding 12/40".
ProgressListener = Callable[[float, str], None]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class IngestProgress:
    """The ingest pipeline's ``Progress``: remembers where an ingest is and tells a listener."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.stage_name = ""
        self.total = 0
        self.done = 0
        self.units = 0.0  # steps done over every stage and ingest of this tool
        self.listener: ProgressListener | None = None

    def stage(self, name: str, total: int) -> None:
        self.stage_name, self.total, self.done = name, total, 0
        self._tell()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self.units += n
        self._tell()

    def describe(self) -> str:
        return f"{self.stage_name} {self.done}/{self.total}" if self.stage_name else "starting"

    def _tell(self) -> None:
        listener = self.listener
        if listener is not None:
            try:
                listener(self.units, f"{self.label}: {self.describe()}")
            except Exception:  # a listener must never break an ingest
                log.debug("progress listener failed", exc_info=True)


@dataclass
class _Outage:
    """A tool's store server is unreachable: since when, the last error, and when to try again."""

    since: float  # time.time() of the first failure
    error: str  # the last failure, one line, secrets masked
    attempts: int = 1  # failed ingests (the first one, then the retries)
    retry_at: float = 0.0  # time.monotonic() of the next retry
    retrying: bool = False  # a retry is running now

    def describe(self, now: float) -> str:
        """``store unreachable since 2026-11-25T17:38:22+00:00 (3 failed attempt(s); next retry in 4s)``."""
        since = datetime.fromtimestamp(self.since, UTC).isoformat(timespec="seconds")
        when = "retrying now" if self.retrying else f"next retry in {max(0.0, self.retry_at - now):.0f}s"
        return f"store unreachable since {since} ({self.attempts} failed attempt(s); {when})"


@dataclass
class _Slot:
    """One tool and what the toolbox knows about it."""

    tool: Any
    tracker: IngestProgress | None
    cond: threading.Condition = field(default_factory=threading.Condition)
    busy: bool = False  # a search or an ingest holds the tool
    ingesting: bool = False
    queued: int = 0  # background ingests not started yet
    ready: bool = False  # ingested at least once
    error: str | None = None  # why the last ingest failed
    outage: _Outage | None = None  # the store's server is unreachable (retried in the background)
    count: int = 0  # chunks stored, as last read (shown while the store is unreachable)


class Toolbox:
    """The calls an agent can make on one agent config: search each tool, memory, housekeeping."""

    def __init__(
        self,
        tools: Sequence[Any],
        memory: VectorMemoryManager | None = None,
        *,
        search_wait: float = SEARCH_WAIT,
        secrets: Sequence[str] = (),
        source_of: Callable[[Any], Path] | None = None,
        progress: Mapping[str, IngestProgress] | None = None,
        retry: tuple[float, float] = (RETRY_FIRST, RETRY_MAX),
        allow_fallback: bool | None = None,
    ) -> None:
        """Serve ``tools`` (built, not necessarily ingested) and ``memory``.

        ``progress`` maps a tool name to the :class:`IngestProgress` it was built with
        (``build_tool(..., progress=...)``), so its ingests can be followed; ``secrets`` are masked
        in every error; ``source_of`` tells where a tool's source is (default: its config's);
        ``retry`` is the first and the longest delay between two retries of an unreachable store;
        ``allow_fallback`` lets an unreachable store be replaced by the in-memory one for the rest of
        the run (None: as the database's ``allow_fallback`` says, else no).
        """
        names = [t.config.name for t in tools]
        for name in names:
            if name in RESERVED_NAMES:
                raise ConfigError(f"tool name {name!r} is reserved for deckhand's own calls; rename the tool")
        if len(set(names)) != len(names):
            raise ConfigError("two tools have the same name; tool names must be unique")
        self.memory = memory
        self.search_wait = search_wait
        self._slots: dict[str, _Slot] = {}
        for tool in tools:
            self._slots[tool.config.name] = _Slot(tool, (progress or {}).get(tool.config.name))
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self._source_of = source_of
        self._closing = threading.Event()
        self._background: threading.Thread | None = None
        self.retry_first, self.retry_max = retry
        self.allow_fallback = allow_fallback
        self._healer: threading.Thread | None = None
        self._heal_wake = threading.Event()
        self._heal_lock = threading.Lock()

    # -- construction --------------------------------------------------------------------
    @classmethod
    def from_config(
        cls,
        config_path: str | Path,
        *,
        registry: Any = None,
        memory: bool = True,
        search_wait: float = SEARCH_WAIT,
        extra_secrets: Sequence[str] = (),
        allow_fallback: bool | None = None,
    ) -> Toolbox:
        """Build the tools of ``config_path`` (nothing is ingested yet) and open its memory if configured.

        Memory is offered when agent.yaml or a global config file has a ``memory:`` section; its
        ``path`` defaults to agent.yaml's directory. Raises ``ConfigError`` (one line) for a bad
        config, and the memory backend's error if it cannot open.
        """
        from deckhand.config.loading import global_config_paths, load_agent_config
        from deckhand.tools import build_tool

        path = Path(config_path)
        if not path.is_file():
            raise ConfigError(f"{path}: file not found; pass --config PATH or create agent.yaml")
        config = load_agent_config(path)
        base_dir = path.resolve().parent
        for i, tool_config in enumerate(config.tools):
            if tool_config.name in RESERVED_NAMES:
                raise ConfigError(
                    f"{path}: tools[{i}].name: {tool_config.name!r} is reserved for deckhand's own calls;"
                    " rename the tool"
                )
        trackers = {t.name: IngestProgress(t.name) for t in config.tools}
        tools = [build_tool(t, base_dir=base_dir, registry=registry, progress=trackers[t.name]) for t in config.tools]
        manager = _open_memory(path, base_dir) if memory else None
        if not tools and manager is None:
            raise ConfigError(f"{path}: tools: no tools and no memory configured; nothing to serve")
        files = [path, *(p for p in global_config_paths(base_dir) if p.is_file())]
        secrets = [*_config_secrets(files), *extra_secrets]
        for tool in tools:
            database = getattr(tool.config, "database", None)
            url = getattr(database, "connection_string", None)
            if url:
                from deckhand.redaction import url_secrets

                secrets += url_secrets(url)

        def source_of(tool: Any) -> Path:
            source = Path(tool.config.source).expanduser()
            return source if source.is_absolute() else base_dir / source

        return cls(
            tools,
            manager,
            search_wait=search_wait,
            secrets=secrets,
            source_of=source_of,
            progress=trackers,
            allow_fallback=allow_fallback,
        )

    # -- what is served --------------------------------------------------------------------
    @property
    def tool_names(self) -> list[str]:
        return list(self._slots)

    def tool(self, name: str) -> Any:
        return self._slot(name).tool

    def source(self, name: str) -> Path:
        """The file or directory tool ``name`` ingests."""
        tool = self._slot(name).tool
        if self._source_of is not None:
            return self._source_of(tool)
        return Path(tool.config.source).expanduser().resolve()

    def redact(self, text: str) -> str:
        """``text`` with URL passwords and every known secret replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return redact_url(text)

    def error_line(self, exc: BaseException) -> str:
        """One line saying what went wrong, with no secret in it."""
        text = str(exc).strip()
        line = text.splitlines()[0] if text else type(exc).__name__
        if not isinstance(exc, (DeckhandError, ValueError, OSError, ConnectionError, RuntimeError)):
            line = f"internal error ({type(exc).__name__}): {line}"
        return self.redact(line)

    # -- ingestion -----------------------------------------------------------------------------
    def start_ingest(self, on_done: Callable[[str, Any, str | None], None] | None = None) -> None:
        """Ingest every tool, one after the other, in a background (daemon) thread.

        ``on_done(name, report, error)`` is called after each tool. Searches arriving meanwhile wait
        for their tool (see the module docstring).
        """
        names = list(self._slots)
        for name in names:
            slot = self._slots[name]
            with slot.cond:
                slot.queued += 1

        def run() -> None:
            for name in names:
                slot = self._slots[name]
                with slot.cond:
                    slot.queued -= 1
                if self._closing.is_set():
                    return
                try:
                    report = self.ingest(name)
                except CallError as exc:
                    if on_done:
                        on_done(name, None, str(exc))
                else:
                    if on_done:
                        on_done(name, report, None)

        self._background = threading.Thread(target=run, name="deckhand-ingest", daemon=True)
        self._background.start()

    def ingest(self, name: str, force: bool = False, listener: ProgressListener | None = None) -> Any:
        """Ingest tool ``name`` now (incrementally unless ``force``); its ``IngestReport``.

        Waits for a search or another ingest of the same tool to finish first.
        """
        from deckhand.stores.opening import fallback_policy

        slot = self._slot(name)
        with self._hold(name, slot, timeout=None):
            slot.ingesting = True
            if slot.tracker is not None:
                slot.tracker.listener = listener
            try:
                # A long-lived toolbox waits for its server to come back rather than serve an in-memory copy for good.
                with fallback_policy(self.allow_fallback, default=False):
                    report = slot.tool.initialize_sync(force)
            except Exception as exc:
                slot.error = self.error_line(exc)
                # A tool that lost its store (not an outage: the tool dropped it) has no index to answer from.
                slot.ready = slot.ready and bool(getattr(slot.tool, "is_initialized", True))
                if is_outage(exc):
                    outage = self._store_down(name, slot, slot.error)  # warns once, when the outage begins
                    log.info("tool %s: ingest failed, %s: %s", name, outage, slot.error)
                    raise CallError(f"{name}: ingest failed: {slot.error} ({outage})") from None
                self._store_up(name, slot, healed=False)
                log.warning("tool %s: ingest failed: %s", name, slot.error)
                raise CallError(f"{name}: ingest failed: {slot.error}") from None
            finally:
                slot.ingesting = False
                if slot.tracker is not None:
                    slot.tracker.listener = None
            slot.ready, slot.error = True, None
            self._store_up(name, slot, healed=True)
            self._count(name, slot)
            return report

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the background ingest (if any) finished; False on timeout."""
        if self._background is None:
            return True
        self._background.join(timeout)
        return not self._background.is_alive()

    @contextmanager
    def _hold(self, name: str, slot: _Slot, timeout: float | None) -> Iterator[None]:
        """Take the tool for one search or ingest; wait while another holds it or an ingest is queued."""
        with slot.cond:
            free = slot.cond.wait_for(
                lambda: self._closing.is_set() or not (slot.busy or (slot.queued and not slot.ready)), timeout
            )
            if self._closing.is_set():
                raise CallError(f"{name}: the server is shutting down")
            if not free:
                what = slot.tracker.describe() if slot.tracker is not None else "in progress"
                raise CallError(f"{name}: still ingesting ({what}); try again in a moment")
            slot.busy = True
        try:
            yield
        finally:
            with slot.cond:
                slot.busy = False
                slot.cond.notify_all()

    # -- outages ------------------------------------------------------------------------------------
    def _store_down(self, name: str, slot: _Slot, line: str, *, attempt: bool = True) -> str:
        """Record that tool ``name``'s store is unreachable; the outage in words.

        ``attempt``: an ingest (a retry) failed, so the next one is scheduled after a doubled delay;
        otherwise (a search or a count failed) only a new outage schedules its first retry.
        """
        now = time.monotonic()
        with slot.cond:
            outage = slot.outage
            if outage is None:
                outage = slot.outage = _Outage(since=time.time(), error=line, retry_at=now + self.retry_first)
                log.warning("tool %s: the store is unreachable; retrying in the background: %s", name, line)
            elif attempt:
                outage.retrying = False
                outage.attempts += 1
                outage.error = line
                outage.retry_at = now + min(self.retry_first * 2 ** (outage.attempts - 1), self.retry_max)
            else:
                outage.error = line
            described = outage.describe(now)
        self._wake_healer()
        return described

    def _store_up(self, name: str, slot: _Slot, *, healed: bool) -> None:
        """The store answered (``healed``: and an ingest brought the index up to date): the outage is over."""
        with slot.cond:
            outage, slot.outage = slot.outage, None
        if outage is not None and healed:
            log.warning(
                "tool %s: the store is reachable again after %.0fs; the index is up to date",
                name,
                time.time() - outage.since,
            )

    def _retry_due(self, slot: _Slot) -> bool:
        """Whether ``slot``'s store is unreachable and its next retry is due (claims the retry)."""
        with slot.cond:
            outage = slot.outage
            if outage is None or outage.retry_at > time.monotonic():
                return False
            # Claimed: a second caller waits for the outcome of this attempt rather than repeat it.
            outage.retry_at = time.monotonic() + self.retry_max
            outage.retrying = True
            return True

    def _retry_now(self, slot: _Slot) -> None:
        with slot.cond:
            if slot.outage is not None:
                slot.outage.retry_at = 0.0
        self._wake_healer()

    def _wake_healer(self) -> None:
        """Start the thread that retries unreachable stores (once), or wake it to look again."""
        with self._heal_lock:
            if self._closing.is_set():
                return
            if self._healer is None or not self._healer.is_alive():
                self._healer = threading.Thread(target=self._heal, name="deckhand-heal", daemon=True)
                self._healer.start()
        self._heal_wake.set()

    def _heal(self) -> None:
        """Re-ingest each tool whose store is unreachable when its retry is due, until every outage is over."""
        while not self._closing.is_set():
            self._heal_wake.clear()
            pending = [(n, s) for n, s in self._slots.items() if s.outage is not None]
            if not pending:
                with self._heal_lock:
                    if not self._heal_wake.is_set():
                        self._healer = None
                        return
                continue
            for name, slot in pending:
                if self._closing.is_set():
                    return
                if self._retry_due(slot):
                    try:
                        self.ingest(name)  # incremental: also picks up what changed during the outage
                    except CallError as exc:
                        log.debug("tool %s: retry failed: %s", name, exc)
            now = time.monotonic()
            waits = [s.outage.retry_at - now for _, s in pending if s.outage is not None]
            if waits:
                self._heal_wake.wait(max(0.05, min(waits)))

    # -- search ------------------------------------------------------------------------------------
    def search(self, name: str, args: SearchArguments) -> tuple[str, SearchOutput]:
        """Search tool ``name``: the contract's text and the structured results."""
        slot = self._slot(name)
        if not slot.ready and not slot.queued and not slot.busy and slot.error is None:
            self.ingest(name)  # nobody ingested this tool yet: its first search does (lazy front ends)
        elif not slot.ready and self._retry_due(slot):
            with contextlib.suppress(CallError):  # the store may be back: try now rather than at the next retry
                self.ingest(name)
        with self._hold(name, slot, timeout=self.search_wait):
            if not slot.ready:
                if slot.outage is not None:
                    raise CallError(
                        f"{name}: not available: {slot.outage.describe(time.monotonic())}: {slot.outage.error}; "
                        "it is retried automatically"
                    )
                reason = slot.error or "it has not been ingested"
                raise CallError(f"{name}: not available: {reason}; fix it, then call deckhand_ingest")
            tool = slot.tool
            try:
                extra = _filter_argument(tool, args.filter)
                results = tool.search_results_sync(args.query, args.top_k, **extra)
                if results:
                    from deckhand.tools.results import format_results

                    text = getattr(tool, "format_results", format_results)(results)  # a tool's own text format
                else:
                    text = tool.search_text_sync(args.query, **extra)  # the contract's "no results" wording
            except CallError:
                raise
            except Exception as exc:
                line = self.error_line(exc)
                if is_outage(exc):
                    outage = self._store_down(name, slot, line, attempt=False)
                    raise CallError(f"{name}: {line} ({outage}; the index is kept)") from None
                raise CallError(f"{name}: {line}") from None
            if slot.outage is not None:
                self._retry_now(slot)  # the store answers again: re-ingest what changed meanwhile
        hits = [_hit(r) for r in results]
        return text, SearchOutput(tool=name, query=args.query, results=hits)

    # -- memory ------------------------------------------------------------------------------------------
    def _memory(self, call: str) -> VectorMemoryManager:
        if self.memory is None:
            raise CallError(f"{call}: no memory is configured; add a memory: section to agent.yaml")
        return self.memory

    @contextmanager
    def _memory_errors(self, call: str) -> Iterator[None]:
        try:
            yield
        except CallError:
            raise
        except Exception as exc:
            raise CallError(f"{call}: {self.error_line(exc)}") from None

    def _decision(self, decision: Any, **extra: Any) -> DecisionOut:
        assert self.memory is not None
        c = decision.coordinate
        return DecisionOut(
            x=c.x,
            y=c.y,
            z=c.z,
            content=decision.content,
            agent_id=decision.agent_id,
            timestamp=decision.timestamp.isoformat(),
            issue_context=decision.issue_context,
            location=self.memory.backend.locate(c),
            **extra,
        )

    def memory_store(self, args: MemoryStoreArguments) -> tuple[str, DecisionOutput]:
        from deckhand.memory.coordinates import VectorCoordinate

        manager = self._memory("memory_store")
        with self._memory_errors("memory_store"):
            decision = manager.store(VectorCoordinate(args.x, args.y, args.z), args.content, args.issue_context)
            out = self._decision(decision)
        return f"stored {decision.coordinate} at {out.location}", DecisionOutput(found=True, decision=out)

    def memory_get(self, args: MemoryGetArguments) -> tuple[str, DecisionOutput]:
        from deckhand.memory.coordinates import VectorCoordinate

        manager = self._memory("memory_get")
        with self._memory_errors("memory_get"):
            coord = VectorCoordinate(args.x, args.y, args.z)
            decision = manager.get(coord)
            if decision is None:
                return f"no decision at {coord}", DecisionOutput(found=False)
            out = self._decision(decision)
        return _decision_text(out), DecisionOutput(found=True, decision=out)

    def memory_query_range(self, args: MemoryRangeArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_query_range")
        with self._memory_errors("memory_query_range"):
            found = manager.query_range(_pair(args.x_range), _pair(args.y_range), _pair(args.z_range))
            return self._listing(found, args.limit)

    def memory_query_before(self, args: MemoryBeforeArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_query_before")
        with self._memory_errors("memory_query_before"):
            found = manager.query_partial_order(args.x, args.y, args.z)
            return self._listing(found, args.limit)

    def memory_search_content(self, args: MemorySearchContentArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_search_content")
        with self._memory_errors("memory_search_content"):
            ranked = manager.search_content_ranked(list(args.terms), args.match_all)
            shown = ranked[: args.top_k or MEMORY_CONTENT_TOP_K]
            decisions = [self._decision(d, matched_terms=n) for d, n in shown]
        return _listing_text(decisions, len(ranked)), DecisionsOutput(count=len(ranked), decisions=decisions)

    def memory_search_semantic(self, args: MemorySearchSemanticArguments) -> tuple[str, DecisionsOutput]:
        manager = self._memory("memory_search_semantic")
        with self._memory_errors("memory_search_semantic"):
            hits = manager.search_semantic(args.query, args.top_k or MEMORY_SEMANTIC_TOP_K)
            decisions = [self._decision(h.decision, score=round(h.score, 4)) for h in hits]
        return _listing_text(decisions, len(decisions)), DecisionsOutput(count=len(decisions), decisions=decisions)

    def _listing(self, found: Sequence[Any], limit: int | None) -> tuple[str, DecisionsOutput]:
        shown = found[:limit] if limit else found
        decisions = [self._decision(d) for d in shown]
        return _listing_text(decisions, len(found)), DecisionsOutput(count=len(found), decisions=decisions)

    # -- housekeeping ------------------------------------------------------------------------------------------
    def list_tools(self) -> tuple[str, ToolListOutput]:
        """Every tool with its source, state, chunk count and last ingest; the memory if any."""
        statuses = [self._status(name, slot) for name, slot in self._slots.items()]
        memory = None
        if self.memory is not None:
            memory = MemoryStatus(
                backend=self.memory.backend_name, agent_id=self.memory.agent_id, decisions=len(self.memory)
            )
        lines = []
        for s in statuses:
            when = s.last_ingest_time or "never"
            line = f"{s.name} ({s.type}): {s.state}, {s.document_count} chunks from {s.source}, last ingest {when}"
            if s.outage:
                line += f"; {s.outage}"
            if s.error:
                line += f"; error: {s.error}"
            lines.append(line)
        if memory is not None:
            lines.append(f"memory ({memory.backend}): {memory.decisions} decision(s), agent {memory.agent_id}")
        return "\n".join(lines) or "no tools", ToolListOutput(tools=statuses, memory=memory)

    def _status(self, name: str, slot: _Slot) -> ToolStatus:
        from deckhand.tools.results import tool_function

        tool = slot.tool
        count = self._count(name, slot)
        outage = slot.outage
        if outage is not None:
            state = "unreachable"  # also while a retry runs: the outage text says "retrying now"
        elif slot.ingesting:
            state = "ingesting"
        elif slot.ready:
            state = "ready"
        elif slot.error:
            state = "failed"
        else:
            state = "pending"
        said = None
        if outage is not None:
            kept = f"the last index ({count} chunks) is kept" if slot.ready else "nothing is indexed yet"
            said = f"{outage.describe(time.monotonic())}; {kept}; searches answer again once it is back"
        stamp = getattr(tool, "last_ingest_time", None)
        report = getattr(tool, "last_report", None)
        return ToolStatus(
            name=name,
            type=str(getattr(tool.config, "type", "")),
            description=tool_function(tool)["description"],
            source=str(self.source(name)),
            state=state,
            provider=getattr(tool, "provider", None),
            document_count=count,
            last_ingest_time=datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds") if stamp else None,
            last_ingest=report.summary() if report is not None else None,
            error=slot.error,
            outage=said,
        )

    def _count(self, name: str, slot: _Slot) -> int:
        """The tool's chunk count; the last one read while its store cannot answer (an outage is noted)."""
        try:
            slot.count = int(slot.tool.document_count)
        except Exception as exc:  # the store may be gone; the listing must still answer
            line = self.error_line(exc)
            log.debug("tool %s: document_count failed: %s", name, line)
            if is_outage(exc):
                self._store_down(name, slot, line, attempt=False)
        return slot.count

    def reingest(self, args: IngestArguments, listener: ProgressListener | None = None) -> tuple[str, IngestOutput]:
        """Re-ingest one tool (or all): incremental unless ``force``; one summary per tool."""
        if args.tool is not None and args.tool not in self._slots:
            raise CallError(f"deckhand_ingest: tool: no tool named {args.tool!r} (tools: {self._known()})")
        names = [args.tool] if args.tool else list(self._slots)
        summaries, failures = [], []
        for name in names:
            try:
                report = self.ingest(name, args.force, listener)
            except CallError as exc:
                failures.append(str(exc))
                continue
            summaries.append(
                IngestSummary(
                    tool=name,
                    summary=report.summary(),
                    ingested=len(report.ingested),
                    unchanged=len(report.unchanged),
                    removed=len(report.removed),
                    chunks_written=report.chunks_written,
                    failed=[self.redact(f"{s.display}: {s.reason}") for s in report.failed],
                    skipped=[self.redact(f"{s.display}: {s.reason}") for s in report.skipped],
                )
            )
        if failures:
            raise CallError("; ".join(failures))
        text = "\n".join(f"{s.tool}: {s.summary}" for s in summaries)
        return text, IngestOutput(tools=summaries)

    def tools_for(self, paths: Sequence[Path]) -> list[str]:
        """The tools whose source is, or contains, one of ``paths``."""
        resolved = [p.resolve() for p in paths]
        hit = []
        for name in self._slots:
            source = self.source(name).resolve()
            if any(p == source or source in p.parents for p in resolved):
                hit.append(name)
        return hit

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Wake every waiting call, then release the tools that are idle and the memory."""
        self._closing.set()
        self._heal_wake.set()
        for name, slot in self._slots.items():
            with slot.cond:
                slot.cond.notify_all()
                busy = slot.busy
            if busy:
                continue  # an ingest thread still uses it; it ends with the process
            try:
                slot.tool.close()
            except Exception as exc:
                log.debug("tool %s: close failed: %s", name, self.redact(str(exc)))
        if self.memory is not None:
            try:
                self.memory.close()
            except Exception as exc:
                log.debug("memory: close failed: %s", self.redact(str(exc)))

    def _slot(self, name: str) -> _Slot:
        slot = self._slots.get(name)
        if slot is None:
            raise CallError(f"unknown tool {name!r} (tools: {self._known()})")
        return slot

    def _known(self) -> str:
        return ", ".join(self._slots) or "none"


def _hit(result: Any) -> Hit:
    definitions = [
        DefinitionOut(term=d.term, definition=d.definition, source=d.source) for d in getattr(result, "definitions", [])
    ]
    references = [
        ReferenceOut(section_id=r.section_id, location=r.location, resolved=r.resolved)
        for r in getattr(result, "references", [])
    ]
    return Hit(
        rank=result.rank,
        score=result.score,
        source=result.source,
        chunk_index=result.chunk_index,
        content=result.content,
        location=getattr(result, "location", None) or None,
        section_id=getattr(result, "section_id", None),
        definitions=definitions,
        references=references,
        start_line=_line(result, "start_line"),
        end_line=_line(result, "end_line"),
    )


def _line(result: Any, key: str) -> int | None:
    value = (getattr(result, "metadata", None) or {}).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _pair(values: list[int] | None) -> Any:
    # A list of any length goes to the manager, whose QueryError says what a range must be.
    return tuple(values) if values is not None else None


def _decision_text(d: DecisionOut) -> str:
    context = "".join(f"\n{k}: {v}" for k, v in (d.issue_context or {}).items())
    return f"({d.x}, {d.y}, {d.z}) by {d.agent_id} at {d.timestamp}{context}\n\n{d.content}"


def _listing_text(decisions: Sequence[DecisionOut], total: int) -> str:
    blocks = [f"{total} decision(s)" + (f", showing {len(decisions)}" if len(decisions) < total else "")]
    for d in decisions:
        extra = f" | score {d.score:.3f}" if d.score is not None else ""
        extra += f" | {d.matched_terms} term(s)" if d.matched_terms is not None else ""
        blocks.append(f"[({d.x}, {d.y}, {d.z}){extra}] {d.agent_id} at {d.timestamp}\n{d.content}")
    return "\n\n".join(blocks)


def _open_memory(config_path: Path, base_dir: Path) -> VectorMemoryManager | None:
    from deckhand.memory.settings import open_memory, resolve_memory_config

    resolved = resolve_memory_config(config_path, cwd=base_dir)
    if not resolved.sources:
        return None
    manager = open_memory(resolved.config, agent_id=resolved.agent_id, cwd=base_dir)
    for error in manager.load_errors:
        log.warning("memory: %s", error)
    return manager


def _config_secrets(files: Sequence[Path]) -> list[str]:
    """The values config files take from ``${VARS}``: treated as secrets wherever they would show."""
    found: list[str] = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += [os.environ[name] for name in _VAR.findall(text) if os.environ.get(name)]
    return found


def _filter_argument(tool: Any, where: Any) -> dict[str, Any]:
    """``{"filter": where}`` for a search with a filter; a tool whose search takes none refuses it in one line."""
    if where is None:
        return {}
    try:
        takes = "filter" in inspect.signature(tool.search_results_sync).parameters
    except (TypeError, ValueError):
        takes = True
    if not takes:
        raise CallError(f"{tool.config.name}: this tool's search takes no filter; search without one")
    return {"filter": where}
