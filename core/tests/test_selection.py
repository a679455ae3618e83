"""Which files a tool ingests (``include:``, ``exclude:``, the default excludes) and how quietly it says so:
skipped files are one part of one summary line per tool (``-v`` lists them, ``-q`` keeps only errors)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.config.loading import load_agent_config
from deckhand.errors import ConfigError
from deckhand.ingest import discovery
from deckhand.ingest.discovery import discover
from deckhand.ingest.selection import DEFAULT_EXCLUDES, Selection

DECKHAND = str(Path(sys.executable).parent / "deckhand")
EXTS = {".md", ".txt"}
TEXT = "# Harbor\n\nRotate every API key at least every 90 days.\n"


def test_patterns_read_as_the_encoding_patterns_do() -> None:
    plain = Selection.of(None, [], default_excludes=False)
    assert plain.takes("a/b/c.md") and plain.walks("node_modules")
    chosen = Selection.of(["guides/", "*.md"], ["drafts/", "*.generated.md", "notes/old*"])
    assert chosen.takes("README.md") and chosen.takes("deep/er/x.md")  # no "/": the name, at any depth
    assert chosen.takes("guides/setup.txt") and chosen.takes("guides/deep/setup.txt")  # under an included folder
    assert not chosen.takes("other/setup.txt")  # neither included by name nor by folder
    assert not chosen.takes("api.generated.md")  # exclude wins over include
    assert not chosen.takes("notes/older.md") and chosen.takes("notes/new.md")  # a path pattern: from the source
    assert not chosen.walks("drafts") and not chosen.walks("x/drafts") and chosen.takes("drafts.md")  # "/": folders
    assert not chosen.walks("docs/_static") and not chosen.walks("node_modules")  # the defaults stay
    assert Selection.of(None, ["**/tmp/"]).walks("tmp") is False  # a leading **/ is the same as none
    anchored = Selection.of(None, ["/out/", "/notes.md"], default_excludes=False)  # a leading /: the source's own
    assert not anchored.walks("out") and anchored.walks("docs/out")
    assert not anchored.takes("notes.md") and anchored.takes("sub/notes.md")


def test_the_default_excludes_are_not_walked_and_not_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "docs"
    # (build/ and dist/ only at the top: a manual's guides/build/ chapter is ingested)
    for folder in [d.strip("/") for d in DEFAULT_EXCLUDES] + ["sub/_build", "guides", "guides/build"]:
        (src / folder).mkdir(parents=True)
        (src / folder / "page.md").write_text(TEXT)
    walked: list[str] = []
    scandir = os.scandir

    def recording(path: str | Path) -> object:
        walked.append(Path(path).relative_to(src).as_posix())
        return scandir(path)

    monkeypatch.setattr(discovery.os, "scandir", recording)
    found = discover(src, EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["docs/guides/page.md", "docs/guides/build/page.md"]
    assert found.skipped == [] and found.failed == []
    assert sorted(walked) == [".", "guides", "guides/build", "sub"]  # an excluded folder is never listed
    walked.clear()
    everything = discover(src, EXTS, base=tmp_path, selection=Selection.of(None, [], default_excludes=False))
    assert len(everything.files) == 9  # all but the hidden .git/ and .venv/


def test_include_and_exclude_choose_what_a_tool_ingests_and_drop_what_it_no_longer_takes(
    tmp_path: Path, minilm: object
) -> None:
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "drafts").mkdir()
    (docs / "guides" / "keys.md").write_text(TEXT)
    (docs / "drafts" / "wip.md").write_text(TEXT)
    (docs / "notes.txt").write_text(TEXT)
    config = tmp_path / "agent.yaml"

    def ingest(settings: str) -> str:
        config.write_text(f"tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n{settings}")
        done = CliRunner().invoke(cli, ["-c", str(config), "ingest"], catch_exceptions=False)
        assert done.exit_code == 0, done.stderr
        return done.stderr.splitlines()[-1]

    assert ingest("").startswith("kb [sqlite]: 3 ingested")
    summary = ingest("    exclude: ['drafts/']\n")
    assert ", 0 skipped, 1 removed in " in summary  # drafts/wip.md left the index
    summary = ingest("    include: ['guides/']\n")
    assert "0 ingested" in summary and ", 1 unchanged, 0 skipped, 1 removed in " in summary  # notes.txt left


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("exclude: 5", "tools[0].exclude: expected a list of glob patterns such as ['drafts/', '*.svg'] (got 5)"),
        ("include: '*.md'", "tools[0].include: expected a list of glob patterns such as ['drafts/', '*.svg']"),
        ("exclude: [3]", "tools[0].exclude: expected a list of glob patterns such as ['drafts/', '*.svg']; 3 is not"),
        ("include: ['/']", "tools[0].include: expected a list of glob patterns such as ['drafts/', '*.svg']; '/' is"),
        ("default_excludes: maybe", "tools[0].default_excludes: "),
    ],
)
def test_a_bad_pattern_setting_is_one_line_naming_the_field(tmp_path: Path, setting: str, message: str) -> None:
    (tmp_path / "docs").mkdir()
    config = tmp_path / "agent.yaml"
    for tool in ("vectorstore", "hierarchical_document"):
        config.write_text(f"tools:\n  - type: {tool}\n    name: kb\n    source: docs\n    {setting}\n")
        with pytest.raises(ConfigError) as err:
            load_agent_config(config)
        assert str(err.value).startswith(f"{config}: {message}") and "\n" not in str(err.value)


def _docs_folder(root: Path) -> Path:
    """A Sphinx-like docs folder: pages, _static/ images, .git/, node_modules/, 50 empty pages and 4 pictures."""
    docs = root / "docs"
    for folder in ("_static", ".git", "node_modules/pkg", "_build/html", "empty"):
        (docs / folder).mkdir(parents=True)
    (docs / "index.md").write_text(TEXT)
    (docs / "guide.rst").write_text("Guide\n=====\n\nShips dock at the harbor at dawn.\n")
    for i in range(25):
        (docs / "_static" / f"icon{i}.svg").write_text("<svg/>")
    (docs / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (docs / "node_modules" / "pkg" / "README.md").write_text(TEXT)
    (docs / "_build" / "html" / "index.txt").write_text(TEXT)
    for i in range(50):
        (docs / "empty" / f"page{i}.md").write_text("")
    for i in range(4):
        (docs / f"picture{i}.png").write_bytes(b"\x89PNG")
    return docs


def test_a_docs_folder_gives_one_line_per_tool_about_skipped_files(tmp_path: Path) -> None:
    """ingest, test and mcp: one summary line per tool counts the skipped files; -v lists them, -q drops it."""
    _docs_folder(tmp_path)
    config = tmp_path / "agent.yaml"
    config.write_text(
        "tools:\n"
        "  - {type: vectorstore, name: flat, source: docs}\n"
        "  - {type: hierarchical_document, name: deep, source: docs}\n"
        "tests:\n  - {query: how often are API keys rotated, expected_sources: [docs/index.md]}\n"
    )
    env = {**os.environ, "DECKHAND_THREADS": "1"}  # the test's DECKHAND_HOME: the session's caches

    def deckhand(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([DECKHAND, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)

    kinds = "54 skipped (50 empty, 4 .png; -v lists them)"
    loud = deckhand("-v", "-c", str(config), "ingest")  # the first ingest: -v lists every skipped file
    assert loud.returncode == 0, loud.stderr
    assert sum(line.startswith("INFO deckhand.ingest: skipped docs/") for line in loud.stderr.splitlines()) == 2 * 54
    plain = deckhand("-c", str(config), "test")  # the default: one line per tool
    assert plain.returncode == 0, plain.stderr
    about = [line for line in plain.stderr.splitlines() if "skipped" in line]
    assert [line.split(" [")[0] for line in about] == ["flat", "deep"], plain.stderr
    assert all(kinds in line for line in about), plain.stderr
    assert "WARNING" not in plain.stderr and ".svg" not in loud.stderr
    excluded = sorted({line for line in loud.stderr.splitlines() if " excluded " in line})  # -v names the folders
    assert [line.split(": excluded ")[1].split(" ")[0] for line in excluded] == [
        "docs/_build/",
        "docs/_static/",
        "docs/node_modules/",  # (.git/ is hidden: never named)
    ], excluded
    quiet = deckhand("-q", "-c", str(config), "ingest")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert _mcp_start_lines(config, env, tools=2) == [f"{name} [sqlite]" for name in ("flat", "deep")]


def _mcp_start_lines(config: Path, env: dict[str, str], *, tools: int) -> list[str]:
    """``deckhand mcp``'s stderr lines about skipped files at start (stdin open until every tool is ingested)."""
    server = subprocess.Popen(
        [DECKHAND, "mcp", "-c", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert server.stderr is not None and server.stdin is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(server.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + 120
    while sum(" ingested (" in line for line in lines) < tools and time.monotonic() < deadline:
        time.sleep(0.1)
    server.stdin.close()
    server.wait(timeout=60)
    reader.join(timeout=10)
    about = [line for line in lines if "skipped" in line]
    assert all("54 skipped (50 empty, 4 .png; -v lists them)" in line for line in about), lines
    return [line.split(":")[0] for line in about]


def test_watch_ignores_changes_the_tools_do_not_take(tmp_path: Path) -> None:
    """``deckhand mcp --watch``: a change under node_modules/ or _static/, or excluded by a tool, re-ingests nothing."""
    from deckhand.mcp.watch import _SourceFilter

    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    default, narrow = Selection(), Selection.of(["guides/"], ["*.draft.md"])
    keep = _SourceFilter([docs], EXTS, {docs: [default]})
    assert keep(None, str(docs / "a.md")) and keep(None, str(docs / "guides" / "b.txt"))
    for ignored in ("node_modules/pkg/README.md", "_static/x.md", "sub/_build/y.md", ".git/HEAD.md", "pic.png"):
        assert not keep(None, str(docs / ignored)), ignored
    assert keep.taken(docs / "guides" / "b.md", docs, narrow) and not keep.taken(docs / "a.md", docs, narrow)
    assert not keep.taken(docs / "guides" / "c.draft.md", docs, narrow)
    both = _SourceFilter([docs], EXTS, {docs: [narrow, Selection.of(None, ["guides/"])]})  # two tools, one source
    assert both(None, str(docs / "a.md")) and both(None, str(docs / "guides" / "b.md"))


def test_watch_follows_scripts_without_extension_when_a_loader_reads_them(tmp_path: Path) -> None:
    """A ``#!`` script changed (or deleted: it cannot be read any more) matters; a ``LICENSE`` does not."""
    from deckhand.ingest.file_types import SCRIPT
    from deckhand.mcp.watch import _SourceFilter

    src = tmp_path / "src"
    src.mkdir()
    (src / "deploy").write_text("#!/bin/sh\necho hi\n")
    (src / "LICENSE").write_text("MIT\n")
    scripts = _SourceFilter([src], {*EXTS, SCRIPT})
    assert scripts(None, str(src / "deploy")) and scripts(None, str(src / "gone"))
    assert not scripts(None, str(src / "LICENSE"))
    assert not _SourceFilter([src], EXTS)(None, str(src / "deploy"))


def test_a_source_whose_files_are_all_left_out_says_so(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(TEXT)
    config = tmp_path / "agent.yaml"
    config.write_text("tools:\n  - {type: vectorstore, name: kb, source: docs, exclude: ['*.md']}\n")
    done = CliRunner().invoke(cli, ["-c", str(config), "ingest"], catch_exceptions=False)
    assert done.exit_code == 3
    assert done.stderr.startswith(f"error: no supported files in {tmp_path / 'docs'} (supported: ")
    assert done.stderr.endswith("; the tool's include:/exclude: leave out the others\n")


def test_quiet_keeps_the_transient_bars_on_a_terminal_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from deckhand.cli.progress import LineProgress, RichProgress, progress_for
    from rich.console import Console

    assert progress_for("kb", quiet=True) is None  # no terminal (a pipe, CI): nothing at all
    assert isinstance(progress_for("kb"), LineProgress)
    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    bars = progress_for("kb", quiet=True)
    assert isinstance(bars, RichProgress) and bars.quiet  # bars leave nothing behind: kept
    bars.note("about 98,000 chunks to embed")  # a note would stay on the screen: dropped
    assert capsys.readouterr().err == ""
