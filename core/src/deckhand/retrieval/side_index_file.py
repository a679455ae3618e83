"""The hierarchical tool's look-up indexes as one SQLite file that a new process opens instead of loading.

A store that keeps side index files (:class:`deckhand.protocols.SideIndexFiles`, the sqlite store) names a
path; :func:`write` puts the definitions, section and location look-ups there, and :func:`open_file` opens
it. Opening reads one small table; a query then reads only the keys it looks up:

``meta``         format, records version and highest store row, keyword strategy, document count
``docs``         position → record id, source, location and store row (indexed by id and row)
``definitions``  normalised term → its definitions, in index order
``sections``     section id, source, chunk index, record id (indexed by section id and record id)

Keyword ranking and quoted phrases are the keyword index's (``tantivy``, a directory beside this file). The
file is written under a temporary name and renamed into place (a reader keeps the file it opened; a killed
writer leaves the previous file), and carries the records version it was built from. When records change,
:func:`apply` brings it up to date in place, in one transaction (a killed writer leaves it as it was): the
documents of deleted rows leave every table and new records are added; nothing in it is a statistic, so an
updated file answers exactly as a rebuilt one. A reader notices another connection's commit
(``PRAGMA data_version``) and drops what it cached.

A writer killed inside :func:`apply` leaves a hot journal (``<file>-journal``) that a read-only connection
cannot roll back ("attempt to write a readonly database"): the next opener, or a reader's next query, rolls it
back once with a read-write connection (:func:`roll_back`, SQLite's own recovery under its locks), so the file
is as it was before the killed update and is opened, or updated, again rather than rebuilt on every start.
:func:`write` rolls back (or, failing that, removes) such a journal before renaming a new file over the old one,
so a journal of the old file is never replayed into the new one.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from deckhand.chunking.definitions import Definition
from deckhand.chunking.headings import normalise_section_id
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import ReferenceResolver

log = logging.getLogger("deckhand")

#: Layout of the file; a file of another format is rebuilt.
FORMAT = 3
V = TypeVar("V")
T = TypeVar("T")
#: Values a table keeps once read (then it starts again): definitions and sections queries look up repeatedly.
_CACHED = 4096
#: Page cache of an opened file (KiB, filled only as pages are read).
_CACHE_KIB = 16384
#: Age after which a temporary file of an unfinished write is taken for abandoned (its writer was killed).
_ABANDONED_S = 3600.0
#: Keys per ``IN (...)`` query.
_BATCH = 500

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    pos INTEGER PRIMARY KEY, id TEXT NOT NULL, source TEXT NOT NULL, location TEXT NOT NULL, row INTEGER
);
CREATE TABLE definitions (
    seq INTEGER PRIMARY KEY, key TEXT NOT NULL, term TEXT NOT NULL, definition TEXT NOT NULL,
    source TEXT NOT NULL, section_id TEXT, record_id TEXT NOT NULL
);
CREATE TABLE sections (
    ident TEXT NOT NULL, source TEXT NOT NULL, chunk_index INTEGER NOT NULL, record_id TEXT NOT NULL
);
"""
_INDEXES = """
CREATE UNIQUE INDEX docs_id ON docs (id);
CREATE INDEX docs_row ON docs (row);
CREATE INDEX definitions_key ON definitions (key);
CREATE INDEX definitions_record ON definitions (record_id);
CREATE INDEX sections_ident ON sections (ident);
CREATE INDEX sections_record ON sections (record_id);
"""


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _remove_abandoned(path: Path) -> None:
    """Delete temporary files of ``path`` that a killed writer left (older than :data:`_ABANDONED_S`; a
    younger one may be another process's write in progress)."""
    now = time.time()
    for old in path.parent.glob(f"{glob.escape(path.name)}.tmp-*"):
        with contextlib.suppress(OSError):
            if now - old.stat().st_mtime > _ABANDONED_S:
                old.unlink()


def journal_of(path: Path) -> Path:
    """The rollback journal SQLite keeps beside ``path`` during a write (left behind by a killed writer)."""
    return path.with_name(path.name + "-journal")


