"""Helpers for git-memory tests: temporary git repositories with a local identity."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from deckhand.memory import StoredDecision, VectorCoordinate, VectorMemoryManager


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``repo`` and return its output (the test fails if git does)."""
    full_env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=full_env, check=True)
    return proc.stdout


def make_repo(path: Path, *, identity: bool = True, initial_commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    if identity:
        git(path, "config", "user.name", "Test Agent")
        git(path, "config", "user.email", "agent@example.invalid")
    if initial_commit:
        (path / "README.md").write_text("project\n")
        git(path, "add", "README.md")
        git(path, "commit", "-q", "-m", "initial")
    return path


def decision_at(manager: VectorMemoryManager, coord: VectorCoordinate) -> StoredDecision:
    """The decision at ``coord``, failing the test if there is none."""
    decision = manager.get(coord)
    assert decision is not None, f"no decision at {coord}"
    return decision
