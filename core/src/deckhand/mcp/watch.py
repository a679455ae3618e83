"""``deckhand mcp --watch``: re-ingest a tool when files it would ingest change (debounced, ``watchfiles``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from deckhand.calls.call_models import CallError
from deckhand.calls.toolbox import Toolbox
from deckhand.ingest.file_types import SCRIPT, file_type
from deckhand.ingest.gitignore import GitIgnore
from deckhand.ingest.selection import EVERYTHING, Selection
from deckhand.mcp.server import in_daemon_thread

log = logging.getLogger("deckhand.mcp")

#: A batch of changes is handled after this many quiet milliseconds...
QUIET_MS = 400
#: ...or after this many, if files keep changing.
MAX_BATCH_MS = 5000


def _extensions(toolbox: Toolbox, names: Iterable[str]) -> set[str]:
    """The extensions some watched tool reads, through its own loaders (deckhand's and those it opted in to)."""
    from deckhand.calls.source_reading import tool_loaders

    return {extension for name in names for extension in tool_loaders(toolbox.tool(name)).by_extension}


class _SourceFilter:
    """Which changed paths matter: a watched file itself, or a supported file inside a watched directory that
    the directory's tools' selections take (``selections``: source directory → the selections of its tools)."""

    def __init__(
        self,
        sources: Collection[Path],
        extensions: Collection[str],
        selections: Mapping[Path, Collection[Selection]] | None = None,
    ) -> None:
        self.files = {s for s in sources if not s.is_dir()}
        self.dirs = [s for s in sources if s.is_dir()]
        self.extensions = {e.lower() for e in extensions}
        self.selections = selections or {}

    def __call__(self, change: Any, raw: str) -> bool:
        path = Path(raw)
        return path in self.files or any(self.taken(path, root) for root in self.dirs)

    def readable(self, path: Path) -> bool:
        """Whether a loader reads ``path`` by its type (a script without extension that is gone: it may have been)."""
        if file_type(path, self.extensions) in self.extensions:
            return True
        return SCRIPT in self.extensions and not path.suffix and not path.exists()

    def taken(self, path: Path, root: Path, selection: Selection | None = None) -> bool:
        """Whether ``path`` is a file ingestion would read under directory ``root``."""
        if root not in path.parents:
            return False
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not self.readable(path):
            return False
        chosen = [selection] if selection is not None else self.selections.get(root, [EVERYTHING])
        read = [s for s in chosen if s.reads(relative.as_posix())]
        if not read or not all(s.gitignore for s in read):
            return bool(read)
        ignore = GitIgnore.of(root.resolve())  # read afresh: an edited .gitignore counts from the next change
        return ignore is None or not ignore.ignores(path.resolve(), directory=False)


def _selection(toolbox: Toolbox, name: str) -> Selection:
    """The ``include:``/``exclude:`` selection of tool ``name`` (every file for a tool type without a source)."""
    config = toolbox.tool(name).config.source_config()
    if config is None:
        return EVERYTHING
    return Selection.of(
        config.include, config.exclude, default_excludes=config.default_excludes, gitignore=config.gitignore
    )


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
    selections = {name: _selection(toolbox, name) for name in sources}
    by_source: dict[Path, list[Selection]] = {}
    for name, source in sources.items():
        by_source.setdefault(source, []).append(selections[name])
    keep = _SourceFilter(sources.values(), _extensions(toolbox, sources), by_source)
    # A file source is watched through its directory: editors save by replacing the file, which a file watch would lose.
    recursive = sorted({str(p) for p in sources.values() if p.is_dir()})
    flat = sorted({str(p.parent) for p in sources.values() if not p.is_dir()} - set(recursive))
    lock = asyncio.Lock()

    async def handle(changes: set[tuple[Any, str]]) -> None:
        paths = [Path(p) for _, p in changes]
        names = [
            name
            for name in toolbox.tools_for(paths)
            if name not in sources
            or not sources[name].is_dir()
            or any(keep.taken(path, sources[name], selections[name]) for path in paths)
        ]
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