def roll_back(path: Path) -> bool:
    """Roll back the journal a killed writer left beside ``path``, by opening it read-write (SQLite does it under
    its locks; a live writer's journal is left alone); True when a journal was there and is gone now."""
    journal = journal_of(path)
    if not journal.exists():
        return False
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, timeout=60.0)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            conn.close()
    except (sqlite3.Error, ValueError) as exc:
        log.info("side index file %s: cannot roll back the journal a killed writer left (%s)", path, exc)
        return False
    if journal.exists():
        return False
    log.info("side index file %s: rolled back an update a killed writer left unfinished", path)
    return True


def _without_stale_journal(path: Path) -> None:
    """Before a new file is renamed over ``path``: its old file's journal rolled back into it, else removed (the
    old file is being replaced), so the journal is never replayed into the new file."""
    if journal_of(path).exists() and not roll_back(path):
        with contextlib.suppress(FileNotFoundError):
            journal_of(path).unlink()


def _read_only(path: Path, opener: Callable[[], T]) -> T:
    """``opener()`` (a read-only use of ``path``); when it fails on a killed writer's journal, the journal rolled
    back (:func:`roll_back`) and ``opener()`` once more."""
    try:
        return opener()
    except sqlite3.Error:
        if not roll_back(path):
            raise
    return opener()


def write(
    path: Path,
    version: int,
    keyword_strategy: str,
    definitions: DefinitionIndex,
    resolver: ReferenceResolver,
    locations: Mapping[str, tuple[str, str]],
    rows: Mapping[str, int],
    last_row: int,
) -> None:
    """The look-up indexes built from the records at ``version`` (``rows``: record id → store row, ``last_row``:
    the highest row then, so :func:`apply` can update the file later) into ``path``, replaced atomically."""
    ids = list(locations)
    meta = {
        "format": FORMAT,
        "version": version,
        "last_row": last_row,
        "keyword_strategy": keyword_strategy,
        "n_docs": len(ids),
        "live": len(ids),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.tmp-")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = OFF")  # a temporary file: the rename makes it appear whole
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("BEGIN")
            for statement in _statements(_SCHEMA):
                conn.execute(statement)
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
            conn.executemany(
                "INSERT INTO docs VALUES (?, ?, ?, ?, ?)",
                ((i, rid, *locations[rid], rows.get(rid)) for i, rid in enumerate(ids)),
            )
            conn.executemany(
                "INSERT INTO definitions (key, term, definition, source, section_id, record_id)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                definitions.to_state(),
            )
            conn.executemany("INSERT INTO sections VALUES (?, ?, ?, ?)", _section_rows(resolver.to_state()))
            for statement in _statements(_INDEXES):
                conn.execute(statement)
            conn.execute("COMMIT")
        finally:
            conn.close()
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        _without_stale_journal(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _section_rows(state: Mapping[str, Mapping[str, list[tuple[int, str]]]]) -> Iterator[tuple[str, str, int, str]]:
    for ident, by_source in state.items():
        for source, entries in by_source.items():
            for chunk_index, record_id in entries:
                yield ident, source, int(chunk_index), record_id


@dataclass
class Delta:
    """The records changed since a file's version, prepared for :func:`apply` (new documents in index order)."""

    from_version: int
    version: int
    last_row: int
    deleted_rows: list[int]
    #: Per new document: store row, record id, source, location.
    rows: list[int]
    ids: list[str]
    sources: list[str]
    locations: list[str]
    definitions: list[list[object]]
    sections: Mapping[str, Mapping[str, list[tuple[int, str]]]]


def _meta(conn: sqlite3.Connection) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def matches(meta: Mapping[str, Any], keyword_strategy: str) -> bool:
    """Whether a file with ``meta`` was written in this format for this keyword strategy (of whatever records
    version): one that was not is rebuilt, never read or updated."""
    return meta.get("format") == FORMAT and meta.get("keyword_strategy") == keyword_strategy


def read_meta(path: Path) -> dict[str, Any] | None:
    """The meta table of the file at ``path``; None when there is none or it cannot be read."""
    if not path.is_file():
        return None

    def read() -> dict[str, Any]:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            return _meta(conn)
        finally:
            conn.close()

    try:
        return _read_only(path, read)
    except (sqlite3.Error, ValueError):
        return None


def apply(path: Path, delta: Delta) -> bool:
    """Bring the file from ``delta.from_version`` to ``delta.version`` in place, in one transaction; False
    (nothing changed) when the file is at another version or the changes do not fit it (the caller rebuilds)."""
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=60.0)
    except sqlite3.Error:
        return False
    try:
        conn.execute("BEGIN IMMEDIATE")
        meta = _meta(conn)
        if meta.get("format") != FORMAT or meta.get("version") != delta.from_version:
            conn.execute("ROLLBACK")
            return False
        gone = _remove_rows(conn, delta.deleted_rows)
        first = int(meta["n_docs"])
        positions = list(range(first, first + len(delta.ids)))
        conn.executemany(
            "INSERT INTO docs VALUES (?, ?, ?, ?, ?)",
            zip(positions, delta.ids, delta.sources, delta.locations, delta.rows, strict=True),
        )
        conn.executemany(
            "INSERT INTO definitions (key, term, definition, source, section_id, record_id) VALUES (?, ?, ?, ?, ?, ?)",
            delta.definitions,
        )
        conn.executemany("INSERT INTO sections VALUES (?, ?, ?, ?)", _section_rows(delta.sections))
        meta.update(
            version=delta.version,
            last_row=delta.last_row,
            n_docs=first + len(positions),
            live=int(meta["live"]) - gone + len(positions),
        )
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
        conn.execute("COMMIT")
        return True
    except sqlite3.Error as exc:  # e.g. a record id already there: the file and the records disagree
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        log.info("side index file %s not updated in place (%s); rebuilding it", path, exc)
        return False
    finally:
        conn.close()


