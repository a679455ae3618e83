"""A deckhand vector store in PostgreSQL with pgvector.

One table per collection holds the chunks (text, jsonb metadata, ``vector(dim)``) with
an HNSW index (or none: FLAT is an exact scan), a btree index on ``source`` and a
generated ``tsvector`` column with a GIN index for native keyword search. The collection
spec and the ingestion manifest live in two shared tables of the same database, so a
source's chunks and its manifest entry change in one transaction.

Distances become deckhand scores (:mod:`deckhand.similarity`): ``<=>`` is ``1 - cos``,
``<->`` the L2 distance and ``<#>`` the *negative* inner product.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import time
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import psycopg
from deckhand.api import (
    Algorithm,
    CollectionSpec,
    FileState,
    Filter,
    Metric,
    Record,
    SearchHit,
    ServerStore,
    StoreAuthenticationError,
    StoreCapability,
    StoreConnectionError,
    StoreError,
    Vector,
    raw_to_score,
)
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from deckhand_postgres.deadline import Deadline, deadline
from deckhand_postgres.filters import where_sql
from deckhand_postgres.options import PostgresOptions
from deckhand_postgres.redact import redact_url, scrub
from deckhand_postgres.schema import DISTANCE_OP, HNSW_MAX_DIMENSION, TableNames, data_ddl, hnsw_ddl, meta_ddl

log = logging.getLogger(__name__)

_COLUMNS = "id, source, chunk_index, content, metadata, embedding"
_COPY_TYPES = ["text", "text", "int4", "text", "jsonb", "vector"]


class PostgresStore(ServerStore[PostgresOptions]):
    """One collection in PostgreSQL + pgvector, reached through a connection pool.

    Building it connects (within ``connect_timeout`` seconds) and makes sure the
    ``vector`` extension exists; an unreachable server raises
    :class:`~deckhand.errors.StoreConnectionError` naming the redacted URL. Each call takes
    its own pooled connection, so one store serves every thread, and has a deadline
    (``timeout``, a write ``write_timeout``; :mod:`deckhand_postgres.deadline`): a server
    that answers nothing fails the call then, as an outage.
    """

    #: What it supports beyond every store's methods, declared once (deckhand plugins reads it from here).
    capabilities: ClassVar[frozenset[StoreCapability]] = frozenset(
        {
            StoreCapability.PERSISTENT,
            StoreCapability.KEYWORD_SEARCH,
            StoreCapability.CONCURRENT_PROCESSES,
            StoreCapability.FILTERS,
        }
    )

    provider = "postgres"
    url_example = "postgresql://host/db"

    def _default_options(self) -> PostgresOptions:
        return PostgresOptions()

    def _connect(self, url: str) -> None:
        self.names = TableNames.of(self.index_name, self.collection)
        self._url = url
        self.safe_url = redact_url(url)
        self._ts_config = self.options.text_search_config
        self._ensure_extension()
        self._pool = self._open_pool()

    @classmethod
    def _parse_options(cls, options: dict[str, Any]) -> PostgresOptions:
        return PostgresOptions.parse(options)

    # -- connection -------------------------------------------------------------------
    def _connect_error(self, exc: BaseException) -> StoreError:
        detail = scrub(" ".join(str(exc).split()), self._url) or type(exc).__name__
        if _refused_credentials(exc):
            return StoreAuthenticationError(
                f"PostgreSQL at {self.safe_url} refused the login: {detail} -- check the user name, password and "
                "database in connection_string (and the server's pg_hba.conf)"
            )
        return StoreConnectionError(
            f"cannot connect to PostgreSQL at {self.safe_url}: {detail} -- check that the server is running and "
            f"the connection_string (host, port, user, password, database) is right"
        )

    def _ensure_extension(self) -> None:
        """Connect once, quickly, and create the pgvector extension if it is missing."""
        try:
            conn = psycopg.connect(
                self._url, connect_timeout=self.options.connect_timeout, autocommit=True, application_name="deckhand"
            )
        except psycopg.Error as exc:
            raise self._connect_error(exc) from None
        with conn, deadline(conn, self.options.timeout) as watch:
            try:
                row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            except psycopg.Error as exc:
                if watch.expired:
                    raise self._no_answer("connecting", self.options.timeout) from None
                raise self._connect_error(exc) from None
            if row is not None:
                return
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("deckhand:create-extension"),))
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                detail = scrub(" ".join(str(exc).split()), self._url)
                raise StoreError(
                    f"the pgvector extension is not installed in the database at {self.safe_url} and could not be "
                    f"created ({detail}) -- install pgvector on the server and run CREATE EXTENSION vector "
                    "as a superuser"
                ) from None
            log.info("created the pgvector extension in %s", self.safe_url)

    def _no_answer(self, action: str, seconds: float) -> StoreConnectionError:
        """The error of a call that the server did not answer within its deadline (an outage)."""
        return StoreConnectionError(
            f"{action}: PostgreSQL at {self.safe_url} did not answer within {seconds:g}s -- check that the server is "
            "running and reachable from here (database.options.timeout sets this deadline)"
        )

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)
        opts = self.options
        with deadline(conn, opts.timeout):
            for name, value in (
                ("hnsw.ef_search", str(opts.ef_search)),
                ("hnsw.iterative_scan", opts.iterative_scan),
                ("hnsw.max_scan_tuples", str(opts.max_scan_tuples)),
                ("statement_timeout", f"{round(opts.timeout * 1000)}ms"),
            ):
                conn.execute("SELECT set_config(%s, %s, false)", (name, value))

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's check of a connection before handing it out, within the deadline of a call."""
        with deadline(conn, self.options.timeout):
            ConnectionPool.check_connection(conn)

    def _open_pool(self) -> ConnectionPool:
        opts = self.options
        pool: ConnectionPool = ConnectionPool(
            self._url,
            min_size=min(opts.pool_min_size, opts.pool_max_size),
            max_size=opts.pool_max_size,
            kwargs={
                "autocommit": True,
                "connect_timeout": opts.connect_timeout,
                "application_name": "deckhand",
                # A peer cut off by a partition: keepalives notice an idle connection, and data left
                # unacknowledged for the deadline closes a busy one (a stopped server needs the Deadline).
                "keepalives": 1,
                "keepalives_idle": 10,
                "keepalives_interval": 5,
                "keepalives_count": 3,
                "tcp_user_timeout": round(opts.timeout * 1000),
            },
            configure=self._configure,
            check=self._check,
            timeout=opts.pool_timeout,
            name=f"deckhand-{self.collection}",
            open=False,
        )
        try:
            pool.open(wait=opts.pool_min_size > 0, timeout=opts.connect_timeout + 5)
        except (PoolTimeout, psycopg.Error) as exc:
            pool.close(timeout=0)
            raise self._connect_error(exc) from None
        log.info("postgres store %r connected to %s (table %s)", self.collection, self.safe_url, self.names.data)
        return pool

    @contextlib.contextmanager
    def _conn(self, action: str, *, write: bool = False) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for one call within its deadline (``write``: ``write_timeout``, else ``timeout``).

        Driver errors become deckhand errors with the password masked; a call the server did not
        answer in time is an outage (:class:`StoreConnectionError`).
        """
        opts = self.options
        watch = Deadline(opts.write_timeout if write else opts.timeout)
        try:
            with self._pool.connection(timeout=min(opts.pool_timeout, watch.seconds)) as conn:
                watch.arm(conn)
                try:
                    yield conn
                finally:
                    watch.disarm()
        except PoolTimeout as exc:
            raise StoreConnectionError(
                f"{action}: no connection to PostgreSQL at {self.safe_url} within "
                f"{min(opts.pool_timeout, watch.seconds):g}s ({scrub(str(exc), self._url)}) -- is the server running?"
            ) from None
        except psycopg.Error as exc:
            if watch.expired:
                raise self._no_answer(action, watch.seconds) from None
            raise self._driver_error(action, exc) from None

    def _driver_error(self, action: str, exc: psycopg.Error) -> StoreError:
        """A driver error as a deckhand error, the password masked."""
        detail = scrub(" ".join(str(exc).split()), self._url)
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return StoreAuthenticationError(
                f"{action}: PostgreSQL at {self.safe_url} denied it: {detail} -- grant the user the privileges on "
                "the database and schema (CREATE, SELECT, INSERT, UPDATE, DELETE)"
            )
        if isinstance(exc, psycopg.errors.QueryCanceled):  # statement_timeout: the server answers, slowly
            return StoreError(
                f"{action}: PostgreSQL at {self.safe_url} ended it at the deadline ({detail}) -- narrow it, or raise "
                "database.options.timeout (write_timeout for writes)"
            )
        if isinstance(exc, psycopg.OperationalError):
            if _refused_credentials(exc):
                return self._connect_error(exc)
            return StoreConnectionError(f"{action}: lost the connection to PostgreSQL at {self.safe_url}: {detail}")
        return StoreError(f"{action} failed on PostgreSQL at {self.safe_url}: {detail}")

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()

    # -- collection -------------------------------------------------------------------
    def open(self, spec: CollectionSpec) -> CollectionSpec | None:
        """Create the collection's tables if missing; return the spec stored with it before, if any."""
        if spec.algorithm is Algorithm.HNSW and spec.dimension > HNSW_MAX_DIMENSION:
            raise StoreError(
                f"pgvector's HNSW index takes at most {HNSW_MAX_DIMENSION} dimensions, the embedder gives "
                f"{spec.dimension}: set vector_algorithm: FLAT for collection {self.collection!r}"
            )
        names = self.names
        with self._conn(f"opening collection {self.collection!r}") as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("deckhand:ddl:" + self.index_name),))
            for statement in meta_ddl(names):
                conn.execute(statement)
            row = conn.execute(
                sql.SQL(
                    "SELECT dimension, embedding_model, metric, algorithm, text_search_config FROM {} "
                    "WHERE collection = %s"
                ).format(sql.Identifier(names.collections)),
                (self.collection,),
            ).fetchone()
            if row is not None:
                previous = CollectionSpec(self.collection, int(row[0]), row[1], Metric(row[2]), Algorithm(row[3]))
                self._spec = previous
                self._ts_config = row[4]  # the generated tsvector column was built with it
                return previous
            opts = self.options
            # A table without a spec row is the orphan of a half-dropped collection.
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(names.ident()))
            for statement in data_ddl(
                names, spec, m=opts.m, ef_construction=opts.ef_construction, ts_config=opts.text_search_config
            ):
                conn.execute(statement)
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (collection, data_table, dimension, embedding_model, metric, algorithm,"
                    " text_search_config) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                ).format(sql.Identifier(names.collections)),
                (
                    self.collection,
                    names.data,
                    spec.dimension,
                    spec.embedding_model,
                    spec.metric.value,
                    spec.algorithm.value,
                    opts.text_search_config,
                ),
            )
        self._spec = CollectionSpec(self.collection, spec.dimension, spec.embedding_model, spec.metric, spec.algorithm)
        self._ts_config = opts.text_search_config
        log.info("created collection %r (%s) in %s", self.collection, names.data, self.safe_url)
        return None

    def drop(self) -> None:
        """Delete the collection's table, its spec and its manifest."""
        names = self.names
        with self._conn(f"dropping collection {self.collection!r}") as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("deckhand:ddl:" + self.index_name),))
            for statement in meta_ddl(names):
                conn.execute(statement)
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(names.ident()))
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE collection = %s").format(sql.Identifier(names.collections)),
                (self.collection,),
            )
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE collection = %s").format(sql.Identifier(names.manifest)),
                (self.collection,),
            )
        self._spec = None

    # -- writes -----------------------------------------------------------------------
    def upsert(self, records: Sequence[Record]) -> None:
        """Insert or overwrite records by id (delete + binary COPY in one transaction)."""
        rows = self._rows(records)
        if not rows:
            return
        with self._conn(f"writing {len(rows)} records to {self.collection!r}", write=True) as conn, conn.transaction():
            self._write_lock(conn)
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(self.names.ident()), ([r[0] for r in rows],)
            )
            self._copy(conn, rows)

    def replace_source(self, source: str, records: Sequence[Record], state: FileState) -> None:
        """Swap all records of ``source`` and its manifest entry in one transaction."""
        rows = self._rows(records)  # validates every vector before anything is written
        ids = [r[0] for r in rows]
        with self._conn(f"replacing source {source!r} in {self.collection!r}", write=True) as conn, conn.transaction():
            self._write_lock(conn)
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE source = %s OR id = ANY(%s)").format(self.names.ident()), (source, ids)
            )
            self._copy(conn, rows)
            self._put_state(conn, state)

    def delete_source(self, source: str) -> None:
        """Remove the records of ``source`` and its manifest entry (in one transaction)."""
        with self._conn(f"deleting source {source!r} from {self.collection!r}", write=True) as conn, conn.transaction():
            self._write_lock(conn)
            conn.execute(sql.SQL("DELETE FROM {} WHERE source = %s").format(self.names.ident()), (source,))
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE collection = %s AND source = %s").format(
                    sql.Identifier(self.names.manifest)
                ),
                (self.collection, source),
            )

    def set_file_state(self, state: FileState) -> None:
        """Record one manifest entry without touching records."""
        with self._conn(f"updating the manifest of {self.collection!r}") as conn:
            self._put_state(conn, state)

    def _write_lock(self, conn: psycopg.Connection[Any]) -> None:
        # A write (its turn included) may take write_timeout; the server ends its statements no sooner.
        conn.execute(
            "SELECT set_config('statement_timeout', %s, true)", (f"{round(self.options.write_timeout * 1000)}ms",)
        )
        # Writers of one collection take turns, so concurrent upserts of one id cannot collide.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key("deckhand:write:" + self.names.data),))

    def _put_state(self, conn: psycopg.Connection[Any], state: FileState) -> None:
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (collection, source, mtime, size, sha256, model, chunk_count) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (collection, source) DO UPDATE SET "
                "mtime = EXCLUDED.mtime, size = EXCLUDED.size, sha256 = EXCLUDED.sha256, model = EXCLUDED.model, "
                "chunk_count = EXCLUDED.chunk_count, updated_at = now()"
            ).format(sql.Identifier(self.names.manifest)),
            (self.collection, state.source, state.mtime, state.size, state.sha256, state.model, state.chunk_count),
        )

    def _rows(self, records: Sequence[Record]) -> list[tuple[Any, ...]]:
        """COPY rows for ``records`` (last one wins per id); raises before any write on a bad vector."""
        dim = self.spec.dimension
        by_id: dict[str, tuple[Any, ...]] = {}
        for record in records:
            vector = self._record_vector(record, dim, finite_for="pgvector")
            by_id.pop(record.id, None)
            by_id[record.id] = (
                record.id,
                record.source,
                int(record.chunk_index),
                record.content.replace("\x00", ""),  # PostgreSQL text cannot hold NUL
                Jsonb(record.metadata or {}, dumps=_dumps),
                vector,
            )
        return list(by_id.values())

    def _copy(self, conn: psycopg.Connection[Any], rows: list[tuple[Any, ...]]) -> None:
        """Binary COPY of ``rows``; a bulk load into an HNSW table rebuilds the index afterwards.

        Inserting into an HNSW graph row by row costs far more than building it once, so
        when a write is large (``bulk_index_threshold``) and at least doubles the table,
        the index is dropped, the rows are copied and the index is built again -- all in
        the caller's transaction, so readers see the old table until it commits.
        """
        if not rows:
            return
        spec = self.spec
        opts = self.options
        rebuild = False
        if spec.algorithm is Algorithm.HNSW and opts.bulk_index_threshold and len(rows) >= opts.bulk_index_threshold:
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self.names.ident())).fetchone()
            rebuild = len(rows) >= (int(row[0]) if row else 0)
        if rebuild:
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(self.names.ident("_hnsw")))
        with (
            conn.cursor() as cur,
            cur.copy(
                sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT BINARY)").format(self.names.ident(), sql.SQL(_COLUMNS))
            ) as copy,
        ):
            copy.set_types(_COPY_TYPES)
            for row_values in rows:
                copy.write_row(row_values)
        if rebuild:
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (opts.build_memory,))
            conn.execute(hnsw_ddl(self.names, spec.metric, m=opts.m, ef_construction=opts.ef_construction))
            log.info("rebuilt the HNSW index of %s after loading %d records", self.names.data, len(rows))

    # -- reads ------------------------------------------------------------------------
    def search(
        self,
        vector: Vector,
        k: int,
        *,
        min_score: float | None = None,
        sources: Sequence[str] | None = None,
        where: Filter | None = None,
    ) -> list[SearchHit]:
        """The ``k`` nearest records by the collection's metric, best first, as deckhand scores.

        ``sources`` and ``where`` (:mod:`deckhand_postgres.filters`) are SQL conditions of the
        query; HNSW keeps returning ``k`` hits thanks to pgvector's iterative index scans.

        ``min_score`` is applied after ranking: a score is monotone in the distance, so
        dropping the top k's low scorers equals filtering before the top k.
        """
        query = self._query_vector(vector)
        spec = self.spec
        if k <= 0 or (sources is not None and len(sources) == 0):
            return []
        op = sql.SQL(DISTANCE_OP[spec.metric])
        params: dict[str, Any] = {"q": query, "k": k}
        clause = _where(sources, where, params)
        statement = sql.SQL(
            "SELECT {cols}, embedding {op} %(q)s AS distance FROM {table} WHERE {clause} ORDER BY embedding {op} %(q)s "
            "LIMIT %(k)s"
        ).format(cols=sql.SQL(_COLUMNS), op=op, table=self.names.ident(), clause=clause)
        with self._conn(f"searching {self.collection!r}") as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(statement, params).fetchall()
        if not rows:
            return []
        distances = np.array([_float(row[6]) for row in rows], dtype=np.float64)
        scores = raw_to_score(spec.metric, _raw(spec.metric, distances))
        hits = []
        for row, score in zip(rows, scores, strict=True):
            if min_score is not None and score < min_score:
                continue
            hits.append(SearchHit(_record(row), float(score)))
        return hits

    def keyword_search(
        self, query: str, k: int, *, sources: Sequence[str] | None = None, where: Filter | None = None
    ) -> list[SearchHit]:
        """Full-text search with PostgreSQL's ranking, best first.

        Plain words match any of them (OR of the stemmed terms); a query with quotes,
        ``or`` or a leading ``-`` is read as web-search syntax (``websearch_to_tsquery``).
        The score is ``r / (1 + r)`` with ``r = ts_rank_cd(...)`` (normalisation 32):
        in [0, 1), higher is better, comparable within one keyword search only.
        """
        self.spec  # noqa: B018 - raises when the collection is not open
        if k <= 0 or not query.strip() or (sources is not None and len(sources) == 0):
            return []
        ts = sql.Literal(self._ts_config)
        if _web_syntax(query):
            tsquery = sql.SQL("websearch_to_tsquery({ts}::regconfig, %(q)s)").format(ts=ts)
        else:
            tsquery = sql.SQL(
                "NULLIF(array_to_string(ARRAY(SELECT quote_literal(lexeme) FROM "
                "unnest(tsvector_to_array(to_tsvector({ts}::regconfig, %(q)s))) AS lexeme), ' | '), '')::tsquery"
            ).format(ts=ts)
        params: dict[str, Any] = {"q": query, "k": k}
        clause = _where(sources, where, params)
        statement = sql.SQL(
            "SELECT {cols}, ts_rank_cd(tsv, q.query, 32) AS rank FROM {table}, (SELECT {tsquery} AS query) AS q "
            "WHERE tsv @@ q.query AND {clause} ORDER BY rank DESC, id LIMIT %(k)s"
        ).format(cols=sql.SQL(_COLUMNS), table=self.names.ident(), tsquery=tsquery, clause=clause)
        with self._conn(f"keyword search in {self.collection!r}") as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(statement, params).fetchall()
        return [SearchHit(_record(row), min(max(_float(row[6]), 0.0), 1.0)) for row in rows]

    def get(self, ids: Sequence[str]) -> list[Record]:
        """Records by id, in the order asked; unknown ids are left out."""
        self.spec  # noqa: B018 - raises when the collection is not open
        if not ids:
            return []
        with self._conn(f"reading records of {self.collection!r}") as conn, conn.cursor(binary=True) as cur:
            rows = cur.execute(
                sql.SQL("SELECT {} FROM {} WHERE id = ANY(%s)").format(sql.SQL(_COLUMNS), self.names.ident()),
                (list(ids),),
            ).fetchall()
        found = {row[0]: _record(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def count(self) -> int:
        self.spec  # noqa: B018
        with self._conn(f"counting {self.collection!r}") as conn:
            row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self.names.ident())).fetchone()
        return int(row[0]) if row else 0

    def manifest(self) -> dict[str, FileState]:
        """The ingestion manifest of this collection, keyed by source."""
        with self._conn(f"reading the manifest of {self.collection!r}") as conn:
            table = sql.Identifier(self.names.manifest)
            exists = conn.execute("SELECT to_regclass(%s)", (table.as_string(conn),)).fetchone()
            if exists is None or exists[0] is None:  # nothing was ever opened under this index_name
                return {}
            rows = conn.execute(
                sql.SQL("SELECT source, mtime, size, sha256, model, chunk_count FROM {} WHERE collection = %s").format(
                    sql.Identifier(self.names.manifest)
                ),
                (self.collection,),
            ).fetchall()
        return {r[0]: FileState(r[0], float(r[1]), int(r[2]), r[3], r[4], int(r[5])) for r in rows}

    def iter_records(self, batch_size: int = 1000) -> Iterator[Record]:
        """Every record, in id order, fetched ``batch_size`` at a time (keyset pagination)."""
        self.spec  # noqa: B018
        last: str | None = None
        batch_size = max(1, batch_size)
        first = sql.SQL("SELECT {} FROM {} ORDER BY id LIMIT %s").format(sql.SQL(_COLUMNS), self.names.ident())
        after = sql.SQL("SELECT {} FROM {} WHERE id > %s ORDER BY id LIMIT %s").format(
            sql.SQL(_COLUMNS), self.names.ident()
        )
        while True:
            with self._conn(f"reading records of {self.collection!r}") as conn, conn.cursor(binary=True) as cur:
                if last is None:
                    rows = cur.execute(first, (batch_size,)).fetchall()
                else:
                    rows = cur.execute(after, (last, batch_size)).fetchall()
            for row in rows:
                yield _record(row)
            if len(rows) < batch_size:
                return
            last = rows[-1][0]

    def wait_until_reachable(self, timeout: float = 30.0) -> None:
        """Block until a pooled connection works again (after a server restart), or raise StoreConnectionError."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self._conn("checking the connection") as conn:
                    conn.execute("SELECT 1")
                return
            except StoreConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def _lock_key(text: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``text``."""
    value = zlib.crc32(text.encode()) | (zlib.adler32(text.encode()) << 32)
    return value - (1 << 64) if value >= 1 << 63 else value


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=str, ensure_ascii=False)


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def _raw(metric: Metric, distance: np.ndarray) -> np.ndarray:
    """pgvector distance -> the metric's raw value in :mod:`deckhand.similarity` terms."""
    if metric is Metric.COSINE:
        cos = 1.0 - distance
        return np.where(np.isnan(cos), 0.0, cos)  # zero vectors: pgvector gives NaN, the reference 0
    if metric is Metric.IP:
        return -distance  # <#> is the negative inner product
    return distance


