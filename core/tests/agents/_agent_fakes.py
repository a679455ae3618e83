"""Fakes for the unit tests of the toolbox and the MCP server: a tool whose ingest the test controls."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhand.calls.toolbox import Toolbox
from deckhand.ingest.pipeline import IngestReport
from deckhand.tools import ToolBase
from deckhand.tools.tool_io import SearchResult, format_results, function_definition


@dataclass
class FakeConfig:
    name: str
    source: str
    description: str = "Fake search"
    type: str = "fake"
    top_k: int = 3
    result_budget: int | None = None
    #: What ``source_config()`` gives: the source settings a test sets (``encoding``, ``max_file_size``), else None.
    settings: Any = None

    def source_config(self) -> Any:
        return self.settings


class FakeTool(ToolBase):
    """A tool type of its own, as the toolbox uses it; ``initialize_sync`` blocks until ``release`` is set."""

    is_initialized = False
    last_ingest_time: float | None = None
    provider: str | None = None  # the store in use (none here)
    last_report: IngestReport | None = None

    def __init__(self, name: str, source: Path, progress: Any = None, files: int = 3) -> None:
        self.config = FakeConfig(name, str(source))  # type: ignore[assignment]
        self.progress = progress
        self.files = files
        self.release = threading.Event()
        self.release.set()
        self.started = threading.Event()
        self.fail_with: BaseException | None = None
        self.search_error: BaseException | None = None
        self.count_error: BaseException | None = None
        self.store_answers = (
            threading.Event()
        )  # cleared: searches and counts wait for it (a store that does not answer)
        self.store_answers.set()
        self.searching = threading.Event()
        self.ingests = 0
        self.attempts: list[float] = []  # time.monotonic() of every initialize_sync
        self.closed = False

    def initialize_sync(self, force_ingest: bool = False) -> IngestReport:
        self.attempts.append(time.monotonic())
        self.started.set()
        if self.progress is not None:
            self.progress.stage("files", self.files)
            self.progress.advance()
        assert self.release.wait(30), "test never released the ingest"
        if self.fail_with is not None:
            raise self.fail_with
        if self.progress is not None:
            self.progress.advance(self.files - 1)
        self.ingests += 1
        self.is_initialized = True
        self.last_ingest_time = time.time()
        self.last_report = IngestReport(ingested=[f"f{i}.md" for i in range(self.files)], chunks_written=self.files)
        return self.last_report

    async def initialize(self, force_ingest: bool = False) -> IngestReport:
        return self.initialize_sync(force_ingest)

    def open_sync(self) -> IngestReport:
        return self.last_report or self.initialize_sync()

    async def open(self) -> IngestReport:
        return self.open_sync()

    async def search(self, query: str) -> str:
        return self.search_text_sync(query)

    async def search_results(self, query: str, top_k: int | None = None, *, filter: Any = None) -> list[SearchResult]:
        return self.search_results_sync(query, top_k)

    def search_results_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> list[SearchResult]:
        self.searching.set()
        assert self.store_answers.wait(30), "test never let the store answer"
        if self.search_error is not None:
            raise self.search_error
        if not self.is_initialized:
            raise RuntimeError("not initialized")
        return [
            SearchResult(rank=1, score=0.9, source="f0.md", chunk_index=0, content=f"{query} (ingest {self.ingests})")
        ][: top_k or self.config.top_k]

    def search_text_sync(self, query: str, top_k: int | None = None, *, filter: Any = None) -> str:
        """The text agents read (the toolbox shows it for a tool not built on SourceTool)."""
        results = self.search_results_sync(query, top_k)
        return format_results(results) if results else f"No relevant results found for query: {query}"

    def function_definition(self) -> dict[str, Any]:  # its search applies no filter, so its definition lists none
        return function_definition(self.config.name, self.config.description, takes_filter=False)

    @property
    def document_count(self) -> int:
        assert self.store_answers.wait(30), "test never let the store answer"
        if self.count_error is not None:
            raise self.count_error
        return self.files if self.is_initialized else 0

    def close(self) -> None:
        self.closed = True


def box_of(*tools: FakeTool, **kwargs: Any) -> Toolbox:
    """A toolbox over fake tools, following each one's ingest progress."""
    progress = {t.config.name: t.progress for t in tools if t.progress is not None}
    return Toolbox(list(tools), progress=progress, **kwargs)


def in_thread(func: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``func`` in a daemon thread; its return value (``value``) or exception (``error``) lands in the dict."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = func()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out
