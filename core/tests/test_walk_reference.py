"""The source walk decides as the plain, per-path rules do: each file and folder judged on its own by its
``pathlib`` path, each include/exclude pattern matched one by one (:meth:`Pattern.matches`) and each ``.gitignore``
from the top down read afresh. :func:`discover` makes those decisions once per folder, with compiled patterns and
strings instead of paths; these tests hold it to the reference on a tree with every case a walk meets."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path
from typing import Any

import pathspec
import pytest
from deckhand.ingest.discovery import NOT_UTF8, _link_reason, discover, display_path
from deckhand.ingest.file_types import SCRIPT, unsupported
from deckhand.ingest.gitignore import Rules, repository_of
from deckhand.ingest.selection import Pattern, Selection
from deckhand.printable import is_utf8, utf8_name
from hypothesis import given, settings
from hypothesis import strategies as st

EXTS = {".md", ".txt", SCRIPT}

#: (display, real path) of each file listed, (display, reason, kind) of each skipped, (display, reason) of each failed.
Walk = tuple[list[tuple[str, str]], list[tuple[str, str, str]], list[tuple[str, str]]]


def reference_walks(selection: Selection, relative: str) -> bool:
    return not any(p.matches(relative, directory=True) for p in selection.exclude)


def reference_takes(selection: Selection, relative: str) -> bool:
    if any(p.matches(relative, directory=False) for p in selection.exclude):
        return False
    if not selection.include or any(p.matches(relative, directory=False) for p in selection.include):
        return True
    parts = relative.split("/")[:-1]
    folders = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(p.matches(folder, directory=True) for folder in folders for p in selection.include)


def reference_ignores(top: Path | None, path: Path, *, directory: bool) -> bool:
    """git's verdict on ``path``: .git/info/exclude, then each .gitignore from the top down (the deepest decides)."""
    if top is None:
        return False
    parts = path.relative_to(top).parts
    rules = [(top / ".git" / "info" / "exclude", parts)]
    rules += [(top.joinpath(*parts[:depth]) / ".gitignore", parts[depth:]) for depth in range(len(parts))]
    ignored = None
    for file, rest in rules:
        if file.is_file() and not file.is_symlink():
            spec = pathspec.GitIgnoreSpec.from_lines(file.read_text().splitlines())
            verdict = spec.check_file("/".join(rest) + ("/" if directory else "")).include
            ignored = ignored if verdict is None else verdict
    return bool(ignored)


