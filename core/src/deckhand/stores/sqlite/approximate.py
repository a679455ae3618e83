"""The sqlite store's approximate index as one store object uses it: which recorded snapshot a search goes
through, that snapshot's exactly rescored answers, and bringing it up to date after an ingest.

The index itself (its files, building, opening) is :mod:`deckhand.stores.sqlite.ann`; this module holds what
the store does with it, inside the store's transactions, so the store's front class only delegates.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np

import deckhand.stores.sqlite.ann as sqlite_ann
import deckhand.stores.sqlite.flat as sqlite_flat
from deckhand.stores.brute_force import top_k
from deckhand.stores.sqlite.ann import AnnCache, AnnView
from deckhand.stores.sqlite.matrix import IntArray
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.stores.sqlite.rows import Collection
from deckhand.types import Metric, Vector

#: A transaction of the store: the connection and the collection (None in a read when it does not exist).
ReadTransaction = Callable[[], contextlib.AbstractContextManager[tuple[sqlite3.Connection, Collection | None]]]
WriteTransaction = Callable[[], contextlib.AbstractContextManager[tuple[sqlite3.Connection, Collection]]]

#: The largest filtered subset ranked exactly (from the graph's stored vectors) rather than through the graph
#: (the candidates asked of the graph beyond ``k`` are ``SQLiteOptions.shortlist``).
_ANN_EXACT_SUBSET = 20_000


class ApproximateIndex:
    """One store object's view of its collection's approximate index (used under the store's lock)."""

    def __init__(self, path: Path, options: SQLiteOptions) -> None:
        self.path, self.options = path, options
        self._cache = AnnCache()
        #: Rows of the approximate index deleted since it was built, per (file, generation).
        self._dead: tuple[tuple[str, int], IntArray] | None = None

    def close(self) -> None:
        """Let go of the opened snapshot (the next search opens the recorded one again)."""
        self._cache.close()

    def view(self, conn: sqlite3.Connection, found: Collection | None) -> AnnView | None:
        """The collection's recorded approximate index, opened, if searches should use it."""
        if found is None or self.options.search == "exact":
            return None
        state = sqlite_ann.read_state(conn, found.id)
        if state is None or state.generation < found.log_floor:
            # Never built, or so old that the deletion log no longer covers it: exact until the next ingest.
            return None
        return self._cache.get(self.path, state, self.options, found.spec.metric)

    def note(self, conn: sqlite3.Connection, found: Collection | None, *, building: bool) -> str | None:
        """What searches should say of the index now: that they are exact because the graph is not built yet
        (``building``: this process is building it), or None."""
        if found is None or self.options.search == "exact" or not self.options.wants_ann(found.size):
            return None
        state = sqlite_ann.read_state(conn, found.id)
        if state is not None and state.precision != sqlite_flat.LABEL and state.generation >= found.log_floor:
            return None
        if building:
            return f"searches are exact (every vector compared) while the search graph of {found.size:,} vectors builds"
        return (
            f"searches are exact (every vector compared) until the search graph of {found.size:,} vectors is built "
            "(after an ingest reports; one interrupted is finished by the next `deckhand ingest`)"
        )

    def _dead_rows(self, conn: sqlite3.Connection, found: Collection, view: AnnView) -> IntArray:
        """Sorted rows of the approximate index deleted since it was built (remembered per generation)."""
        key = (view.state.file, found.generation)
        if self._dead is not None and self._dead[0] == key:
            return self._dead[1]
        rows = _deleted_rows(
            conn,
            "SELECT row FROM deleted WHERE collection = ? AND generation > ? AND row <= ?",
            (found.id, view.state.generation, view.state.last_row),
        )
        self._dead = (key, rows)
        return rows

    def ranked(
        self,
        conn: sqlite3.Connection,
        found: Collection,
        view: AnnView,
        query: Vector,
        metric: Metric,
        k: int,
        min_score: float | None,
        allowed: IntArray | None,
    ) -> list[tuple[float, int, Vector]]:
        """The best ``k`` rows of the approximate index's snapshot, with exact scores and float32 vectors."""
        dead = self._dead_rows(conn, found, view)
        wanted = k + self.options.shortlist(view.state.precision)
        if allowed is None:
            candidates = view.candidates(query, wanted + min(int(dead.size), 4 * wanted))
            if dead.size:
                candidates = candidates[~np.isin(candidates, dead)]
        else:
            subset = allowed[allowed <= view.state.last_row]
            if dead.size:
                subset = np.setdiff1d(subset, dead, assume_unique=True)
            if subset.size == 0:
                return []
            share = subset.size / max(1, view.state.size)
            candidates = np.zeros(0, dtype=np.int64)
            if subset.size > _ANN_EXACT_SUBSET:
                candidates = view.candidates(query, int(np.ceil(2 * wanted / share)))
                candidates = candidates[np.isin(candidates, subset)]
            if candidates.size < min(wanted, subset.size):
                # A selective filter: rank its rows exactly from the matrix beside the graph.
                candidates = subset
        if candidates.size == 0:
            return []
        rows, vectors = view.vectors(np.unique(candidates))
        squares = np.einsum("ij,ij->i", vectors, vectors)
        order, scores = top_k(vectors, np.sqrt(squares), squares, np.ones(rows.size, bool), query, metric, k, min_score)
        return [(score, int(rows[i]), vectors[i]) for i, score in zip(order.tolist(), scores.tolist(), strict=True)]

    def maintain(
        self,
        read: ReadTransaction,
        write: WriteTransaction,
        threads: int | None = None,
        *,
        background: Callable[[], None] | None = None,
    ) -> str | None:
        """Bring the index up to date after writes (:meth:`SQLiteStore.maintain`): built in a ``read`` snapshot,
        recorded in a ``write`` that leaves the records' version alone; returns what it did, or None.

        With ``background``, a graph of ``ann_background_rows`` rows or more is not built here: when nothing
        searchable is recorded, the matrix is written and recorded as a flat snapshot (searched exactly), then
        ``background()`` is called to build the graph (calling this again without it) while the caller reports.
        """
        with read() as (conn, found):
            if found is None:
                return None
            state = sqlite_ann.read_state(conn, found.id)
            if state is not None and not sqlite_ann.readable(self.path, state):
                state = None  # deleted or damaged: build it again
            changed = 0
            if state is not None:
                changed = int(
                    conn.execute(
                        "SELECT COUNT(*) FROM deleted WHERE collection = ? AND generation > ?",
                        (found.id, state.generation),
                    ).fetchone()[0]
                )
            settings = self.options.for_metric(found.spec.metric)
            if not sqlite_ann.needs_refresh(
                state,
                log_floor=found.log_floor,
                next_row=found.next_row,
                changed=changed,
                settings=settings,
                size=found.size,
            ):
                return None
            deferred = (
                background is not None
                and self.options.wants_ann(found.size)
                and settings.ann_index == "hnsw"
                and found.size >= settings.ann_background_rows
            )
            if deferred:
                usable = state if state is not None and state.generation >= found.log_floor else None
                built = sqlite_ann.write_flat(conn, self.path, found) if usable is None else None
                if usable is None and built is None:
                    return None  # another process is building it
            elif not self.options.wants_ann(found.size):
                built = None
            else:
                usable = state if state is not None and state.generation >= found.log_floor else None
                deleted = np.zeros(0, dtype=np.int64)
                if usable is not None:
                    deleted = _deleted_rows(
                        conn,
                        "SELECT row FROM deleted WHERE collection = ? AND generation > ?",
                        (found.id, usable.generation),
                    )
                built = sqlite_ann.build(
                    conn, self.path, found, settings, usable, deleted, threads or (os.cpu_count() or 1)
                )
                if built is None:
                    return None  # another process is building it
        if deferred:
            if built is not None:
                self._record(write, found, built)
            assert background is not None
            background()
            return (
                f"searchable now by exact search; the search graph of {found.size:,} vectors is building in the "
                "background (an interrupted build is finished by the next `deckhand ingest`)"
            )
        self._record(write, found, built)
        if built is None:
            return "approximate index removed (exact search)"
        return f"approximate index: {built[0].size:,} vectors ({built[0].precision})"

    def _record(
        self, write: WriteTransaction, found: Collection, built: tuple[sqlite_ann.AnnState, Path] | None
    ) -> None:
        """Record ``built`` (None: no index) unless the collection went away or a newer one was recorded meanwhile,
        then delete the files no longer recorded."""
        with write() as (conn, current):
            recorded = sqlite_ann.read_state(conn, current.id)
            if built is None:
                sqlite_ann.forget(conn, current.id)
                keep = None
            elif current.id != found.id or (recorded is not None and recorded.generation > built[0].generation):
                keep = recorded.file if recorded is not None else None  # dropped, or a newer one was recorded
            else:
                sqlite_ann.record(conn, current.id, built[0])
                keep = built[0].file
        sqlite_ann.remove_unrecorded(self.path, found.id, keep)
        self._cache.close()


def _deleted_rows(conn: sqlite3.Connection, sql: str, params: tuple[int, ...]) -> IntArray:
    """The sorted distinct rows a query of the deletion log returns."""
    return np.unique(np.asarray([r for (r,) in conn.execute(sql, params)], dtype=np.int64))
