"""The side indexes as one SQLite file that a new process opens instead of loading.

A store that keeps side index files (:class:`deckhand.protocols.SideIndexFiles`, the sqlite
store) names a path; :func:`write` puts every side index there (built in this process, with
the builtin ``bm25`` keyword index) and :func:`open_file` opens it. Opening reads one small
table; a query then reads only what it needs:

``meta``         format, records version and highest store row, keyword strategy and BM25 settings,
                 the statistics the weights were computed with, document counts
``docs``         position → record id, source, location and store row (indexed by id and row)
``texts``        position → lower-cased content (exact phrases), with ``texts_fts``, an FTS5
                 trigram index (no positions) that narrows a phrase to the texts holding its trigrams
``postings``     term, segment → its BM25 document positions and weights (int32 / float32 arrays)
``dead``         positions of documents deleted since the build (their postings stay until a rebuild)
``definitions``  normalised term → its definitions, in index order
``sections``     section id, source, chunk index, record id (indexed by section id and record id)

As built, scores and orders are those of the in-memory indexes: the same postings, summed in
the same order, and the same tables the in-memory dicts hold, looked up per key. The file is
written under a temporary name and renamed into place (a reader keeps the file it opened; a
killed writer leaves the previous file), and carries the records version it was built from.

When records change, :func:`apply` brings the file up to date in place, in one transaction
(a killed writer leaves it as it was): documents of deleted rows leave ``docs``, ``texts``,
``definitions`` and ``sections`` and their positions go into ``dead``; new records get new
positions and one new postings segment, weighted with the statistics of the build (document
count and average length; a term's document frequency counts every segment). So after an update
BM25 scores are those of the build's statistics, not a fresh build's; the caller rebuilds once
the changes since the build pass a share of it (:data:`deckhand.retrieval.side_indexes.REBUILD_SHARE`).
A reader notices another connection's commit (``PRAGMA data_version``) and drops what it cached.

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
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from deckhand.chunking.definitions import Definition
from deckhand.chunking.headings import normalise_section_id
from deckhand.retrieval.bm25 import BM25Index, FloatArray, IntArray, bm25_weights
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import ReferenceResolver

log = logging.getLogger("deckhand")

#: Layout of the file; a file of another format is rebuilt.
FORMAT = 2
V = TypeVar("V")
T = TypeVar("T")
#: Values a table keeps once read (then it starts again): definitions and sections queries look up repeatedly.
_CACHED = 4096
#: Pages of the file: a common term's postings (hundreds of KiB) span fewer overflow pages than with 4 KiB.
_PAGE_SIZE = 16384
#: Page cache of an opened file (KiB, filled only as pages are read): keeps the common terms' postings at hand.
_CACHE_KIB = 65536
#: Bytes of recently used postings an opened file keeps decoded (common terms recur from query to query).
_POSTINGS_CACHED = 32 << 20
#: Age after which a temporary file of an unfinished write is taken for abandoned (its writer was killed).
_ABANDONED_S = 3600.0
#: Keys per ``IN (...)`` query.
_BATCH = 500
#: Phrase candidates in more than 1/_SCAN_SHARE of the texts: scanning them all is faster than fetching by position.
_SCAN_SHARE = 4

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    pos INTEGER PRIMARY KEY, id TEXT NOT NULL, source TEXT NOT NULL, location TEXT NOT NULL, row INTEGER
);
CREATE TABLE texts (pos INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE postings (
    term TEXT NOT NULL, segment INTEGER NOT NULL, docs BLOB NOT NULL, weights BLOB NOT NULL,
    PRIMARY KEY (term, segment)
);
CREATE TABLE dead (pos INTEGER PRIMARY KEY);
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
#: The trigram index over ``texts`` (external content, no positions: about a fifth of the texts' size).
_TRIGRAMS = """
CREATE VIRTUAL TABLE texts_fts USING fts5(
    text, content='texts', content_rowid='pos', tokenize='trigram case_sensitive 1', detail='none'
);
INSERT INTO texts_fts (texts_fts) VALUES ('rebuild');
"""


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _add_trigrams(conn: sqlite3.Connection) -> bool:
    """Add the trigram index; False (phrases then scan every text) where SQLite lacks FTS5's trigram tokenizer."""
    conn.execute("SAVEPOINT trigrams")
    try:
        for statement in _statements(_TRIGRAMS):
            conn.execute(statement)
    except sqlite3.OperationalError as exc:
        log.info("side index file without a trigram index (%s): exact phrases scan every text", exc)
        conn.execute("ROLLBACK TO trigrams")
        conn.execute("RELEASE trigrams")
        return False
    conn.execute("RELEASE trigrams")
    return True


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
    keyword: BM25Index | None,
    definitions: DefinitionIndex,
    resolver: ReferenceResolver,
    exact: ExactIndex,
    locations: Mapping[str, tuple[str, str]],
    rows: Mapping[str, int] | None = None,
    last_row: int | None = None,
) -> None:
    """Every side index, built from the records at ``version``, into ``path`` (replaced atomically).

    ``rows`` (record id → store row) and ``last_row`` (the highest row at ``version``) let
    :func:`apply` update the file later; without them it is rebuilt whenever the records change. ``keyword``
    None: a keyword strategy that keeps its own index (``tantivy``); the file then holds no postings."""
    postings = keyword.postings() if keyword is not None else None
    texts = exact.texts() if keyword is not None else {}  # tantivy answers phrases itself
    ids = postings.ids if postings is not None else list(locations)
    n_docs = len(ids)
    meta = {
        "format": FORMAT,
        "version": version,
        "last_row": last_row if rows is not None else None,
        "keyword_strategy": keyword_strategy,
        "bm25": postings.settings if postings is not None else None,
        "stats": {"n_docs": n_docs, "avgdl": keyword.avgdl if keyword is not None else 0.0},
        "n_docs": n_docs,
        "live": n_docs,
        "built": n_docs,
        "changed": 0,
        "segments": 1,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.tmp-")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute(f"PRAGMA page_size = {_PAGE_SIZE}")
            conn.execute("PRAGMA journal_mode = OFF")  # a temporary file: the rename makes it appear whole
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute("BEGIN")
            for statement in _statements(_SCHEMA):
                conn.execute(statement)
            conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
            row_of = rows or {}
            conn.executemany(
                "INSERT INTO docs VALUES (?, ?, ?, ?, ?)",
                ((i, rid, *locations.get(rid, ("", "")), row_of.get(rid)) for i, rid in enumerate(ids)),
            )
            position = {rid: i for i, rid in enumerate(ids)}
            conn.executemany("INSERT INTO texts VALUES (?, ?)", ((position[r], t) for r, t in texts.items()))
            if postings is not None:
                bounds = postings.offsets
                docs, weights = postings.docs.astype("<i4"), postings.weights.astype("<f4")
                conn.executemany(
                    "INSERT INTO postings VALUES (?, 0, ?, ?)",
                    (
                        (term, docs[bounds[t] : bounds[t + 1]].tobytes(), weights[bounds[t] : bounds[t + 1]].tobytes())
                        for t, term in enumerate(postings.vocab)
                        if bounds[t + 1] > bounds[t]
                    ),
                )
            conn.executemany(
                "INSERT INTO definitions (key, term, definition, source, section_id, record_id)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                definitions.to_state(),
            )
            conn.executemany("INSERT INTO sections VALUES (?, ?, ?, ?)", _section_rows(resolver.to_state()))
            for statement in _statements(_INDEXES):
                conn.execute(statement)
            trigrams = _add_trigrams(conn)
            conn.execute("INSERT INTO meta VALUES ('trigrams', ?)", (json.dumps(trigrams),))
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
    #: Per new document: store row, record id, source, location, lower-cased text, analysed terms.
    rows: list[int]
    ids: list[str]
    sources: list[str]
    locations: list[str]
    texts: list[str]
    terms: list[list[str]]
    definitions: list[list[object]]
    sections: Mapping[str, Mapping[str, list[tuple[int, str]]]]


def _meta(conn: sqlite3.Connection) -> dict[str, Any]:
    return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}


