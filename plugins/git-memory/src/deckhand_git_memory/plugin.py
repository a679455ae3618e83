"""Registers the git-memory backend under the name ``git``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from deckhand.api import Registrar, hookimpl
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from deckhand_git_memory.backend import GitMemoryBackend


class GitMemoryOptions(BaseModel):
    """``memory.options`` of the ``git`` backend."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lock_timeout: float = Field(default=10.0, description="Seconds to wait for the repository's write lock.")
    fsync: bool = Field(default=True, description="fsync each decision file before it is renamed into place.")
    author_name: str | None = Field(default=None, description="Commit author name (default: git's configuration).")
    author_email: str | None = Field(default=None, description="Commit author email (default: git's configuration).")
    git: str = Field(default="git", description="The git executable.")


def _git_backend(path: Path | None, options: GitMemoryOptions) -> GitMemoryBackend:
    from deckhand_git_memory.backend import GitMemoryBackend

    return GitMemoryBackend(path, **options.model_dump())


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.memory_backend(
        "git",
        _git_backend,
        description="JSON files under .vector-memory/ in a git repository; sync() commits them",
        aliases=("git-memory",),
        options=GitMemoryOptions,
    )
