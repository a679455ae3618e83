"""The .vector-memory/ files: format, crash safety, corrupt and stray files, no-hard-link fallback."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from deckhand.memory import (
    CorruptDecisionsError,
    ImmutableLayerError,
    StorageError,
    VectorCoordinate,
    VectorMemoryManager,
)
from deckhand.plugins import get_registry
from deckhand_git_memory import GitMemoryBackend
from git_memory_helpers import decision_at, git


def _manager(repo: Path, agent: str = "agent") -> VectorMemoryManager:
    return VectorMemoryManager(repo, agent, embedding_cache=None)


def test_registered_by_its_entry_point() -> None:
    component = get_registry().resolve("memory_backend", "git")
    assert component.plugin == "git-memory"
    assert get_registry().resolve("memory_backend", "git-memory") is component


def test_file_layout_and_content_follow_the_contract(repo: Path) -> None:
    manager = _manager(repo)
    decision = manager.store(VectorCoordinate(5, 2, 1), "Use PostgreSQL", {"issue_id": "t49"})
    path = repo / ".vector-memory" / "x-005" / "y-2-z-1.json"
    assert json.loads(path.read_text()) == decision.to_json()
    assert (repo / ".vector-memory" / ".gitignore").is_file()
    manager.store(VectorCoordinate(1000, 5, 4), "last")
    assert (repo / ".vector-memory" / "x-1000" / "y-5-z-4.json").is_file()


def test_failed_write_keeps_the_old_decision_and_leaves_no_temporary(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(repo)
    coord = VectorCoordinate(3, 3, 3)
    manager.store(coord, "old")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(StorageError, match="No space left"):
        manager.store(coord, "new")
    monkeypatch.undo()
    assert decision_at(manager, coord).content == "old"
    assert list((repo / ".vector-memory" / "x-003").iterdir()) == [repo / ".vector-memory/x-003/y-3-z-3.json"]
    assert decision_at(_manager(repo), coord).content == "old"


def test_a_process_killed_mid_write_never_leaves_a_truncated_decision(repo: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from deckhand.memory import VectorCoordinate, VectorMemoryManager
        m = VectorMemoryManager(Path({str(repo)!r}), "writer", embedding_cache=None)
        i = 0
        print("ready", flush=True)
        while True:
            i += 1
            m.store(VectorCoordinate(1, 1, 2), str(i % 10) * 100_000)
            m.store(VectorCoordinate(2, 1, 1 + 1 + i % 3), "x" * (i % 5000 + 1))
    """)
    for delay in (0.25, 0.6):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        manager = _manager(repo, "checker")
        assert manager.load_errors == []
        content = decision_at(manager, VectorCoordinate(1, 1, 2)).content
        assert len(content) == 100_000 and len(set(content)) == 1
    leftovers = [p for p in (repo / ".vector-memory").rglob(".*.tmp")]
    manager.store(VectorCoordinate(9, 9 - 4, 2), "after the crashes")
    manager.sync()
    committed = git(repo, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert not any(p.endswith(".tmp") for p in committed), leftovers


def test_corrupt_and_stray_files(repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = _manager(repo)
    for x in (1, 2, 3):
        manager.store(VectorCoordinate(x, 1, 2), f"good {x}")
    root = repo / ".vector-memory"
    (root / "x-002" / "y-1-z-2.json").write_text('{"coordinate": {"x": 2, "y"')  # truncated by hand
    (root / "x-004").mkdir()
    (root / "x-004" / "notes.json").write_text("{}")
    (root / "x-004" / "y-9-z-1.json").write_text("{}")
    (root / "x-4").mkdir()
    (root / "x-4" / "y-1-z-2.json").write_text("{}")
    (root / "README.md").write_text("these files are ignored\n")
    (root / "x-001" / ".y-1-z-2.json.abc.tmp").write_text("half a wri")

    fresh = _manager(repo, "restarted")
    assert sorted(d.coordinate.x for d in fresh.query_range()) == [1, 3]
    assert len(fresh.load_errors) == 4
    assert str(root / "x-002" / "y-1-z-2.json") in caplog.text
    with pytest.raises(CorruptDecisionsError) as info:
        fresh.load_from_git()
    message = str(info.value)
    assert info.value.loaded == 2
    for name in ("x-002/y-1-z-2.json", "x-004/notes.json", "x-004/y-9-z-1.json", "x-4/y-1-z-2.json"):
        assert name in message
    assert "non-canonical" in message and "belongs in .vector-memory/x-004/y-1-z-2.json" in message
    with pytest.raises(StorageError, match=r"x-002/y-1-z-2\.json: not a valid decision file"):
        fresh.get(VectorCoordinate(2, 1, 2))
    fresh.store(VectorCoordinate(2, 1, 2), "repaired")
    assert decision_at(fresh, VectorCoordinate(2, 1, 2)).content == "repaired"


def test_create_only_without_hard_links_falls_back_to_a_lock(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    first, second = _manager(repo, "a"), _manager(repo, "b")
    first.store(VectorCoordinate(6, 1, 1), "first")
    with pytest.raises(ImmutableLayerError):
        second.store(VectorCoordinate(6, 1, 1), "second")
    assert decision_at(_manager(repo), VectorCoordinate(6, 1, 1)).agent_id == "a"


def test_options_are_validated(repo: Path) -> None:
    with pytest.raises(ValueError, match="lock_timeout"):
        GitMemoryBackend(repo, lock_timeout=-1)
    with pytest.raises(TypeError):
        VectorMemoryManager(repo, "a", backend_options={"no_such_option": 1})
    with pytest.raises(StorageError, match="git executable"):
        GitMemoryBackend(repo, git="/nonexistent/git")
