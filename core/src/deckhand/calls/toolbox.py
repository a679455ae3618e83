"""An agent config's tools and memory, answering every front end's calls from any number of threads: one search or
ingest at a time per tool, one-line errors without secrets, outages healed in the background (docs/mcp.md)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from deckhand.calls.call_models import (
    CallError,
    IngestArguments,
    IngestOutput,
    IngestSummary,
    MemoryStatus,
    SearchArguments,
    SearchOutput,
    ToolListOutput,
)
from deckhand.calls.memory_calls import (
    MEMORY_CALLS,
    MEMORY_CONTENT_TOP_K,
    MEMORY_SEMANTIC_TOP_K,
    MemoryCalls,
    open_configured_memory,
)
from deckhand.calls.outages import RETRY_FIRST, RETRY_MAX, OutageHealing
from deckhand.calls.output import hit_of, stale_line, stale_of
from deckhand.calls.progress_listener import IngestProgress, ProgressListener
from deckhand.calls.redacting import Redactor, config_secrets
from deckhand.calls.slots import Slot, hold
from deckhand.calls.status import listing_text, tool_status
from deckhand.calls.write_calls import WRITE_CALLS, WriteCalls, WriteState, entry_counts
from deckhand.errors import ConfigError, is_outage
from deckhand.ingest.freshness import SourceChanges
from deckhand.tools import ToolBase
from deckhand.tools.answers import SearchOptions

if TYPE_CHECKING:
    from deckhand.memory.manager import VectorMemoryManager

__all__ = [
    "HOUSEKEEPING_CALLS",
    "MEMORY_CALLS",
    "MEMORY_CONTENT_TOP_K",
    "MEMORY_SEMANTIC_TOP_K",
    "RESERVED_NAMES",
    "RETRY_FIRST",
    "RETRY_MAX",
    "SEARCH_WAIT",
    "STATUS_WAIT",
    "IngestProgress",
    "ProgressListener",
    "Toolbox",
]

log = logging.getLogger("deckhand.calls")

T = TypeVar("T")

#: Seconds a search waits for its tool's ingest before answering "still ingesting".
SEARCH_WAIT = 60.0
#: Seconds a search reuses its tool's last check of the source for changed files (``SourceTool.source_changes``).
CHANGES_TTL = 2.0
#: Seconds ``deckhand_list_tools`` waits, all tools together, for fresh chunk counts (else: the count read last).
STATUS_WAIT = 0.5
#: Names the front ends use for their own calls; a tool cannot take them.
HOUSEKEEPING_CALLS = ("deckhand_list_tools", "deckhand_ingest", "deckhand_read")
RESERVED_NAMES = frozenset(MEMORY_CALLS + HOUSEKEEPING_CALLS + WRITE_CALLS)


class Toolbox(MemoryCalls, WriteCalls):
    """The calls an agent can make on one agent config: search each tool, memory, housekeeping."""

    def __init__(
        self,
        tools: Sequence[ToolBase],
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

        ``progress`` maps a tool name to its :class:`IngestProgress`; ``secrets`` are masked in every error; ``retry``
        is the first and longest delay between retries of an unreachable store; ``allow_fallback`` None follows the
        database config."""
        names = [t.config.name for t in tools]
        for name in names:
            if name in RESERVED_NAMES:
                raise ConfigError(f"tool name {name!r} is reserved for deckhand's own calls; rename the tool")
        if len(set(names)) != len(names):
            raise ConfigError("two tools have the same name; tool names must be unique")
        self.memory = memory
        self.search_wait = search_wait
        self._slots: dict[str, Slot] = {}
        for tool in tools:
            self._slots[tool.config.name] = Slot.serving(tool, (progress or {}).get(tool.config.name))
        self._redactor = Redactor(secrets)
        self._source_of = source_of
        self._closing = threading.Event()
        self._background: threading.Thread | None = None
        self.allow_fallback = allow_fallback
        #: Records the stores' outages and retries them in the background.
        self.healing = OutageHealing(self._slots, self._closing, self.ingest, retry)
        #: The write calls' rate buckets and change listeners (:mod:`deckhand.calls.write_calls`).
        self.writes = WriteState()

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
        """Build the tools of ``config_path`` (nothing ingested yet) and open its memory if one is configured."""
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
        manager = open_configured_memory(path, base_dir) if memory else None
        if not tools and manager is None:
            raise ConfigError(f"{path}: tools: no tools and no memory configured; nothing to serve")
        files = [path, *(p for p in global_config_paths(base_dir) if p.is_file())]
        secrets = [*config_secrets(files), *extra_secrets]
        for tool in tools:
            source = tool.config.source_config()
            url = source.database.connection_string if source is not None and source.database is not None else None
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
        config: Any = tool.config  # a served tool's entry has a source: (SourceToolConfig or its plugin's own)
        return Path(config.source).expanduser().resolve()

    def redact(self, text: str) -> str:
        """``text`` with URL passwords and every known secret replaced by ``***``."""
        return self._redactor.redact(text)

    def error_line(self, exc: BaseException) -> str:
        """One line saying what went wrong, with no secret in it."""
        return self._redactor.error_line(exc)

    # -- ingestion -----------------------------------------------------------------------------
    def start_ingest(self, on_done: Callable[[str, Any, str | None], None] | None = None) -> None:
        """Ingest every tool in turn in a daemon thread, calling ``on_done(name, report, error)`` after each."""
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
        """Ingest tool ``name`` now (incrementally unless ``force``), after any search or ingest of it."""
        from deckhand.stores.tool_store import fallback_policy

        slot = self._slot(name)
        with self._hold(name, slot, timeout=None):
            slot.ingesting = True
            if slot.tracker is not None:
                slot.tracker.listener = listener
            try:
                # A long-lived toolbox waits for its server to come back rather than serve an in-memory copy for good.
                with fallback_policy(self.allow_fallback, default=False):
                    tool = slot.tool
                    if tool.index is not None and not tool.is_initialized and not force:
                        # The index as the last ingest left it, first: the listing counts what it holds meanwhile.
                        tool.open_ingested()
                        self._count(name, slot)
                    report = tool.initialize_sync(force)
            except Exception as exc:
                slot.error = self.error_line(exc)
                # A tool that lost its store (not an outage: the tool dropped it) has no index to answer from.
                slot.ready = slot.ready and slot.tool.is_initialized
                if is_outage(exc):
                    outage = self.healing.store_down(name, slot, slot.error)  # warns once, when the outage begins
                    log.info("tool %s: ingest failed, %s: %s", name, outage, slot.error)
                    raise CallError(f"{name}: ingest failed: {slot.error} ({outage})") from None
                self.healing.store_up(name, slot, healed=False)
                log.warning("tool %s: ingest failed: %s", name, slot.error)
                raise CallError(f"{name}: ingest failed: {slot.error}") from None
            finally:
                slot.ingesting = False
                slot.changes = slot.changes_at = None  # what changed is ingested now (or the next check says)
                if slot.tracker is not None:
                    slot.tracker.listener = None
            slot.ready, slot.error = True, None
            self.healing.store_up(name, slot, healed=True)
            self._count(name, slot)
            return report

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the background ingest (if any) finished; False on timeout."""
        if self._background is None:
            return True
        self._background.join(timeout)
        return not self._background.is_alive()

    @contextmanager
    def _hold(self, name: str, slot: Slot, timeout: float | None) -> Iterator[None]:
        """Take the tool for one search or ingest; wait while another holds it or an ingest is queued."""
        with hold(name, slot, self._closing, timeout):
            yield

    # -- search ------------------------------------------------------------------------------------
    def search(self, name: str, args: SearchArguments) -> tuple[str, SearchOutput]:
        """Search tool ``name``: the contract's text and the structured results."""
        slot = self._slot(name)
        asked = time.monotonic()
        if not slot.ready and not slot.queued and not slot.busy and slot.error is None:
            self.ingest(name)  # nobody ingested this tool yet: its first search does (lazy front ends)
        elif not slot.ready and self.healing.retry_due(slot):
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
            down = slot.outage
            if down is not None and down.failed_at >= asked:
                # The call this search waited for just found the store unreachable: say so rather than wait again.
                raise CallError(f"{name}: {down.error} ({down.describe(time.monotonic())}; the index is kept)")
            tool = slot.tool
            try:
                extra = _filter_argument(name, slot, args.filter)
                # One pass: the results, their text, why there are none (a tool type of its own: its own text).
                answer = tool.answer(args.query, SearchOptions(args.top_k, extra.get("filter")))
                results, text = answer.results, answer.text
                changes = self._changes(name, slot)
            except CallError:
                raise
            except Exception as exc:
                line = self.error_line(exc)
                if is_outage(exc):
                    outage = self.healing.store_down(name, slot, line, attempt=False)
                    raise CallError(f"{name}: {line} ({outage}; the index is kept)") from None
                raise CallError(f"{name}: {line}") from None
            if slot.outage is not None:
                self.healing.retry_now(slot)  # the store answers again: re-ingest what changed meanwhile
        hits = [hit_of(r) for r in results]
        found = SearchOutput(tool=name, query=args.query, results=hits)
        if not hits:
            found.note = text  # why the answer is empty, for clients that read only the structured answer
        if changes is not None and changes.total:
            found.stale = stale_of(name, changes)
            line = stale_line(found.stale)
            text = f"{line}\n\n{text}"
            found.note = line if found.note is None else f"{line} {found.note}"
        return text, found

    def _changes(self, name: str, slot: Slot) -> SourceChanges | None:
        """What changed under tool ``name``'s source since its last ingest (None: not checkable), cached a while."""
        tool = slot.tool
        now = time.monotonic()
        if slot.changes_at is None or now - slot.changes_at > CHANGES_TTL:
            try:
                slot.changes = tool.source_changes()
            except Exception as exc:  # the source went away meanwhile: the next ingest says so
                log.debug("tool %s: the source was not checked for changes: %s", name, self.error_line(exc))
                slot.changes = None
            slot.changes_at = now
        return slot.changes

    @contextmanager
    def using(self, name: str, timeout: float | None = None) -> Iterator[Any]:
        """Tool ``name``, held as a search holds it (ingested first if need be), for front ends reading more."""
        slot = self._slot(name)
        if not slot.ready and not slot.queued and not slot.busy and slot.error is None:
            self.ingest(name)
        with self._hold(name, slot, timeout=self.search_wait if timeout is None else timeout):
            if not slot.ready:
                reason = slot.outage.error if slot.outage is not None else slot.error or "it has not been ingested"
                raise CallError(f"{name}: not available: {reason}")
            yield slot.tool

    def progress(self, name: str) -> str | None:
        """Where tool ``name``'s ingest is ("embedding 12/40"), None when it is not ingesting."""
        slot = self._slot(name)
        if not slot.ingesting:
            return None
        return slot.tracker.describe() if slot.tracker is not None else "ingesting"

    # -- housekeeping ------------------------------------------------------------------------------------------
    def list_tools(self) -> tuple[str, ToolListOutput]:
        """Every tool with its source, state, chunk count and last ingest, and the memory; never blocks on a store."""
        until = time.monotonic() + STATUS_WAIT
        counting = [self._refresh_count(name, slot) for name, slot in self._slots.items()]
        for done in counting:
            done.wait(max(0.0, until - time.monotonic()))
        statuses = [
            tool_status(name, slot, count=slot.count, source=self.source(name)) for name, slot in self._slots.items()
        ]
        memory = None
        if self.memory is not None:
            memory = MemoryStatus(
                backend=self.memory.backend_name, agent_id=self.memory.agent_id, decisions=len(self.memory)
            )
        return listing_text(statuses, memory), ToolListOutput(tools=statuses, memory=memory)

    def _refresh_count(self, name: str, slot: Slot) -> threading.Event:
        """Read tool ``name``'s chunk count in a daemon thread; the event is set once it is in."""
        with slot.cond:
            if slot.counting is not None:
                return slot.counting  # still waiting on the store: no second reader piles up behind it
            done = threading.Event()
            if slot.outage is not None:
                done.set()
                return done
            slot.counting = done

        def count() -> None:
            try:
                self._count(name, slot)
            finally:
                with slot.cond:
                    slot.counting = None
                done.set()

        threading.Thread(target=count, name=f"deckhand-count-{name}", daemon=True).start()
        return done

    def _count(self, name: str, slot: Slot) -> int:
        """The tool's chunk count; the last one read while its store cannot answer (an outage is noted)."""
        try:
            slot.count = int(slot.tool.document_count)
            slot.entries = entry_counts(slot.tool)
            index = slot.tool.index
            slot.search_note = index.search_note() if index is not None else None
        except Exception as exc:  # the store may be gone; the listing must still answer
            line = self.error_line(exc)
            log.debug("tool %s: document_count failed: %s", name, line)
            if is_outage(exc):
                self.healing.store_down(name, slot, line, attempt=False)
        return slot.count

    def change_stamp(self, name: str, timeout: float) -> Any:
        """A value that changes when what tool ``name`` holds changes; None when unreadable within ``timeout``."""

        def stamp(tool: Any) -> Any:
            index = tool.index
            return index.change_stamp() if index is not None else ("count", int(tool.document_count))

        return self._read_held(name, timeout, stamp)

    def indexed_files(self, name: str, timeout: float) -> dict[Path | str, str] | None:
        """The files tool ``name`` holds with their content hashes; None when they cannot be read now."""
        return self._read_held(name, timeout, lambda tool: _index_of(tool, lambda index: index.indexed_files()))

    def section_ids(self, name: str, timeout: float) -> list[str]:
        """The section ids tool ``name``'s chunks carry; none when they cannot be read now."""
        return self._read_held(name, timeout, lambda tool: _index_of(tool, lambda index: index.section_ids())) or []

    def _read_held(self, name: str, timeout: float, read: Callable[[Any], T]) -> T | None:
        slot = self._slot(name)
        if not slot.ready or slot.outage is not None:
            return None
        try:
            with self._hold(name, slot, timeout=timeout):
                return read(slot.tool)
        except Exception as exc:  # busy, closing, or the store failed: nothing this time
            log.debug("tool %s: what it holds was not read: %s", name, self.error_line(exc))
            return None

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
        self.healing.wake()
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

    def _slot(self, name: str) -> Slot:
        slot = self._slots.get(name)
        if slot is None:
            raise CallError(f"unknown tool {name!r} (tools: {self._known()})")
        return slot

    def _known(self) -> str:
        return ", ".join(self._slots) or "none"


def _index_of(tool: Any, read: Callable[[Any], T]) -> T | None:
    """``read`` of ``tool``'s index (None: a tool that holds none)."""
    index = tool.index
    return read(index) if index is not None else None


def _filter_argument(name: str, slot: Slot, where: Any) -> dict[str, Any]:
    """``{"filter": where}`` for a search with a filter; a tool whose search takes none refuses it in one line."""
    if where is None:
        return {}
    if not slot.takes_filter:
        raise CallError(f"{name}: this tool's search takes no filter; search without one")
    return {"filter": where}
