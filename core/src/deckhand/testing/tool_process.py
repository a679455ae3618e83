"""Another process for the tool conformance kit: builds a tool from its configuration, initialises it, searches.

The kit runs ``python -m deckhand.testing.tool_process`` with a JSON job on stdin::

    {"config_class": "deckhand.config.vectorstore:VectorStoreToolConfig",
     "config": {...the tool's configuration...}, "base_dir": "/tmp/project",
     "force_ingest": false, "query": "when should I reef?", "kill": null}

and reads one JSON line from stdout: the provider, the ingest report (``summary`` is the
line ``deckhand ingest`` prints), the chunk count and the sources of the search results.
The tool is built with :func:`deckhand.tools.build_tool` and the process-wide plugin
registry, as ``deckhand`` builds it.

``kill`` names a moment of the ingest at which the process sends itself ``SIGKILL`` (the
same as ``kill -9`` from outside at that instant: no ``finally``, no ``atexit``, no
flush): ``"after_first_write"`` as the second ``replace_source`` of the run begins (the
first file's new chunks are committed, the others not), ``"before_delete"`` as the first
``delete_source`` begins (every changed file written, removed files not yet removed).
The stores of the process are wrapped for that by patching
:func:`deckhand.stores.tool_store.create_store`, through which every tool builds its store.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

#: The moments ``kill`` may name.
KILL_POINTS = ("after_first_write", "before_delete")


class _KillingStore:
    """Forwards to the real store; kills this process at the chosen moment of the ingest."""

    def __init__(self, inner: Any, point: str) -> None:
        self._inner = inner
        self._point = point
        self._writes = 0

    def replace_source(self, *args: Any, **kwargs: Any) -> Any:
        self._writes += 1
        if self._point == "after_first_write" and self._writes == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return self._inner.replace_source(*args, **kwargs)

    def delete_source(self, *args: Any, **kwargs: Any) -> Any:
        if self._point == "before_delete":
            os.kill(os.getpid(), signal.SIGKILL)
        return self._inner.delete_source(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _arm(point: str) -> None:
    if point not in KILL_POINTS:
        raise ValueError(f"unknown kill point {point!r} (known: {', '.join(KILL_POINTS)})")
    from deckhand.stores import tool_store

    real = tool_store.create_store

    def create_store(*args: Any, **kwargs: Any) -> Any:
        return _KillingStore(real(*args, **kwargs), point)

    tool_store.create_store = create_store


def config_class_path(config: Any) -> str:
    """``module:Class`` of a tool configuration, for :func:`load_config`."""
    return f"{type(config).__module__}:{type(config).__qualname__}"


def load_config(class_path: str, data: dict[str, Any]) -> Any:
    module, _, name = class_path.partition(":")
    return getattr(importlib.import_module(module), name).model_validate(data)


def _run(job: dict[str, Any]) -> dict[str, Any]:
    from deckhand.tools import build_tool

    if job.get("kill"):
        _arm(job["kill"])
    config = load_config(job["config_class"], job["config"])
    tool = build_tool(config, base_dir=Path(job["base_dir"]))
    try:
        # As an application does it: the store is opened and written in a worker thread.
        report = asyncio.run(tool.initialize(bool(job.get("force_ingest"))))
        hits = tool.search_results_sync(job["query"]) if job.get("query") else []
        return {
            "provider": getattr(tool, "provider", None),
            "summary": report.summary(),
            "ingested": report.ingested,
            "unchanged": report.unchanged,
            "removed": report.removed,
            "embedded": report.texts_embedded,
            "chunks_written": report.chunks_written,
            "count": tool.document_count,
            "sources": [hit.source for hit in hits],
        }
    finally:
        tool.close()


def main() -> int:
    print(json.dumps(_run(json.load(sys.stdin))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
