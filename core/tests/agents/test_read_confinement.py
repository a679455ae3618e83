"""Reading a source's files stays inside it even while an attacker swaps files for links, and within
its size limits (issue 34, items 7, 9 and 15).

* A file, or a directory on the way to it, swapped between a regular one and a symbolic link to
  the outside while ``resources/read`` (the :class:`SourceReader`) or an ingest reads it in a loop:
  zero reads of the outside file (bounded stress tests, 2 s each).
* A 300-character file name is "not found" (-32002), not code 0 with a traceback.
* A sparse file over the tool's ``max_file_size`` or over what one read loads is refused in one
  line, without being read; a file that grows past the limit after the check is refused on open.
* ``file://localhost/...`` is this machine's file (RFC 8089), as docs/mcp.md says; another host is not.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _agent_fakes import FakeTool, box_of
from _foundation_helpers import contents, make_ingestor, open_memory_store
from deckhand.calls.call_models import CallError
from deckhand.calls.source_reading import SourceReader, file_uri
from deckhand.ingest.opening import TooLarge, confined_to, read_source_bytes
from deckhand.limits import MAX_READ_BYTES
from deckhand.mcp.resources import RESOURCE_NOT_FOUND
from deckhand.mcp.server import DeckhandMcpServer
from deckhand.testing.mcp_client import memory_session, read_resource

SECRET = "root:x:0:0:the-outside-secret"
INSIDE = "# Race\n\nAn ordinary document inside the source.\n"
STRESS_SECONDS = 2.0


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``docs/`` (the source) with ``race.md`` and ``sub/race.md``; ``outside/`` holds the secret."""
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "race.md").write_text(INSIDE)
    (tmp_path / "docs" / "sub" / "race.md").write_text(INSIDE)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "race.md").write_text(f"# Outside\n\n{SECRET}\n")
    return tmp_path


def docs_tool(tree: Path, **config: Any) -> FakeTool:
    tool = FakeTool("docs", tree / "docs")
    if config:  # a source tool's settings, as source_config() gives them
        tool.config.settings = SimpleNamespace(**{"encoding": "auto", "max_file_size": None, **config})
    return tool


