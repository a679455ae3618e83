"""The default store's index file: where it lives, how it is created and opened, and what its
SQLite errors say to a person.

One file holds every collection of one ``index_name`` (``<state dir>/index/<index_name>.sqlite``),
in WAL mode: readers keep their snapshot while one writer commits, and a killed process leaves
the last committed state. A new file is built under a temporary name and linked into place, so
the index path only ever holds a complete, initialised database; an empty or foreign file there
is reported as damaged, never silently treated as a new index.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from deckhand.errors import IndexCorruptError, IndexFileError, IndexLockedError, StoreError
from deckhand.paths import is_link, open_no_link, read_no_link, state_dir

if TYPE_CHECKING:
    from deckhand.config.tool_fields import DatabaseConfig

#: Bumped when the layout changes; a file with a higher version is refused (rebuild with --force-ingest).
SCHEMA_VERSION = 1
#: How long a write waits for another process's transaction before giving up.
BUSY_TIMEOUT_S = 60.0
SUFFIX = ".sqlite"
#: Longer than a tick of the clock file modification times come from (1-10 ms on Linux): see ``_write_stamp``.
_TICK_NS = 50_000_000
#: 16 KiB pages hold ten 384-dim vectors each: loading 100k vectors takes a third less CPU than with 4 KiB.
PAGE_SIZE = 16384

_SCHEMA = """
CREATE TABLE collections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    dimension INTEGER NOT NULL,
    embedding_model TEXT NOT NULL,
    metric TEXT NOT NULL,
    algorithm TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0,
    next_row INTEGER NOT NULL DEFAULT 1,
    size INTEGER NOT NULL DEFAULT 0,
    log_floor INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE side_indexes (
    collection INTEGER NOT NULL,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (collection, name)
) WITHOUT ROWID;
CREATE TABLE deleted (
    collection INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    row INTEGER NOT NULL,
    PRIMARY KEY (collection, generation, row)
) WITHOUT ROWID;
CREATE TABLE manifest (
    collection INTEGER NOT NULL,
    source TEXT NOT NULL,
    mtime REAL NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    model TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    PRIMARY KEY (collection, source)
) WITHOUT ROWID;
"""

# SQLite's primary result codes (https://sqlite.org/rescode.html) the messages distinguish.
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 10, 11, 13, 14, 26
_IOERR_SHORT_READ = 522  # a page read past the end of a truncated file


def index_path(config: DatabaseConfig | None, base_dir: Path | None = None) -> Path:
    """The file a ``database:`` block (DatabaseConfig) names for the sqlite store.

    No ``connection_string``: ``<state dir>/index/<index_name>.sqlite``, the state directory
    being ``$DECKHAND_HOME`` or ``<base_dir>/.deckhand``. Otherwise a file path (``~``
    expanded; relative paths resolve against ``base_dir``, the agent config's directory, as
    ``source:`` does); a directory (existing, or written with a trailing ``/``) holds
    ``<index_name>.sqlite``.
    """
    base = (base_dir or Path.cwd()).resolve()
    index_name = config.index_name if config is not None else "deckhand_vectors"
    target = config.connection_string if config is not None else None
    if not target:
        return state_dir(base) / "index" / f"{index_name}{SUFFIX}"
    path = Path(target).expanduser()
    if not path.is_absolute():
        path = base / path
    if target.endswith(("/", os.sep)) or path.is_dir():
        path = path / f"{index_name}{SUFFIX}"
    return path


def connect(path: Path) -> sqlite3.Connection:
    """An open connection to the index at ``path``, creating the file if it does not exist.

    One connection serves every thread of the store (``check_same_thread=False``); the store
    serialises its use with a lock. Transactions are explicit (``isolation_level=None``).
    """
    with translated(path):
        for part in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            if is_link(part):  # SQLite would follow it: read and write the file it points to
                reason = f"{part.name} is a symbolic link, never followed"
                raise IndexCorruptError(damaged_message(path, reason), str(path))
        if not path.exists():
            _create(path)
        if path.stat().st_size == 0:
            raise IndexCorruptError(damaged_message(path, "the file is empty (truncated)"), str(path))
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            _configure(conn, path)
        except BaseException:
            conn.close()
            raise
        return conn


def _configure(conn: sqlite3.Connection, path: Path) -> None:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version == 0:
        raise IndexCorruptError(damaged_message(path, "it is not a deckhand index"), str(path))
    _check_length(conn, path)
    if version > SCHEMA_VERSION:
        raise IndexCorruptError(
            f"index file {path} was written by a newer deckhand (layout {version}; this one reads "
            f"{SCHEMA_VERSION}); upgrade deckhand, or run again with --force-ingest to set it aside and rebuild",
            str(path),
        )
    if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        conn.execute("PRAGMA journal_mode=WAL")
    # NORMAL in WAL mode: a killed process loses nothing committed; a power cut may lose the
    # last transactions but never corrupts the file.
    conn.execute("PRAGMA synchronous=NORMAL")


def _check_length(conn: sqlite3.Connection, path: Path) -> None:
    """A file shorter than the pages its header counts was truncated (checked when no WAL holds pages)."""
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return  # pages may legitimately live in the WAL until the next checkpoint
    expected = int(conn.execute("PRAGMA page_count").fetchone()[0]) * int(
        conn.execute("PRAGMA page_size").fetchone()[0]
    )
    actual = path.stat().st_size
    if actual < expected:
        raise IndexCorruptError(
            damaged_message(path, f"truncated: {actual:,} bytes of {expected:,}"),
            str(path),
        )


def verify(conn: sqlite3.Connection, path: Path) -> None:
    """Read every page (``PRAGMA quick_check``) unless the file is as its last complete check left it.

    A check that passes stamps the file (:func:`stamp`): the next ingest skips the read, which
    at a million chunks is a 2 GB file (5 s from the page cache, 46 s from disk). Any change
    to the file that SQLite did not make through a connection that checked it first (bytes
    written over it, a copy put in its place) changes its size, modification time or inode,
    and the whole file is read again.
    """
    before = _stat(path)
    if before is not None and before == _stamped(path):
        return
    rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)")]
    if rows != ["ok"]:
        # one problem per line, after a "*** in database main ***" heading: the message stays one line
        problems = [p.strip() for row in rows for p in row.splitlines() if p.strip() and not p.startswith("***")]
        unstamp(path)
        raise IndexCorruptError(damaged_message(path, "; ".join(problems[:3]) or "quick_check failed"), str(path))
    if before is not None:
        _write_stamp(path, before)


def stamp(path: Path) -> None:
    """Record the file as it is now as checked: called by a connection that checked it when it closes, since what
    changed it meanwhile were SQLite's own transactions (a file changed by anything else is read again)."""
    now = _stat(path)
    if now is not None and now != _stamped(path):
        _write_stamp(path, now)


