"""Run Semantic Kernel's async collection calls from deckhand's blocking store methods.

Stores are called from any thread (``asyncio.to_thread`` workers, an MCP server's threads);
Semantic Kernel's collections are async and some hold clients bound to the event loop they
first ran on (httpx, motor). Every coroutine therefore runs on one process-wide event loop in
a daemon thread, and the calling thread waits for its result.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _start() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="deckhand-sk-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run(coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coroutine`` on the bridge's event loop and return its result (or raise its exception)."""
    loop = _start()
    if _on_loop_thread(loop):
        coroutine.close()
        raise RuntimeError("a bridge store was called from its own event loop thread; call it from another thread")
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout)


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
