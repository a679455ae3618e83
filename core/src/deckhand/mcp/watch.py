"""``deckhand mcp --watch``: re-ingest a tool when files under its source change.

Uses ``watchfiles`` (native notifications: inotify, FSEvents, ReadDirectoryChangesW). Changes
are debounced: a batch is handled once no file changed for :data:`QUIET_MS` (and at the latest
after :data:`MAX_BATCH_MS` of continuous changes), so saving ten files re-ingests once. Only
files ingestion would read count (supported extensions, no hidden files or directories). The
re-ingest is the tools' ordinary incremental one: changed and new files are ingested, deleted
ones removed, the rest only checked. Searches arriving meanwhile wait for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from deckhand.agents.calls import CallError
from deckhand.agents.toolbox import Toolbox
from deckhand.mcp.server import in_daemon_thread

log = logging.getLogger("deckhand.mcp")

#: A batch of changes is handled after this many quiet milliseconds...
QUIET_MS = 400
#: ...or after this many, if files keep changing.
MAX_BATCH_MS = 5000


def _extensions() -> set[str]:
    from deckhand.ingest.pipeline import LoaderSet
    from deckhand.plugins import get_registry

    return set(LoaderSet.from_registry(get_registry()).by_extension)


class _SourceFilter:
    """Which changed paths matter: a watched file itself, or a supported file inside a watched directory."""

    def __init__(self, sources: Collection[Path], extensions: Collection[str]) -> None:
        self.files = {s for s in sources if not s.is_dir()}
        self.dirs = [s for s in sources if s.is_dir()]
        self.extensions = {e.lower() for e in extensions}

    def __call__(self, change: Any, raw: str) -> bool:
        path = Path(raw)
        if path in self.files:
            return True
        for root in self.dirs:
            if root in path.parents:
                relative = path.relative_to(root).parts
                if any(part.startswith(".") for part in relative):
                    return False
                return path.suffix.lower() in self.extensions
        return False


async def watch_sources(
    toolbox: Toolbox,
    on_ingested: Callable[[str, Any, str | None], None] | None = None,
    stop: asyncio.Event | None = None,
    quiet_ms: int = QUIET_MS,
) -> None:
    """Watch every tool's source until cancelled (or ``stop`` is set) and re-ingest what changed."""
    from watchfiles import awatch

    sources: dict[str, Path] = {}
    for name in toolbox.tool_names:
        source = toolbox.source(name).resolve()
        if not source.exists():
            log.warning("--watch: tool %s: source %s does not exist; not watched", name, source)
            continue
        sources[name] = source
    if not sources:
        return
    keep = _SourceFilter(sources.values(), _extensions())
    # Directory sources are watched recursively; a file source through its directory, not recursively
    # (editors save by replacing the file, which a watch on the file itself would lose).
    recursive = sorted({str(p) for p in sources.values() if p.is_dir()})
    flat = sorted({str(p.parent) for p in sources.values() if not p.is_dir()} - set(recursive))
    lock = asyncio.Lock()

    async def handle(changes: set[tuple[Any, str]]) -> None:
        names = toolbox.tools_for([Path(p) for _, p in changes])
        async with lock:  # one batch at a time, in order
            for name in names:
                log.info("--watch: %s changed (%d file(s)); re-ingesting", name, len(changes))
                try:
                    report = await in_daemon_thread(toolbox.ingest, name)
                except CallError as exc:
                    if on_ingested:
                        on_ingested(name, None, str(exc))
                else:
                    if on_ingested:
                        on_ingested(name, report, None)

    async def run(paths: list[str], is_recursive: bool) -> None:
        async for changes in awatch(
            *paths,
            watch_filter=keep,
            debounce=MAX_BATCH_MS,
            step=quiet_ms,
            stop_event=stop,
            recursive=is_recursive,
        ):
            await handle(changes)

    async with asyncio.TaskGroup() as group:
        if recursive:
            group.create_task(run(recursive, True))
        if flat:
            group.create_task(run(flat, False))