def _remove_rows(conn: sqlite3.Connection, rows: list[int]) -> int:
    """Take the documents of store ``rows`` out of every table; how many there were."""
    gone = 0
    for start in range(0, len(rows), _BATCH):
        part = rows[start : start + _BATCH]
        marks = ",".join("?" * len(part))
        found = conn.execute(f"SELECT pos, id FROM docs WHERE row IN ({marks})", part).fetchall()
        if not found:
            continue
        positions, ids = [int(p) for p, _ in found], [str(i) for _, i in found]
        at = ",".join("?" * len(positions))
        named = ",".join("?" * len(ids))
        conn.execute(f"DELETE FROM docs WHERE pos IN ({at})", positions)
        conn.execute(f"DELETE FROM definitions WHERE record_id IN ({named})", ids)
        conn.execute(f"DELETE FROM sections WHERE record_id IN ({named})", ids)
        gone += len(found)
    return gone


class SideIndexFile:
    """An opened side index file: a read-only connection that the lookups below share (one at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        #: Caches of the tables read per key (:class:`_Table`), cleared when the file changes.
        self.tables: list[_Table[Any]] = []
        self._seen = -1
        self.meta: dict[str, Any] = {}
        self.live = 0
        try:
            # the first statement reads the schema: a killed writer's journal is rolled back before it
            _read_only(path, lambda: self._conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}"))
            with self._lock:
                self._follow()
        except BaseException:
            self._conn.close()  # e.g. a damaged file: the caller rebuilds it
            raise

    def _follow(self) -> None:
        """Re-read meta and drop every cache when another connection committed since (``PRAGMA data_version``
        moves; it costs no read). Under the lock. Every query starts here, so a journal that a writer killed
        since left is rolled back here (:func:`roll_back`) before the query reads."""
        _read_only(self.path, self._follow_once)

    def _follow_once(self) -> None:
        seen = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        if seen == self._seen:
            return
        meta = _meta(self._conn)
        self._seen, self.meta, self.live = seen, meta, int(meta.get("live", 0))
        for table in self.tables:
            table.forget()

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            self._follow()
            return self._conn.execute(sql, args).fetchall()

    def close(self) -> None:
        """Close the connection (also closed when the object is collected, once no query uses it)."""
        with self._lock:
            self._conn.close()


class _Table(Mapping[str, V]):
    """A read-only mapping whose values are read from the file per key (and kept once read)."""

    def __init__(self, file: SideIndexFile, get_sql: str, keys_sql: str, decode: Any) -> None:
        self._file, self._get_sql, self._keys_sql, self._decode = file, get_sql, keys_sql, decode
        self._keys: list[str] | None = None
        self._cache: dict[str, V | None] = {}
        file.tables.append(self)

    def forget(self) -> None:
        """Drop what was read (the file changed)."""
        self._keys = None
        self._cache = {}

    def __getitem__(self, key: str) -> V:
        if key not in self._cache:
            if len(self._cache) >= _CACHED:
                self._cache.clear()
            rows = self._file._rows(self._get_sql, (key,))
            self._cache[key] = self._decode(rows) if rows else None
        value = self._cache[key]
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def _all_keys(self) -> list[str]:
        if self._keys is None:
            self._keys = [str(row[0]) for row in self._file._rows(self._keys_sql)]
        return self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._all_keys())

    def __len__(self) -> int:
        return len(self._all_keys())


def _definitions(rows: list[tuple[Any, ...]]) -> list[Definition]:
    return [Definition(str(t), str(d), str(s), None if sid is None else str(sid), str(r)) for t, d, s, sid, r in rows]


def _sections(rows: list[tuple[Any, ...]]) -> dict[str, list[tuple[int, str]]]:
    by_source: dict[str, list[tuple[int, str]]] = {}
    for source, chunk_index, record_id in rows:
        by_source.setdefault(str(source), []).append((int(chunk_index), str(record_id)))
    return by_source


def _location(rows: list[tuple[Any, ...]]) -> tuple[str, str]:
    return str(rows[0][0]), str(rows[0][1])


class Locations(_Table[tuple[str, str]]):
    """Record id → (source, location), read per id; its length is the document count."""

    def many(self, record_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Those of ``record_ids`` the file has, read together (a query's candidates)."""
        found: dict[str, tuple[str, str]] = {}
        for start in range(0, len(record_ids), _BATCH):
            part = record_ids[start : start + _BATCH]
            sql = f"SELECT id, source, location FROM docs WHERE id IN ({','.join('?' * len(part))})"
            found.update((str(i), (str(s), str(w))) for i, s, w in self._file._rows(sql, tuple(part)))
        return found

    def __len__(self) -> int:
        return self._file.live