def matches(meta: Mapping[str, Any], keyword_strategy: str, keyword: BM25Index | None) -> bool:
    """Whether a file with ``meta`` was written in this format for this keyword strategy and BM25 settings (of
    whatever records version; ``keyword`` None: without postings): one that was not is rebuilt, never read or
    updated."""
    return (
        meta.get("format") == FORMAT
        and meta.get("keyword_strategy") == keyword_strategy
        and meta.get("bm25") == (keyword.settings() if keyword is not None else None)
    )


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
        gone = _remove_rows(conn, delta.deleted_rows, bool(meta.get("trigrams")))
        first = int(meta["n_docs"])
        positions = list(range(first, first + len(delta.ids)))
        conn.executemany(
            "INSERT INTO docs VALUES (?, ?, ?, ?, ?)",
            zip(positions, delta.ids, delta.sources, delta.locations, delta.rows, strict=True),
        )
        conn.executemany("INSERT INTO texts VALUES (?, ?)", zip(positions, delta.texts, strict=True))
        if meta.get("trigrams") and positions:
            conn.execute("INSERT INTO texts_fts (rowid, text) SELECT pos, text FROM texts WHERE pos >= ?", (first,))
        segment = int(meta.get("segments", 1))
        conn.executemany(
            "INSERT INTO postings VALUES (?, ?, ?, ?)",
            (
                (term, segment, docs.astype("<i4").tobytes(), weights.astype("<f4").tobytes())
                for term, (docs, weights) in _delta_postings(conn, meta, delta, first).items()
            ),
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
            changed=int(meta.get("changed", 0)) + gone + len(positions),
            segments=segment + 1,
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


def _remove_rows(conn: sqlite3.Connection, rows: list[int], trigrams: bool) -> int:
    """Take the documents of store ``rows`` out of every table (their postings stay: their positions go into
    ``dead``); how many there were."""
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
        if trigrams:
            conn.execute(
                "INSERT INTO texts_fts (texts_fts, rowid, text)"
                f" SELECT 'delete', pos, text FROM texts WHERE pos IN ({at})",
                positions,
            )
        conn.execute(f"DELETE FROM texts WHERE pos IN ({at})", positions)
        conn.execute(f"DELETE FROM docs WHERE pos IN ({at})", positions)
        conn.executemany("INSERT OR IGNORE INTO dead VALUES (?)", ((p,) for p in positions))
        conn.execute(f"DELETE FROM definitions WHERE record_id IN ({named})", ids)
        conn.execute(f"DELETE FROM sections WHERE record_id IN ({named})", ids)
        gone += len(found)
    return gone


def _delta_postings(
    conn: sqlite3.Connection, meta: Mapping[str, Any], delta: Delta, first: int
) -> dict[str, tuple[IntArray, FloatArray]]:
    """The new documents' postings, weighted as the build weighted its own (:func:`bm25_weights`)."""
    terms = sorted({t for doc in delta.terms for t in doc})
    df: dict[str, int] = {}
    for start in range(0, len(terms), _BATCH):
        part = terms[start : start + _BATCH]
        marks = ",".join("?" * len(part))
        sql = f"SELECT term, sum(length(docs)) / 4 FROM postings WHERE term IN ({marks}) GROUP BY term"
        df.update((str(t), int(n)) for t, n in conn.execute(sql, part))
    settings, stats = meta.get("bm25") or {}, meta.get("stats") or {}
    return bm25_weights(
        delta.terms,
        first,
        df,
        k1=float(settings.get("k1", 0.9)),
        b=float(settings.get("b", 0.4)),
        n_docs=max(int(stats.get("n_docs", 0)), int(meta.get("live", 0)) + len(delta.ids)),
        avgdl=float(stats.get("avgdl", 1.0)),
    )


class SideIndexFile:
    """An opened side index file: a read-only connection that the lookups below share (one at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        self._postings: OrderedDict[str, tuple[IntArray, FloatArray] | None] = OrderedDict()
        self._postings_bytes = 0
        #: Caches of the tables read per key (:class:`_Table`), cleared with the postings when the file changes.
        self.tables: list[_Table[Any]] = []
        self._seen = -1
        self.meta: dict[str, Any] = {}
        self.n_docs = self.live = 0
        self._dead: IntArray = np.zeros(0, dtype=np.int32)
        try:
            # the first statement reads the schema: a killed writer's journal is rolled back before it
            _read_only(path, lambda: self._conn.execute(f"PRAGMA cache_size = -{_CACHE_KIB}"))
            with self._lock:
                self._follow()
        except BaseException:
            self._conn.close()  # e.g. a damaged file: the caller rebuilds it
            raise

    def _follow(self) -> None:
        """Re-read meta and the dead positions, and drop every cache, when another connection committed since
        (``PRAGMA data_version`` moves; it costs no read). Under the lock. Every query starts here, so a journal
        that a writer killed since left is rolled back here (:func:`roll_back`) before the query reads."""
        _read_only(self.path, self._follow_once)

    def _follow_once(self) -> None:
        seen = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        if seen == self._seen:
            return
        meta = _meta(self._conn)
        n_docs = int(meta.get("n_docs", 0))
        live = int(meta.get("live", n_docs))
        dead = [p for (p,) in self._conn.execute("SELECT pos FROM dead")] if live < n_docs else []
        self._seen, self.meta, self.n_docs, self.live = seen, meta, n_docs, live
        self._dead = np.asarray(dead, dtype=np.int32)
        self._postings.clear()
        self._postings_bytes = 0
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

    # -- BM25 (:class:`deckhand.retrieval.bm25.StoredPostings`) -------------------------------
    def postings(self, terms: list[str]) -> dict[str, tuple[IntArray, FloatArray]]:
        """The postings of ``terms`` that documents have: recently used ones from memory (up to
        :data:`_POSTINGS_CACHED` bytes, least recently used dropped first), the rest read in one query."""
        found: dict[str, tuple[IntArray, FloatArray]] = {}
        missing = []
        with self._lock:
            self._follow()
            for term in terms:
                if term not in self._postings:
                    missing.append(term)
                    continue
                self._postings.move_to_end(term)
                cached = self._postings[term]
                if cached is not None:
                    found[term] = cached
        for start in range(0, len(missing), _BATCH):
            part = missing[start : start + _BATCH]
            marks = ",".join("?" * len(part))
            sql = f"SELECT term, docs, weights FROM postings WHERE term IN ({marks}) ORDER BY term, segment"
            segments: dict[str, list[tuple[IntArray, FloatArray]]] = {}
            for term, docs, weights in self._rows(sql, tuple(part)):
                # read-only views of the fetched bytes (little-endian, as written): no copy
                segments.setdefault(str(term), []).append(
                    (
                        np.frombuffer(docs, dtype="<i4").astype(np.int32, copy=False),
                        np.frombuffer(weights, dtype="<f4").astype(np.float32, copy=False),
                    )
                )
            read: dict[str, tuple[IntArray, FloatArray] | None] = dict.fromkeys(part)
            for term, parts in segments.items():
                read[term] = self._live(parts)
            found.update((term, value) for term, value in read.items() if value is not None)
            with self._lock:
                for term, value in read.items():
                    self._keep(term, value)
        return found

    def _live(self, parts: list[tuple[IntArray, FloatArray]]) -> tuple[IntArray, FloatArray] | None:
        """A term's segments as one posting list, without the documents deleted since the build."""
        if len(parts) == 1:
            docs, weights = parts[0]
        else:
            docs, weights = np.concatenate([d for d, _ in parts]), np.concatenate([w for _, w in parts])
        if self._dead.size:
            keep = ~np.isin(docs, self._dead)
            docs, weights = docs[keep], weights[keep]
        return (docs, weights) if docs.size else None

    def _keep(self, term: str, value: tuple[IntArray, FloatArray] | None) -> None:
        """Remember ``term``'s postings (None: no document has it), within the byte budget (under the lock)."""
        size = 64 + (value[0].nbytes + value[1].nbytes if value is not None else 0)
        if term in self._postings or size > _POSTINGS_CACHED:
            return
        self._postings[term] = value
        self._postings_bytes += size
        while self._postings_bytes > _POSTINGS_CACHED:
            _, dropped = self._postings.popitem(last=False)
            self._postings_bytes -= 64 + (dropped[0].nbytes + dropped[1].nbytes if dropped is not None else 0)

    def ids(self, positions: list[int]) -> list[str]:
        found: dict[int, str] = {}
        for start in range(0, len(positions), _BATCH):
            part = positions[start : start + _BATCH]
            marks = ",".join("?" * len(part))
            found.update(self._rows(f"SELECT pos, id FROM docs WHERE pos IN ({marks})", tuple(part)))
        return [found.get(p, "") for p in positions]  # "": deleted by a commit between the scoring and this read

    # -- exact phrases (:class:`deckhand.retrieval.phrase_match.PhraseTexts`) -----------------
    def __len__(self) -> int:
        return self.live

    def __contains__(self, record_id: object) -> bool:
        return bool(self._rows("SELECT 1 FROM docs WHERE id = ?", (str(record_id),)))

    def present(self, record_ids: list[str]) -> set[str]:
        """All of ``record_ids``: the exact index asks only about ids its sections and definitions gave, and
        in a file those were written from the same records as ``docs`` (:func:`write`, one build), so every
        one has a text; asking the file would cost a look-up per id for a large section."""
        return set(record_ids)

    def containing(self, phrases: tuple[str, ...], limit: int) -> list[tuple[int, int, str]]:
        """Texts with any of ``phrases``, each checked in Python exactly as an in-memory text is (``phrase in
        text``): the candidates the trigram index gives when every phrase has a trigram and they are a small
        part of the texts, else every text (streamed: the texts are never all in memory)."""
        candidates = self._trigram_candidates(phrases)
        join = "SELECT t.pos, t.text, d.id FROM texts t JOIN docs d ON d.pos = t.pos"
        batches: list[tuple[str, tuple[int, ...]]]
        if candidates is None:
            batches = [(f"{join} ORDER BY t.pos", ())]
        else:
            batches = [
                (f"{join} WHERE t.pos IN ({','.join('?' * len(part))}) ORDER BY t.pos", tuple(part))
                for part in (candidates[i : i + _BATCH] for i in range(0, len(candidates), _BATCH))
            ]
        hits: list[tuple[int, int, str]] = []
        with self._lock:
            self._follow()
            for sql, args in batches:
                for pos, text, record_id in self._conn.execute(sql, args):
                    found = sum(1 for p in phrases if p in text)
                    if found:
                        hits.append((found, int(pos), str(record_id)))
        return hits

    def _trigram_candidates(self, phrases: tuple[str, ...]) -> list[int] | None:
        """Positions of the texts holding every trigram of one of ``phrases`` (a superset of those containing
        it), in order; None when a scan of every text is as good (no trigram index, a phrase too short for
        one, or candidates in more than a quarter of the texts)."""
        queries = [_trigram_query(p) for p in phrases]
        if not self.meta.get("trigrams") or not all(queries):
            return None
        found: set[int] = set()
        for query in queries:
            found.update(r for (r,) in self._rows("SELECT rowid FROM texts_fts WHERE texts_fts MATCH ?", (query,)))
            if len(found) * _SCAN_SHARE > self.live:
                return None
        return sorted(found)


def _trigram_query(phrase: str) -> str:
    """An FTS5 query for the rows holding every trigram of ``phrase`` (a superset of those containing it);
    empty when it is shorter than a trigram."""
    grams = dict.fromkeys(phrase[i : i + 3] for i in range(len(phrase) - 2))
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)


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
    path: Path, version: int, keyword: BM25Index | None, keyword_strategy: str
) -> tuple[SideIndexFile, DefinitionIndex, ReferenceResolver, ExactIndex, Mapping[str, tuple[str, str]]] | None:
    """The side indexes in ``path`` with ``keyword`` attached to its postings (None: a file without postings);
    None (nothing attached) when there is no file, it cannot be read, or it was built for other records, format,
    strategy or settings."""
    if not path.is_file():
        return None
    try:
        file = SideIndexFile(path)  # its first read rolls back a killed writer's journal (``_follow``)
    except (sqlite3.Error, ValueError) as exc:
        log.warning("ignoring unreadable side index file %s (%s); rebuilding it", path, exc)
        return None
    meta = file.meta
    current = meta.get("version") == version and matches(meta, keyword_strategy, keyword)
    if not current or (keyword is not None and not keyword.attach(file, dict(meta.get("bm25") or {}))):
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
    exact.attach(file)
    locations = Locations(
        file, "SELECT source, location FROM docs WHERE id = ?", "SELECT id FROM docs ORDER BY pos", _location
    )
    return file, definitions, resolver, exact, locations