def _record(row: Sequence[Any]) -> Record:
    embedding = row[5]
    vector = np.array(embedding.to_numpy() if hasattr(embedding, "to_numpy") else embedding, dtype=np.float32)
    metadata = row[4] if isinstance(row[4], dict) else json.loads(row[4] or "{}")
    return Record(row[0], row[1], int(row[2]), row[3], vector, metadata)


def _web_syntax(query: str) -> bool:
    lowered = f" {query.lower()} "
    return '"' in query or " or " in lowered or " -" in lowered


#: SQLSTATE classes of a refused login: 28 (invalid authorization: wrong password, no pg_hba.conf entry,
#: unknown role) and 3D000 (the database named in the URL does not exist).
_LOGIN_REFUSED = ("28", "3D000")
#: What libpq says for those when the error carries no SQLSTATE (connection errors do not).
_REFUSAL_MESSAGES = ("authentication failed", "no pg_hba.conf entry")
_MISSING = re.compile(r'\b(?:role|database) "[^"]*" does not exist')


def _refused_credentials(exc: BaseException) -> bool:
    """Whether a connection error is the server refusing this login (a configuration error), not an outage."""
    state = getattr(exc, "sqlstate", None)
    if state:
        return str(state).startswith(_LOGIN_REFUSED)
    text = str(exc)
    return any(marker in text for marker in _REFUSAL_MESSAGES) or _MISSING.search(text) is not None


def _where(sources: Sequence[str] | None, where: Filter | None, params: dict[str, Any]) -> sql.Composable:
    """The query's conditions on sources and metadata (``TRUE`` when none), adding their parameters."""
    parts: list[sql.Composable] = []
    if sources is not None:
        parts.append(sql.SQL("source = ANY(%(sources)s)"))
        params["sources"] = list(sources)
    if where:
        clause, values = where_sql(where)
        parts.append(clause)
        params.update(values)
    return sql.SQL(" AND ").join(parts) if parts else sql.SQL("TRUE")
