"""A source in a git working tree is walked as git sees it: what its .gitignore files (and .git/info/exclude)
ignore is not ingested, an ignored folder is not walked, and ``gitignore: false`` reads everything."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deckhand.config.loading import load_agent_config
from deckhand.ingest import discovery
from deckhand.ingest.discovery import discover
from deckhand.ingest.selection import Selection
from deckhand.mcp.watch import _SourceFilter

EXTS = {".md", ".txt", ".py"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A working tree (``.git/`` is all git needs to call it one) whose source is ``repo/src``."""
    top = tmp_path / "repo"
    (top / ".git" / "info").mkdir(parents=True)
    (top / ".git" / "info" / "exclude").write_text("*.secret.txt\n")
    (top / ".gitignore").write_text("# generated\n*.log.txt\ngen/\n/src/top_only.md\n")
    files = [
        "src/app.py",
        "src/notes.log.txt",
        "src/keys.secret.txt",
        "src/top_only.md",
        "src/gen/out.py",
        "src/lib/util.py",
        "src/lib/top_only.md",
        "src/lib/cache.txt",
        "src/lib/keep.log.txt",
    ]
    for name in files:
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text("x = 1\n")
    (top / "src" / "lib" / ".gitignore").write_text("cache.txt\n!keep.log.txt\n")  # deeper rules win
    return top


def shown(found: discovery.Discovery) -> list[str]:
    return sorted(f.display for f in found.files)


def test_gitignored_files_and_folders_are_left_out(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[str] = []
    scandir = os.scandir

    def recording(path: str | Path) -> object:
        walked.append(Path(path).name)
        return scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", recording)
    found = discover(repo / "src", EXTS, base=repo)
    assert shown(found) == ["src/app.py", "src/lib/keep.log.txt", "src/lib/top_only.md", "src/lib/util.py"]
    assert "gen" not in walked  # an ignored folder is never listed
    assert found.skipped == [] and found.failed == []  # left out on purpose, as exclude: patterns are
    everything = discover(repo / "src", EXTS, base=repo, selection=Selection.of(None, [], gitignore=False))
    assert len(everything.files) == 9


def test_a_source_outside_any_working_tree_is_walked_whole(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / ".gitignore").write_text("*.md\n")  # not a repository: no .git above it
    (tmp_path / "docs" / "page.md").write_text("# Page\n")
    assert shown(discover(tmp_path / "docs", EXTS, base=tmp_path)) == ["docs/page.md"]


def test_an_ignore_file_that_is_a_symlink_is_not_followed(repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    outside = repo.parent / "elsewhere"
    outside.write_text("*.py\n")
    (repo / "src" / "lib" / ".gitignore").unlink()
    (repo / "src" / "lib" / ".gitignore").symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="deckhand.ingest"):
        found = discover(repo / "src", EXTS, base=repo)
    assert "src/lib/util.py" in shown(found)
    assert any("lib/.gitignore: not read" in r.getMessage() for r in caplog.records)


def test_the_tool_setting_and_watch_follow_it(repo: Path) -> None:
    (repo / "agent.yaml").write_text(
        "tools:\n  - {type: vectorstore, name: a, source: src}\n"
        "  - {type: vectorstore, name: b, source: src, gitignore: false}\n"
    )
    first, second = load_agent_config(repo / "agent.yaml").tools
    assert first.gitignore is True and second.gitignore is False
    src = repo / "src"
    honouring = _SourceFilter([src], EXTS, {src: [Selection()]})
    assert honouring(None, str(src / "app.py")) and honouring(None, str(src / "lib" / "keep.log.txt"))
    for ignored in ("gen/new.py", "notes.log.txt", "lib/cache.txt", "keys.secret.txt"):
        assert not honouring(None, str(src / ignored)), ignored
    reading_all = _SourceFilter([src], EXTS, {src: [Selection.of(None, [], gitignore=False)]})
    assert reading_all(None, str(src / "gen" / "new.py"))


LAZY = """
import json, sys
from pathlib import Path
import deckhand.cli.main
from deckhand.ingest.discovery import discover
outside = [f.display for f in discover(Path(sys.argv[1]), {".md"}, base=Path(sys.argv[1])).files]
before = "pathspec" in sys.modules
inside = [f.display for f in discover(Path(sys.argv[2]), {".md", ".txt", ".py"}, base=Path(sys.argv[2])).files]
print(json.dumps({"outside": outside, "before": before, "inside": inside, "after": "pathspec" in sys.modules}))
"""


def test_the_ignore_rules_library_is_imported_only_to_read_an_ignore_file(repo: Path, tmp_path: Path) -> None:
    """pathspec costs ~50 ms to import: the CLI and a walk outside any working tree never import it."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "page.md").write_text("# Page\n")
    done = subprocess.run(
        [sys.executable, "-c", LAZY, str(plain), str(repo / "src")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["outside"] == ["page.md"] and out["before"] is False
    assert "app.py" in out["inside"] and "gen/out.py" not in out["inside"] and out["after"] is True
