"""File discovery: supported extensions, recursion, hidden files, and symlinks never leaving the source."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from deckhand.ingest.discovery import discover
from deckhand.ingest.file_types import SCRIPT, file_type

EXTS = {".txt", ".md"}


def test_missing_source_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as err:
        discover(tmp_path / "nope", EXTS)
    assert str(err.value) == f"source path does not exist: {tmp_path / 'nope'}"


def test_recursive_walk_supported_only(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "top.md").write_text("x")
    (src / "a" / "b" / "deep.TXT").write_text("x")
    (src / "a" / "pic.svg").write_bytes(b"x")
    (src / "noext").write_text("x")
    (src / ".hidden.md").write_text("x")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD.md").write_text("x")
    found = discover(src, EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["src/top.md", "src/a/b/deep.TXT"]
    assert [(s.display, s.reason) for s in found.skipped] == [
        ("src/noext", "unsupported file type (none)"),
        ("src/a/pic.svg", "unsupported file type .svg"),
    ]


def test_single_file_source(tmp_path: Path) -> None:
    (tmp_path / "one.md").write_text("x")
    found = discover(tmp_path / "one.md", EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["one.md"]
    assert found.files[0].path == (tmp_path / "one.md").resolve()


def test_display_is_absolute_outside_base(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.md").write_text("x")
    found = discover(tmp_path / "d", EXTS, base=tmp_path / "elsewhere")
    assert [f.display for f in found.files] == [(tmp_path / "d" / "x.md").as_posix()]


def test_symlinks_out_of_the_source_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (outside / "sub").mkdir()
    (outside / "sub" / "more.md").write_text("more secrets")
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.md").write_text("fine")
    (src / "inner.md").write_text("inner")
    os.symlink(outside / "secret.txt", src / "leak.txt")
    os.symlink(outside / "sub", src / "leakdir")
    os.symlink(src / "inner.md", src / "alias.md")
    os.symlink("../src/../outside/secret.txt", src / "relative.txt")
    found = discover(src, EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["src/inner.md", "src/ok.md"]
    assert sorted((s.display, s.reason) for s in found.skipped) == [
        ("src/alias.md", "symlink to a file inside the source (indexed at its target)"),
        ("src/leak.txt", "symlink points outside the source"),
        ("src/leakdir", "symlink points outside the source"),
        ("src/relative.txt", "symlink points outside the source"),
    ]
    assert all(not str(f.path).startswith(str(outside)) for f in found.files)


def test_fifo_with_supported_extension_is_not_read(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    os.mkfifo(src / "pipe.txt")
    (src / "ok.md").write_text("x")
    found = discover(src, EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["src/ok.md"]
    assert [(s.display, s.reason) for s in found.skipped] == [("src/pipe.txt", "not a regular file")]


def test_unreadable_directory_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    (src / "locked").mkdir(parents=True)
    (src / "locked" / "in.md").write_text("x")
    (src / "ok.md").write_text("x")
    real_scandir = os.scandir

    def guarded(path: Any = ".") -> Any:
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    found = discover(src, EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["src/ok.md"]
    assert [(s.display, s.reason) for s in found.failed] == [
        ("src/locked", "cannot read directory (Permission denied)")
    ]
    assert found.skipped == []  # unreadable is a failure, not a file left out on purpose


def test_symlink_loops_and_dangling_links_do_not_crash(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.md").write_text("x")
    os.symlink("self.md", src / "self.md")
    os.symlink("loopdir", src / "loopdir")
    os.symlink("nowhere.md", src / "dangling.md")
    os.symlink(".", src / "here")
    found = discover(src, EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["src/ok.md"]
    assert sorted((s.display, s.reason) for s in found.skipped) == [
        ("src/dangling.md", "broken symlink (missing target or a loop)"),
        ("src/here", "symlink to a directory inside the source (indexed at its target)"),
        ("src/loopdir", "broken symlink (missing target or a loop)"),
        ("src/self.md", "broken symlink (missing target or a loop)"),
    ]


def test_names_that_are_not_utf8_fail_one_line_each_and_the_walk_goes_on(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "good.md").write_text("x")
    root = os.fsencode(src)
    with open(root + b"/bad_\xff.txt", "w") as fh:
        fh.write("x")
    os.mkdir(root + b"/caf\xe9")  # a Latin-1 directory name: one line for it, not one per file under it
    for name in (b"one.md", b"two.md"):
        with open(root + b"/caf\xe9/" + name, "w") as fh:
            fh.write("x")
    with open(root + b"/pic\xfe.svg", "w") as fh:
        fh.write("x")
    found = discover(src, EXTS, base=tmp_path)
    assert [f.display for f in found.files] == ["src/good.md"]
    assert [(s.display, s.reason) for s in found.failed] == [
        ("src/caf\\xe9", "directory: its name is not valid UTF-8; rename it to ingest it"),
        ("src/bad_\\xff.txt", "its name is not valid UTF-8; rename it to ingest it"),
    ]
    assert [(s.display, s.reason) for s in found.skipped] == [("src/pic\\xfe.svg", "unsupported file type .svg")]
    for entry in (*found.failed, *found.skipped):
        entry.display.encode("utf-8")  # every name reported can be printed, logged and sent as JSON


def test_a_script_without_extension_is_taken_when_a_loader_reads_scripts(tmp_path: Path) -> None:
    """``#!`` among the extensions: a file without one that starts with ``#!`` is a script and is listed; one that
    does not (``LICENSE``), a FIFO and a link are not, and nothing blocks on the FIFO."""
    src = tmp_path / "src"
    (src / "bin").mkdir(parents=True)
    (src / "bin" / "deploy").write_text("#!/bin/bash\necho hi\n")
    (src / "LICENSE").write_text("MIT\n")
    (src / "notes.md").write_text("x")
    os.mkfifo(src / "bin" / "pipe")
    (src / "bin" / "link").symlink_to(src / "bin" / "deploy")
    found = discover(src, {*EXTS, SCRIPT}, base=tmp_path)
    assert [f.display for f in found.files] == ["src/notes.md", "src/bin/deploy"]
    assert ("src/LICENSE", "unsupported file type (none)") in [(s.display, s.reason) for s in found.skipped]
    assert [f.display for f in discover(src, EXTS, base=tmp_path).files] == ["src/notes.md"]  # nobody reads scripts
    assert discover(src / "bin" / "deploy", {SCRIPT}).files  # a script named as the source
    assert [file_type(src / n, {SCRIPT}) for n in ("bin/deploy", "LICENSE", "bin/pipe", "bin/link")] == [
        SCRIPT,
        "",
        "",
        "",
    ]
    assert file_type(src / "bin" / "deploy", EXTS) == ""  # no loader for scripts: not sniffed


def test_a_file_type_an_extra_reads_is_skipped_with_the_command_that_installs_it(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("scan.png", "inbox.mbox", "drawing.svg"):
        (src / name).write_bytes(b"x")
    found = discover(src, EXTS, base=tmp_path)
    reasons = {s.display: s.reason for s in found.skipped}
    assert reasons["src/drawing.svg"] == "unsupported file type .svg"
    for name, suffix in (("src/scan.png", ".png"), ("src/inbox.mbox", ".mbox")):
        assert reasons[name].startswith(f"unsupported file type {suffix} (the ocr plugin reads it: ")
        assert "pip install" in reasons[name] and "\n" not in reasons[name]
    assert {s.kind for s in found.skipped} == {".png", ".mbox", ".svg"}  # the summary still counts by type
