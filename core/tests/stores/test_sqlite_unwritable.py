"""A full disk, a read-only index and an unwritable state directory: each is one line naming the file,
the cause and the fix; the index as last ingested stays searchable; the embedding cache, which only
saves work, is given up with one warning instead of stopping the run.

A full disk is simulated portably with SQLite's ``PRAGMA max_page_count`` (the same error, "database
or disk is full", that a full file system gives) and a read-only file with a read-only SQLite
connection; one test fills a real tmpfs when the suite runs as root where mounting is allowed, and
is skipped elsewhere.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from deckhand.bases import EmbedderBase
from deckhand.cli.main import EXIT_ERROR, cli
from deckhand.embedding.cache import CachedEmbedder, EmbeddingCache
from deckhand.stores.sqlite import file as sqlite_file

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DECKHAND = str(Path(sys.executable).parent / "deckhand")
FIX = (
    "free disk space or make the file and its directory writable, set DECKHAND_HOME to a writable directory, "
    "or use `database: {provider: in-memory}`"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    return tmp_path / "examples"


def _index() -> Path:
    return Path(os.environ["DECKHAND_HOME"]) / "index" / "deckhand_vectors.sqlite"


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _new_docs(project: Path, n: int) -> None:
    """``n`` files whose texts no other test embeds (so the embedding cache must write them)."""
    tag = uuid.uuid4().hex
    for i in range(n):
        (project / "docs" / f"new{i:02}.md").write_text(f"Dredging log {tag} entry {i}: the channel is {i} m deep.")


def _full(conn: sqlite3.Connection) -> None:
    """No page may be added to ``conn``'s database: its next growing write fails with SQLITE_FULL."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")


class _Embedder(EmbedderBase):
    model_id, dimension, max_tokens = "fake", 8, 128
    tokenizer: Any = None

    def embed(self, texts: Any) -> np.ndarray:
        return np.ones((len(texts), 8), dtype=np.float32)


def test_a_full_embedding_cache_is_one_warning_and_embedding_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    embedder = CachedEmbedder(_Embedder(), cache)
    embedder.embed(["first"])
    _full(cache._db)
    texts = [f"text {i} " * 200 for i in range(200)]
    assert embedder.embed(texts).shape == (200, 8)
    assert embedder.embed(texts).shape == (200, 8)  # the cache is off now: embedded again, no second warning
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"embedding cache {tmp_path / 'cache.sqlite'}: database or disk is full; embedding without it for the "
        "rest of this run (free disk space, delete the file if it is damaged: it only saves work, or set "
        "DECKHAND_NO_CACHE=1 to turn the cache off)"
    ]
    assert embedder.embedded_count == 401 and cache.failed == "database or disk is full"


def test_disk_full_during_ingest_is_one_line_and_the_previous_index_survives(project: Path, minilm: object) -> None:
    cfg = str(project / "agent.yaml")
    assert _run("-c", cfg, "ingest").exit_code == 0
    configure, cache_init = sqlite_file._configure, EmbeddingCache.__init__

    def full_index(conn: sqlite3.Connection, path: Path) -> None:
        configure(conn, path)
        _full(conn)

    def full_cache(self: EmbeddingCache, path: Path) -> None:
        cache_init(self, path)
        _full(self._db)

    _new_docs(project, 30)
    with pytest.MonkeyPatch.context() as full:
        full.setattr(sqlite_file, "_configure", full_index)
        full.setattr(EmbeddingCache, "__init__", full_cache)  # a new cache object: this test's state dir is new
        result = _run("-c", cfg, "ingest")
    assert result.exit_code == EXIT_ERROR, result.output
    lines = result.stderr.splitlines()
    assert "Traceback" not in result.stderr and not any("failed docs/" in line for line in lines), lines
    assert lines[-1] == f"error: cannot use index file {_index()} (database or disk is full); {FIX}"
    # space again
    with sqlite3.connect(_index()) as conn:  # every file of the last ingest is still there, whole
        kept = dict(conn.execute("SELECT source, chunk_count FROM manifest WHERE source NOT LIKE 'docs/new%'"))
        rows = dict(conn.execute("SELECT source, count(*) FROM c1_records GROUP BY source"))
    conn.close()
    assert len(kept) == 5 and all(rows[source] == count for source, count in kept.items()), (kept, rows)
    found = _run("-c", cfg, "search", "--json", "rotate API keys")  # completes the interrupted ingest first
    assert found.exit_code == 0 and '"docs/security.md"' in found.stdout, found.stderr
    again = _run("-c", cfg, "ingest")
    assert again.exit_code == 0 and "0 ingested (0 chunks, 0 embedded), 35 unchanged" in again.stderr, again.stderr


