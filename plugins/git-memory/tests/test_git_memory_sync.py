"""sync() commits only .vector-memory/, leaves the user's work alone, and survives a restart."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from deckhand.memory import ConcurrencyError, StorageError, VectorCoordinate, VectorMemoryManager
from deckhand_git_memory import GitMemoryBackend
from filelock import FileLock
from git_memory_helpers import decision_at, git, make_repo


def _manager(repo: Path, agent: str = "agent", **options: Any) -> VectorMemoryManager:
    return VectorMemoryManager(repo, agent, backend_options=options or None, embedding_cache=None)


def _user_state(repo: Path) -> tuple[str, str, str, str]:
    return (
        git(repo, "diff", "--cached"),
        git(repo, "diff"),
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        git(repo, "ls-files", "--stage", "--", ":!.vector-memory"),
    )


def test_sync_leaves_staged_unstaged_and_untracked_changes_exactly(repo: Path) -> None:
    (repo / "README.md").write_text("project\nstaged line\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("project\nstaged line\nunstaged line\n")
    (repo / "new.txt").write_text("staged new file\n")
    git(repo, "add", "new.txt")
    (repo / "scratch.txt").write_text("untracked\n")
    before = _user_state(repo)
    head = git(repo, "rev-parse", "HEAD").strip()

    manager = _manager(repo)
    for x in (1, 2, 3):
        manager.store(VectorCoordinate(x, 2, 1), f"Decision {x}")
    result = manager.sync("Store initial architecture decisions")

    assert result.commit == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", "HEAD~1").strip() == head
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert committed == [
        ".vector-memory/.gitignore",
        ".vector-memory/x-001/y-2-z-1.json",
        ".vector-memory/x-002/y-2-z-1.json",
        ".vector-memory/x-003/y-2-z-1.json",
    ]
    assert _user_state(repo) == before  # nothing of the user's changed, not even the index
    assert ".vector-memory" not in git(repo, "status", "--porcelain", "--untracked-files=all")
    body = git(repo, "log", "-1", "--format=%B")
    assert body.startswith("Store initial architecture decisions")
    assert "3 decisions" in body and "x 1-3 · y 2 · z 1" in body


def test_nothing_to_commit_makes_no_commit(repo: Path) -> None:
    manager = _manager(repo)
    manager.store(VectorCoordinate(1, 1, 2), "a")
    manager.sync()
    head = git(repo, "rev-parse", "HEAD")
    result = manager.sync()
    assert result.commit is None and result.count == 0
    assert git(repo, "rev-parse", "HEAD") == head


def test_overwrites_and_removals_are_recorded(repo: Path) -> None:
    manager = _manager(repo)
    manager.store(VectorCoordinate(4, 1, 3), "v1")
    manager.store(VectorCoordinate(5, 1, 3), "to be removed")
    manager.sync()
    manager.store(VectorCoordinate(4, 1, 3), "v2")
    (repo / ".vector-memory/x-005/y-1-z-3.json").unlink()
    result = manager.sync()
    assert result.changed == (VectorCoordinate(4, 1, 3),) and result.deleted == (VectorCoordinate(5, 1, 3),)
    assert '"content": "v2"' in git(repo, "show", "HEAD:.vector-memory/x-004/y-1-z-3.json")


def test_sync_in_a_repository_without_commits_keeps_the_users_index(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fresh", initial_commit=False)
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")
    manager = _manager(repo)
    manager.store(VectorCoordinate(1, 1, 1), "first ever decision")
    result = manager.sync()
    assert result.commit and git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert "staged.txt" not in git(repo, "show", "--name-only", "--format=", "HEAD")
    assert git(repo, "diff", "--cached", "--name-only").split() == ["staged.txt"]


def test_head_moving_during_sync_is_retried_without_losing_either_commit(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(repo)
    manager.store(VectorCoordinate(1, 1, 2), "memory")
    backend = manager.backend
    assert isinstance(backend, GitMemoryBackend)
    original = backend.git.run
    moved: list[bool] = []

    def run(args: list[str], **kwargs: Any) -> Any:
        if args[0] == "update-ref" and not moved:
            moved.append(True)  # the user commits between our commit-tree and update-ref
            (repo / "user.txt").write_text("user work\n")
            git(repo, "add", "user.txt")
            git(repo, "commit", "-q", "-m", "user commit")
        return original(args, **kwargs)

    monkeypatch.setattr(backend.git, "run", run)
    result = manager.sync()
    log = git(repo, "log", "--format=%s").splitlines()
    assert log[0].startswith("vector memory: 1 decision") and log[1] == "user commit"
    assert result.commit == git(repo, "rev-parse", "HEAD").strip()


def test_missing_identity_is_a_clear_error_and_options_fix_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "anon", identity=False, initial_commit=False)
    manager = _manager(repo)
    manager.store(VectorCoordinate(1, 1, 2), "x")
    with pytest.raises(StorageError, match=r"no identity .*user\.name/user\.email.*author_name"):
        manager.sync()
    named = _manager(repo, "agent", author_name="Memory Bot", author_email="bot@example.invalid")
    assert named.sync().commit
    assert git(repo, "log", "-1", "--format=%an <%ae>").strip() == "Memory Bot <bot@example.invalid>"


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="is not a git repository"):
        _manager(tmp_path)
    with pytest.raises(StorageError, match="does not exist"):
        _manager(tmp_path / "missing")
    with pytest.raises(ValueError, match="agent_id"):
        VectorMemoryManager(tmp_path, "")


def test_sync_lock_timeout_is_a_concurrency_error(repo: Path) -> None:
    manager = _manager(repo, lock_timeout=0.2)
    manager.store(VectorCoordinate(1, 1, 2), "x")
    backend = manager.backend
    assert isinstance(backend, GitMemoryBackend)
    holder = FileLock(str(backend._state / "sync.lock"))
    with holder, pytest.raises(ConcurrencyError, match="lock_timeout"):
        manager.sync()
    assert manager.sync().commit


def _store_and_sync(repo: str, worker: int) -> str | None:
    manager = VectorMemoryManager(Path(repo), f"worker-{worker}", embedding_cache=None)
    for x in range(1 + worker * 10, 11 + worker * 10):
        manager.store(VectorCoordinate(x, 1, 1), f"worker {worker} issue {x}")
    return manager.sync(f"worker {worker}").commit


def test_processes_syncing_at_once_lose_nothing(repo: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(3) as pool:
        commits = pool.starmap(_store_and_sync, [(str(repo), w) for w in range(3)])
    tracked = git(repo, "ls-tree", "-r", "--name-only", "HEAD", ".vector-memory").split()
    assert len([p for p in tracked if p.endswith(".json")]) == 30
    assert git(repo, "status", "--porcelain").strip() == ""
    assert any(commits)


def test_store_sync_then_a_fresh_process_loads_everything(repo: Path) -> None:
    manager = _manager(repo)
    stored = {(x, y, z): f"decision {x}-{y}-{z}" for x in (1, 50, 1000) for y in (1, 5) for z in (1, 2, 4)}
    for (x, y, z), text in stored.items():
        manager.store(VectorCoordinate(x, y, z), text)
    manager.sync()
    script = textwrap.dedent(f"""
        import json
        from pathlib import Path
        from deckhand.memory import VectorMemoryManager
        m = VectorMemoryManager(Path({str(repo)!r}), "restarted", embedding_cache=None)
        n = m.load_from_git()
        print(json.dumps({{"n": n, "d": {{"%d,%d,%d" % d.coordinate.to_tuple(): d.content for d in m.query_range()}}}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    import json

    loaded = json.loads(out)
    assert loaded["n"] == len(stored)
    assert loaded["d"] == {f"{x},{y},{z}": text for (x, y, z), text in stored.items()}


def test_clone_then_load_sees_the_synced_memory(repo: Path, tmp_path: Path) -> None:
    manager = _manager(repo)
    manager.store(VectorCoordinate(7, 4, 1), "Architecture: event sourcing")
    manager.sync()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    other = _manager(clone, "teammate")
    assert decision_at(other, VectorCoordinate(7, 4, 1)).content == "Architecture: event sourcing"
    manager.store(VectorCoordinate(8, 1, 2), "later decision")
    manager.sync()
    git(clone, "pull", "-q", "--ff-only")
    assert other.load_from_git() == 2


def test_a_large_sync_writes_a_valid_pack(repo: Path) -> None:
    manager = _manager(repo)
    for x in range(1, 151):
        manager.store(VectorCoordinate(x, 1, 2), f"decision {x} " * 20)
    result = manager.sync()
    assert result.count == 150
    git(repo, "fsck", "--strict", "--no-progress")
    tracked = git(repo, "ls-tree", "-r", "--name-only", "HEAD", ".vector-memory").split()
    assert len(tracked) == 151  # 150 decisions and the .gitignore
    assert git(repo, "show", "HEAD:.vector-memory/x-150/y-1-z-2.json").count("decision 150") == 20
    assert git(repo, "status", "--porcelain") == ""


def test_sync_never_commits_a_decision_file_that_does_not_parse(repo: Path) -> None:
    manager = _manager(repo)
    for x in (1, 2, 3):
        manager.store(VectorCoordinate(x, 2, 2), f"Decision {x}")
    manager.sync()
    head = git(repo, "rev-parse", "HEAD").strip()
    memory = repo / ".vector-memory"
    (memory / "x-001" / "y-2-z-2.json").write_bytes(b"\xff\xfe not json")
    moved = (memory / "x-003" / "y-2-z-2.json").read_text().replace('"x": 3', '"x": 4')
    (memory / "x-003" / "y-2-z-2.json").write_text(moved)  # parses, but says another coordinate
    manager.store(VectorCoordinate(2, 2, 2), "Decision 2, revised")

    result = _manager(repo).sync()
    assert [c.to_tuple() for c in result.changed] == [(2, 2, 2)]
    assert result.skipped == (
        f"{memory / 'x-001' / 'y-2-z-2.json'}: not a valid decision file ('utf-8' codec can't decode byte 0xff in "
        "position 0: invalid start byte); fix or restore it, e.g. git checkout -- <file>",
        f"{memory / 'x-003' / 'y-2-z-2.json'}: the file says coordinate (4, 2, 2) but its name says (3, 2, 2)",
    )
    assert git(repo, "rev-parse", "HEAD~1").strip() == head
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [".vector-memory/x-002/y-2-z-2.json"]
    assert '"x": 3' in git(repo, "show", "HEAD:.vector-memory/x-003/y-2-z-2.json")  # the last good version
    nothing = _manager(repo).sync()
    assert nothing.commit is None and len(nothing.skipped) == 2
