"""Registers the git-memory backend under the name ``git``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhand.hookspecs import Register, hookimpl


def _git_backend(path: Path | str | None = None, **options: Any) -> Any:
    from deckhand_git_memory.backend import GitMemoryBackend

    return GitMemoryBackend(path, **options)


@hookimpl
def register_memory_backends(register: Register) -> None:
    register(
        "git",
        _git_backend,
        description="JSON files under .vector-memory/ in a git repository; sync() commits them",
        aliases=("git-memory",),
    )