def open_file(
    path: Path, version: int, keyword_strategy: str
) -> tuple[SideIndexFile, DefinitionIndex, ReferenceResolver, ExactIndex, Mapping[str, tuple[str, str]]] | None:
    """The look-up indexes in ``path`` (the exact index's phrases are left to the caller to attach); None when
    there is no file, it cannot be read, or it was built for other records, format or strategy."""
    if not path.is_file():
        return None
    try:
        file = SideIndexFile(path)  # its first read rolls back a killed writer's journal (``_follow``)
    except (sqlite3.Error, ValueError) as exc:
        log.warning("ignoring unreadable side index file %s (%s); rebuilding it", path, exc)
        return None
    meta = file.meta
    if meta.get("version") != version or not matches(meta, keyword_strategy):
        file.close()
        return None
    definitions = DefinitionIndex.over(
        _Table(
            file,
            "SELECT term, definition, source, section_id, record_id FROM definitions WHERE key = ? ORDER BY seq",
            "SELECT key, min(seq) AS first FROM definitions GROUP BY key ORDER BY first",
            _definitions,
        )
    )
    resolver = ReferenceResolver.over(
        _Table(
            file,
            "SELECT source, chunk_index, record_id FROM sections WHERE ident = ? ORDER BY rowid",
            "SELECT ident, min(rowid) AS first FROM sections GROUP BY ident ORDER BY first",
            _sections,
        )
    )
    exact = ExactIndex(resolver, definitions, normalise_section_id)
    locations = Locations(
        file, "SELECT source, location FROM docs WHERE id = ?", "SELECT id FROM docs ORDER BY pos", _location
    )
    return file, definitions, resolver, exact, locations