def unstamp(path: Path) -> None:
    """Forget the last check: the next ingest reads every page (any sign of damage calls this)."""
    with contextlib.suppress(OSError):
        _stamp_path(path).unlink()


def _stamp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.checked")


def _stat(path: Path) -> list[int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns, found.st_ino, found.st_dev]


def _stamped(path: Path) -> list[int] | None:
    try:
        value = json.loads(read_no_link(_stamp_path(path)).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, list) else None


def _write_stamp(path: Path, value: list[int]) -> None:
    """Record ``value`` (the file's stat) as checked, once the clock is past the tick of its modification time: a
    write in that same tick would leave the time as it is, so the stamp waits it out (at most
    :data:`_TICK_NS`) and gives up if the file changed meanwhile. Written under a temporary name and renamed."""
    wait = value[1] + _TICK_NS - time.time_ns()
    if wait > 0:
        time.sleep(wait / 1e9)
        if _stat(path) != value:
            return  # changed meanwhile: no stamp, the next ingest reads every page
    target = _stamp_path(path)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    with contextlib.suppress(OSError):
        fd = open_no_link(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with open(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(value))
        os.replace(tmp, target)


def _create(path: Path) -> None:
    """Build an empty index under a temporary name, then link it into place (first creator wins)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        finally:
            conn.close()  # the last connection checkpoints the WAL into the file and removes it
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process created it meanwhile: use theirs
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(tmp, path)
    finally:
        for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)


def set_aside(path: Path) -> Path:
    """Move a damaged index (and its WAL files) out of the way; nothing is deleted."""
    when = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{when}")
    unstamp(path)
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if os.path.lexists(source):  # a link is moved itself, not followed
            os.replace(source, Path(f"{target}{suffix}"))
    return target


def damaged_message(path: Path, reason: str) -> str:
    return (
        f"index file {path} is damaged ({reason}); run again with --force-ingest to set it aside and rebuild the index"
    )


@contextlib.contextmanager
def translated(path: Path) -> Iterator[None]:
    """Turn SQLite and file-system errors into one-line :class:`StoreError` messages naming the file and the fix."""
    try:
        yield
    except StoreError:
        raise
    except sqlite3.Error as exc:
        raise describe(exc, path) from exc
    except OSError as exc:
        raise IndexFileError(_unwritable(path, exc.strerror or str(exc)), str(path)) from exc


def describe(exc: sqlite3.Error, path: Path) -> StoreError:
    """The store error a SQLite error stands for."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    reason = str(exc)
    if primary in (_CORRUPT, _NOTADB) or code == _IOERR_SHORT_READ or "malformed" in reason:
        unstamp(path)  # damage a read noticed: the next ingest checks every page again
        return IndexCorruptError(damaged_message(path, reason), str(path))
    if primary in (_BUSY, _LOCKED):
        return IndexLockedError(
            f"index file {path} is being written by another process (waited {BUSY_TIMEOUT_S:.0f} s); "
            "try again when it has finished"
        )
    if primary in (_PERM, _READONLY, _CANTOPEN, _FULL, _IOERR):
        if primary in (_FULL, _IOERR) and _disk_full(path) and "full" not in reason:
            reason = f"{reason}: no space left on the disk"  # a failed write to the WAL is reported as I/O
        return IndexFileError(_unwritable(path, reason), str(path))
    return StoreError(f"index file {path}: {reason}")


def _disk_full(path: Path) -> bool:
    """Whether the file system holding ``path`` has less than a page of 16 KiB free."""
    try:
        stat = os.statvfs(path.parent)
    except OSError:
        return False
    return stat.f_bavail * stat.f_frsize < PAGE_SIZE


def _unwritable(path: Path, reason: str) -> str:
    return (
        f"cannot use index file {path} ({reason}); free disk space or make the file and its directory writable, "
        "set DECKHAND_HOME to a writable directory, or use `database: {provider: in-memory}`"
    )
