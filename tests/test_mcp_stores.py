"""``deckhand mcp`` when its memory store goes away mid-session: a one-line tool error, and the server goes on.

Cross-package (the server in core, the git-memory backend in its plugin), hence in tests/. The
server is a real subprocess reached through the MCP SDK's own client.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from deckhand.testing.mcp_client import call, stdio_session

pytest.importorskip("deckhand_git_memory")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    config = tmp_path / "agent.yaml"
    config.write_text("name: keeper\nmemory:\n  backend: git\n  path: repo\n")
    return config


async def test_memory_repository_removed_mid_session(agent: Path) -> None:
    repo = agent.parent / "repo"
    async with stdio_session(["mcp", "--config", str(agent)], cwd=agent.parent) as session:
        assert [t.name for t in (await session.list_tools()).tools][:2] == ["memory_store", "memory_get"]
        stored = await call(session, "memory_store", {"x": 1, "y": 1, "z": 2, "content": "Use SQLite"})
        assert stored["isError"] is False
        assert (repo / ".vector-memory" / "x-001" / "y-1-z-2.json").is_file()

        shutil.rmtree(repo)
        repo.write_text("not a directory any more\n")  # the store is gone: nothing can be written there
        failed = await call(session, "memory_store", {"x": 2, "y": 1, "z": 2, "content": "Use Postgres"})
        assert failed["isError"] is True
        assert failed["text"].startswith(f"memory_store: {repo}/.vector-memory/x-002/y-1-z-2.json: cannot write")
        assert "\n" not in failed["text"]

        # The server still answers: reads come from its index, listings work, and a store works
        # again once the repository is back.
        got = await call(session, "memory_get", {"x": 1, "y": 1, "z": 2})
        assert got["structuredContent"]["decision"]["content"] == "Use SQLite"
        assert (await call(session, "deckhand_list_tools"))["isError"] is False
        repo.unlink()
        repo.mkdir()
        _git(repo, "init", "-q")
        again = await call(session, "memory_store", {"x": 2, "y": 1, "z": 2, "content": "Use Postgres"})
        assert again["isError"] is False, again["text"]