def test_a_read_only_index_is_one_line_even_with_force_ingest(project: Path, minilm: object) -> None:
    cfg = str(project / "agent.yaml")
    _new_docs(project, 30)
    assert _run("-c", cfg, "ingest").exit_code == 0
    connect = sqlite3.connect
    index = _index()

    def read_only(target: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if Path(target) == index:  # as a file that the user may read but not write
            return connect(f"file:{index}?mode=ro", *args, uri=True, **kwargs)
        return connect(target, *args, **kwargs)

    (project / "docs" / "security.md").write_text("Keys are rotated yearly.")
    for command in (["ingest"], ["search", "--force-ingest", "rotate API keys"], ["ingest", "--force-ingest"]):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sqlite_file.sqlite3, "connect", read_only)
            result = _run("-c", cfg, *command)
        assert result.exit_code == EXIT_ERROR, (command, result.output)
        lines = result.stderr.splitlines()
        assert lines[-1] == f"error: cannot use index file {index} (attempt to write a readonly database); {FIX}"
        assert len(lines) <= 3, (command, lines)  # at most the two stage lines before it, never one per file
    found = _run("-c", cfg, "search", "--json", "-k", "1", "rotate API keys")
    assert found.exit_code == 0 and '"docs/security.md"' in found.stdout


def test_an_unusable_state_directory_is_one_error_naming_it(project: Path) -> None:
    blocker = project / "not-a-directory"
    blocker.write_text("")
    home = blocker / "state"  # mkdir fails under a file, even for root
    env = {**os.environ, "DECKHAND_HOME": str(home)}
    result = subprocess.run(
        [DECKHAND, "-c", str(project / "agent.yaml"), "ingest"], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == EXIT_ERROR
    assert result.stderr.splitlines() == [
        f"WARNING: embedding cache {home}/cache/embeddings.sqlite: cannot open it (Not a directory); embedding "
        "without it (make its directory writable, delete the file if it is damaged: it only saves work, set "
        "DECKHAND_HOME to a writable directory, or set DECKHAND_NO_CACHE=1)",
        f"error: cannot use index file {home}/index/deckhand_vectors.sqlite (Not a directory); {FIX}",
    ]


def test_a_damaged_embedding_cache_is_one_warning_and_the_ingest_goes_on(project: Path, minilm: object) -> None:
    cache = Path(os.environ["DECKHAND_HOME"]) / "cache"
    cache.unlink()  # this test's own cache (the suite shares one through a link), then damaged
    cache.mkdir()
    (cache / "embeddings.sqlite").write_bytes(b"not a database " * 1000)
    env = {**os.environ, "DECKHAND_THREADS": "1"}
    done = subprocess.run(
        [DECKHAND, "-c", str(project / "agent.yaml"), "ingest"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"WARNING: embedding cache {cache}/embeddings.sqlite: cannot open it (file is not a database); embedding "
        "without it (make its directory writable, delete the file if it is damaged: it only saves work, set "
        "DECKHAND_HOME to a writable directory, or set DECKHAND_NO_CACHE=1)"
    )
    assert lines[-1].startswith("harbor_docs [sqlite]: 5 ingested") and "Traceback" not in done.stderr


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (root only, where mounting is allowed; skipped elsewhere)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a small tmpfs")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_really_full_disk(project: Path, tiny_disk: Path) -> None:
    env = {**os.environ, "DECKHAND_HOME": str(tiny_disk), "DECKHAND_THREADS": "1"}
    cfg = str(project / "agent.yaml")

    def deckhand(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([DECKHAND, "-c", cfg, *args], capture_output=True, text=True, env=env, timeout=300)

    assert deckhand("-q", "ingest").returncode == 0
    filler = tiny_disk / "filler"
    with open(filler, "wb") as fh:  # take every free byte
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    _new_docs(project, 5)
    full = deckhand("ingest")
    assert full.returncode == EXIT_ERROR, full.stderr
    assert "Traceback" not in full.stderr and len(full.stderr.splitlines()) <= 4, full.stderr
    assert full.stderr.splitlines()[-1] in (  # SQLite says one or the other, by the write that failed
        f"error: cannot use index file {tiny_disk}/index/deckhand_vectors.sqlite ({reason}); {FIX}"
        for reason in ("database or disk is full", "disk I/O error: no space left on the disk")
    ), full.stderr
    filler.unlink()
    found = deckhand("search", "-k", "1", "rotate API keys")  # the index as last ingested (or, if the ingest
    assert found.returncode == 0 and "Source: docs/security.md" in found.stdout, found.stderr  # wrote, completed)
    assert "index opened (5 chunks" in found.stderr or "5 ingested" in found.stderr, found.stderr


@pytest.mark.parametrize("linked", ["", "-wal"])
def test_a_cache_swapped_for_a_link_is_not_opened(
    tmp_path: Path, linked: str, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite follows links: an embedding cache file (or its WAL) as a link to a database outside the state
    directory is not opened (one warning, embedding goes on without it); the database it points to is neither read
    nor written. (The llm context cache: plugins/openai/tests/test_llm_context.py.)"""
    from deckhand.embedding.cache import open_cache

    outside = tmp_path / "outside.sqlite"
    sqlite3.connect(outside).close()
    before = outside.read_bytes()
    cache = tmp_path / "cache"
    cache.mkdir()
    Path(f"{cache / 'embeddings.sqlite'}{linked}").symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        assert open_cache(cache / "embeddings.sqlite") is None
    assert "symbolic link" in caplog.records[-1].getMessage()
    assert outside.read_bytes() == before and not Path(f"{outside}-wal").exists()