@pytest.fixture
def swapping() -> Iterator[Callable[[Path, Path], None]]:
    """``swapping(target, outside)``: from now until the test ends, ``target`` (a file or a directory)
    is in turn itself and a symbolic link to ``outside``, as fast as a thread can rename."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the threads finely: more chances to land between check and open

    def start(target: Path, outside: Path) -> None:
        held = target.with_name(target.name + ".held")
        kept = target.parent.parent / f"kept-{target.name}"  # a file is swapped back by a hard link to it

        def swap_file() -> None:  # never absent: each rename replaces the name at once
            os.link(target, kept)
            while not stop.is_set():
                os.symlink(outside, held)
                os.rename(held, target)
                os.link(kept, held)
                os.rename(held, target)

        def swap_directory() -> None:  # a directory cannot be renamed over a link: absent for a moment
            while not stop.is_set():
                os.rename(target, held)
                os.symlink(outside, target)
                os.unlink(target)
                os.rename(held, target)

        swap = swap_directory if target.is_dir() else swap_file

        thread = threading.Thread(target=swap, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    stop.set()
    for thread in threads:
        thread.join(5)
    sys.setswitchinterval(interval)


@pytest.mark.parametrize("swapped", ["race.md", "sub"], ids=["the-file", "a-directory-on-the-way"])
def test_a_link_swapped_in_during_reads_never_escapes(tree: Path, swapping: Any, swapped: str) -> None:
    docs = tree / "docs"
    reader = SourceReader.of(box_of(docs_tool(tree)))
    target = docs / swapped
    uri = file_uri(docs / "race.md") if swapped == "race.md" else file_uri(docs / "sub" / "race.md")
    swapping(target, tree / "outside" / "race.md" if swapped == "race.md" else tree / "outside")
    escapes = reads = refused = 0
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < STRESS_SECONDS or (not reads and elapsed < 5 * STRESS_SECONDS):
        try:
            text = reader.read(uri).text
        except CallError as exc:
            refused += 1
            assert "\n" not in str(exc) and SECRET not in str(exc)
            continue
        reads += 1
        escapes += SECRET in text
    assert escapes == 0, f"{escapes} of {reads} reads returned the file outside the source ({refused} refused)"
    assert reads > 0 and refused > 0, (reads, refused)  # both states were seen: the race was run


def test_an_ingest_never_indexes_a_link_swapped_in_after_the_walk(tree: Path, minilm: Any, swapping: Any) -> None:
    store = open_memory_store(minilm)
    ingestor = make_ingestor(minilm, store, tree)
    swapping(tree / "docs" / "race.md", tree / "outside" / "race.md")
    runs = 0
    deadline = time.monotonic() + STRESS_SECONDS
    while time.monotonic() < deadline:
        ingestor.run(tree / "docs", force=True)
        runs += 1
        assert SECRET not in contents(store), f"run {runs} indexed the file outside the source"
    assert runs > 1


def test_the_opened_file_is_checked_not_the_path(tree: Path) -> None:
    """What the race tests rely on, deterministically: a link is refused on open, below the root too,
    and the byte limit holds on the opened file (one that grew after a size check)."""
    docs = tree / "docs"
    (docs / "link.md").symlink_to(tree / "outside" / "race.md")
    (docs / "dirlink").symlink_to(tree / "outside", target_is_directory=True)
    for path in (docs / "link.md", docs / "dirlink" / "race.md"):
        with confined_to(docs), pytest.raises(OSError, match="symbolic link"):
            read_source_bytes(path)
    with confined_to(docs, max_bytes=10), pytest.raises(TooLarge):
        read_source_bytes(docs / "race.md")
    with confined_to(docs):
        assert read_source_bytes(docs / "sub" / "race.md").decode() == INSIDE
    os.mkfifo(docs / "pipe.md")  # would block a reader that opened it
    with confined_to(docs), pytest.raises(OSError, match="not a regular file"):
        read_source_bytes(docs / "pipe.md")


async def _read(tool: FakeTool, uri: str) -> dict[str, Any]:
    async with memory_session(DeckhandMcpServer(box_of(tool)).server) as session:
        return await read_resource(session, uri)


async def test_a_file_name_too_long_is_not_found(tree: Path) -> None:
    answer = await _read(docs_tool(tree), file_uri(tree / "docs" / ("n" * 300 + ".md")))
    assert answer["error"]["code"] == RESOURCE_NOT_FOUND, answer
    assert answer["error"]["message"].startswith("uri: ") and "\n" not in answer["error"]["message"]


async def test_a_large_file_is_refused_without_being_read(tree: Path) -> None:
    big = tree / "docs" / "big.md"
    with big.open("wb") as fh:  # sparse: no 400 MB is written
        fh.truncate(400_000_000)
    clock = time.perf_counter()
    answer = await _read(docs_tool(tree, max_file_size=50_000_000), file_uri(big))
    assert answer["error"]["code"] == RESOURCE_NOT_FOUND, answer
    assert answer["error"]["message"] == (
        "uri: big.md is 400.0 MB, over the tool's max_file_size (50.0 MB): it is not indexed, so not read"
    )
    with big.open("r+b") as fh:  # no max_file_size: the read limit holds
        fh.truncate(MAX_READ_BYTES + 1)
    answer = await _read(docs_tool(tree, max_file_size=None), file_uri(big))
    assert answer["error"]["message"].startswith("uri: big.md is 32.0 MB, over what one read loads (32.0 MB)")
    assert time.perf_counter() - clock < 5.0  # refused from its size, not read


async def test_localhost_is_this_machine_and_other_hosts_are_refused(tree: Path) -> None:
    path = (tree / "docs" / "race.md").as_posix()
    answer = await _read(docs_tool(tree), f"file://localhost{path}")
    assert answer["contents"][0]["text"] == INSIDE
    answer = await _read(docs_tool(tree), f"file://example.com{path}")
    assert answer["error"]["code"] == RESOURCE_NOT_FOUND
    assert answer["error"]["message"].startswith("uri: a file URI of this machine has no host")