def reference(source: Path, base: Path, selection: Selection) -> Walk:
    """What a walk must find, each entry judged alone by its path (folders depth first, sorted, files first)."""
    root, shown_root = source.resolve(), Path(os.path.abspath(source))
    top = repository_of(root) if selection.gitignore else None
    files: list[tuple[str, str]] = []
    skipped: list[tuple[str, str, str]] = []
    failed: list[tuple[str, str]] = []

    def visit(folder: Path) -> None:
        try:
            with os.scandir(folder) as listing:  # (os.scandir: the tests make one folder unreadable through it)
                names = sorted(entry.name for entry in listing)
        except OSError as exc:
            shown = display_path(shown_root / folder.relative_to(root), base)
            failed.append((shown, f"cannot read directory ({exc.strerror})"))
            return
        below = []
        for name in [n for n in names if (folder / n).is_dir()]:
            path = folder / name
            relative, shown = path.relative_to(root).as_posix(), display_path(shown_root / path.relative_to(root), base)
            if (name.startswith(".") and not path.is_symlink()) or not reference_walks(selection, relative):
                continue
            if reference_ignores(top, path, directory=True):
                continue
            if path.is_symlink():
                skipped.append((utf8_name(shown), _link_reason(path, root), "symlink"))
            elif not is_utf8(name):
                failed.append((utf8_name(shown), f"directory: {NOT_UTF8}"))
            else:
                below.append(path)
        for name in [n for n in names if not (folder / n).is_dir()]:
            path = folder / name
            relative, shown = path.relative_to(root).as_posix(), display_path(shown_root / path.relative_to(root), base)
            if name.startswith(".") or not reference_takes(selection, relative):
                continue
            if reference_ignores(top, path, directory=False):
                continue
            if path.is_symlink():
                skipped.append((utf8_name(shown), _link_reason(path, root), "symlink"))
                continue
            regular = stat.S_ISREG(path.lstat().st_mode)
            suffix = path.suffix
            if not suffix and regular and path.read_bytes()[:2] == b"#!":
                suffix = SCRIPT
            if suffix.lower() not in EXTS:
                kind = utf8_name(suffix.lower()) or "no extension"
                skipped.append((utf8_name(shown), unsupported(utf8_name(suffix)), kind))
            elif not regular:
                skipped.append((utf8_name(shown), "not a regular file", "not a regular file"))
            elif not is_utf8(shown):
                failed.append((utf8_name(shown), NOT_UTF8))
            else:
                files.append((shown, str(path)))
        for path in below:
            visit(path)

    visit(root)
    return files, skipped, failed


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A working tree whose source ``repo/src`` holds every case: patterns, .gitignore rules at two levels, hidden
    entries, links inside and out (to files and folders, dangling, looping), a FIFO, a script, names not UTF-8."""
    top = tmp_path / "repo"
    (top / ".git" / "info").mkdir(parents=True)
    (top / ".git" / "info" / "exclude").write_text("*.secret.md\n")
    (top / ".gitignore").write_text("*.log.txt\ngen/\n/src/top_only.md\n")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.md").write_text("top secret")
    (outside / "sub" / "more.md").write_text("more")
    src = top / "src"
    names = [
        "README.md", "notes.TXT", "pic.png", "LICENSE", "a.log.txt", "top_only.md", "k.secret.md", ".hidden.md",
        "api.generated.md", "trailing.", "lib/keep.log.txt", "lib/cache.txt", "lib/x.md", "lib/top_only.md",
        "gen/out.md", ".hid/in.md", "node_modules/m.md", "drafts/d.md", "guides/g.txt", "guides/deep/h.py",
        "other/o.txt", "build/b.md", "docs/build/c.md", "docs/_build/d.md", "locked/in.md",
    ]  # fmt: skip
    for name in names:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text("x\n")
    (src / "lib" / ".gitignore").write_text("cache.txt\n!keep.log.txt\n")  # the deeper rules win
    (src / "bin").mkdir()
    (src / "bin" / "deploy").write_text("#!/bin/sh\necho hi\n")
    os.mkfifo(src / "pipe.md")
    os.mkfifo(src / "bin" / "fifo")
    for link, target in [
        ("alias.md", src / "README.md"), ("leak.md", outside / "secret.md"), ("leakdir", outside / "sub"),
        ("innerdir", src / "guides"), ("dangling.md", src / "nowhere.md"), ("loop", src / "loop"),
        (".hidden_link", outside / "sub"), ("bin/run", src / "bin" / "deploy"),
    ]:  # fmt: skip
        (src / link).symlink_to(target)
    raw = os.fsencode(src)
    with open(raw + b"/bad_\xff.md", "w") as fh:
        fh.write("x")
    os.mkdir(raw + b"/caf\xe9")
    with open(raw + b"/caf\xe9/one.md", "w") as fh:
        fh.write("x")
    return top


SELECTIONS = {
    "defaults": Selection.of(None, []),
    "include and exclude": Selection.of(["guides/", "*.md", "/bin/"], ["drafts/", "*.generated.md", "/docs/"]),
    "nothing left out": Selection.of(None, [], default_excludes=False, gitignore=False),
    "a folder and a path": Selection.of(["lib", "docs/*"], ["lib/x.md"]),
}


def _refuse(path: Any) -> Any:
    raise PermissionError(13, "Permission denied", os.fspath(path))


@pytest.fixture
def locked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders named ``locked`` cannot be listed (root lists any folder whatever its mode: os.scandir refuses)."""
    listing = os.scandir
    monkeypatch.setattr(
        os, "scandir", lambda path=".": _refuse(path) if os.fspath(path).endswith("locked") else listing(path)
    )


@pytest.mark.parametrize("chosen", sorted(SELECTIONS))
@pytest.mark.parametrize("through_link", [False, True])
def test_the_walk_decides_each_entry_as_the_per_path_rules_do(
    tree: Path, chosen: str, through_link: bool, locked: None
) -> None:
    source = tree / "src"
    if through_link:  # the source named through a link: shown as named, walked where it lives
        source = tree.parent / "named"
        source.symlink_to(tree / "src")
    selection = SELECTIONS[chosen]
    for base in (tree, tree / "elsewhere"):
        found = discover(source, EXTS, base=base, selection=selection)
        walked = (
            [(f.display, f.location) for f in found.files],
            [(s.display, s.reason, s.kind) for s in found.skipped],
            [(s.display, s.reason) for s in found.failed],
        )
        expected = reference(source, base, selection)
        assert walked == expected
        assert expected[0] and expected[1] and expected[2]  # the tree has files of each kind for this selection
        assert all(not location.startswith(str(tree.parent / "outside")) for _, location in walked[0])


def test_a_file_listed_keeps_its_path_as_a_string_and_a_path(tree: Path) -> None:
    listed = discover(tree / "src", EXTS, base=tree).files[0]
    assert isinstance(listed.location, str) and listed.path == Path(listed.location)
    assert listed.path.is_file() and listed.path.is_relative_to((tree / "src").resolve())


SEGMENTS = ["a", "b", "docs", "x.md", "ab.md", "c.txt", "a.b", "build", "_build", "node_modules"]
GLOB_PARTS = ["a", "b", "*", "?", "[ab]", "docs", "*.md", "x.*", "**", "build", "a*b", "[!a]*"]
paths = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map("/".join)
globs = st.builds(
    lambda lead, parts, trail: lead + "/".join(parts) + trail,
    st.sampled_from(["", "/", "**/", "./"]),
    st.lists(st.sampled_from(GLOB_PARTS), min_size=1, max_size=3),
    st.sampled_from(["", "/"]),
)


@settings(max_examples=300, deadline=None)
@given(
    include=st.lists(globs, max_size=3),
    exclude=st.lists(globs, max_size=3),
    defaults=st.booleans(),
    relative=paths,
)
def test_compiled_patterns_answer_as_each_pattern_matched_alone(
    include: list[str], exclude: list[str], defaults: bool, relative: str
) -> None:
    selection = Selection.of(include, exclude, default_excludes=defaults)
    assert selection.walks(relative) is reference_walks(selection, relative)
    assert selection.takes(relative) is reference_takes(selection, relative)
    parts = relative.split("/")[:-1]
    covered = not selection.include or any(selection.covers("/".join(parts[: i + 1])) for i in range(len(parts)))
    assert selection.takes(relative, covered=covered) is reference_takes(selection, relative)  # as a walk asks
    assert all(isinstance(p, Pattern) for p in (*selection.include, *selection.exclude))
    again = pickle.loads(pickle.dumps(selection))  # compiled, it still travels (to an executor's workers)
    assert again == selection and again.takes(relative) is selection.takes(relative)


IGNORE_LINES = ["*.log", "!keep.log", "build/", "/top.md", "a/**/b", "docs/*.md", "!docs/x.md", "# note", "", "[ab]*"]
IGNORED_PATHS = ["a.log", "keep.log", "build/", "build/x.md", "top.md", "a/top.md", "a/c/b", "docs/x.md", "ab.md"]


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.sampled_from(IGNORE_LINES), max_size=6), path=st.sampled_from(IGNORED_PATHS))
def test_an_ignore_files_rules_answer_as_pathspec_does(lines: list[str], path: str) -> None:
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    assert Rules(spec).verdict(path) is spec.check_file(path).include  # one search first, pathspec's verdict after
