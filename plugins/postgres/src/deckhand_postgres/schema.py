"""Table names and DDL of the PostgreSQL store.

Per ``index_name`` there are two shared tables, ``<index_name>_collections`` (the spec
each collection was created with) and ``<index_name>_manifest`` (one FileState per
source per collection), plus one data table per collection, ``<index_name>_c_<collection>``.
Every identifier is quoted with :mod:`psycopg.sql`, so any name is safe; names longer
than PostgreSQL's 63-byte limit are shortened with a hash so they stay unique.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from deckhand.api import Algorithm, CollectionSpec, Metric
from psycopg import sql

#: Longest table name we generate; leaves room for the ``_hnsw``/``_tsv``/``_src`` index suffixes.
_MAX_TABLE = 54

#: pgvector operator class and distance operator per metric. ``<#>`` is the NEGATIVE inner product.
OPCLASS = {Metric.COSINE: "vector_cosine_ops", Metric.L2: "vector_l2_ops", Metric.IP: "vector_ip_ops"}
DISTANCE_OP = {Metric.COSINE: "<=>", Metric.L2: "<->", Metric.IP: "<#>"}

#: pgvector's HNSW indexes the ``vector`` type up to this many dimensions.
HNSW_MAX_DIMENSION = 2000


def _fit(name: str) -> str:
    if len(name.encode()) <= _MAX_TABLE:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return name.encode()[: _MAX_TABLE - 11].decode(errors="ignore") + "_" + digest


@dataclass(frozen=True)
class TableNames:
    """Every relation name one collection uses."""

    collections: str
    manifest: str
    data: str

    @classmethod
    def of(cls, index_name: str, collection: str) -> TableNames:
        return cls(
            collections=_fit(f"{index_name}_collections"),
            manifest=_fit(f"{index_name}_manifest"),
            data=_fit(f"{index_name}_c_{collection}"),
        )

    def ident(self, suffix: str = "") -> sql.Identifier:
        """The data table (``suffix=""``) or one of its indexes."""
        return sql.Identifier(self.data + suffix)


def meta_ddl(names: TableNames) -> list[sql.Composed]:
    """Create the shared spec and manifest tables (idempotent)."""
    return [
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} ("
            " collection text PRIMARY KEY, data_table text NOT NULL, dimension int NOT NULL,"
            " embedding_model text NOT NULL, metric text NOT NULL, algorithm text NOT NULL,"
            " text_search_config text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
        ).format(sql.Identifier(names.collections)),
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} ("
            " collection text NOT NULL, source text NOT NULL, mtime double precision NOT NULL,"
            " size bigint NOT NULL, sha256 text NOT NULL, model text NOT NULL, chunk_count int NOT NULL,"
            " updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (collection, source))"
        ).format(sql.Identifier(names.manifest)),
    ]


def data_ddl(
    names: TableNames, spec: CollectionSpec, *, m: int, ef_construction: int, ts_config: str
) -> list[sql.Composed]:
    """Create one collection's table, its source index, keyword (GIN) index and vector index."""
    statements = [
        sql.SQL(
            "CREATE TABLE {table} ("
            " id text PRIMARY KEY, source text NOT NULL, chunk_index int NOT NULL, content text NOT NULL,"
            " metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb, embedding vector({dim}) NOT NULL,"
            " tsv tsvector GENERATED ALWAYS AS (to_tsvector({ts}::regconfig, content)) STORED)"
        ).format(table=names.ident(), dim=sql.Literal(spec.dimension), ts=sql.Literal(ts_config)),
        sql.SQL("CREATE INDEX {} ON {} (source)").format(names.ident("_src"), names.ident()),
        sql.SQL("CREATE INDEX {} ON {} USING gin (tsv)").format(names.ident("_tsv"), names.ident()),
    ]
    if spec.algorithm is Algorithm.HNSW:
        statements.append(hnsw_ddl(names, spec.metric, m=m, ef_construction=ef_construction))
    return statements


def hnsw_ddl(names: TableNames, metric: Metric, *, m: int, ef_construction: int) -> sql.Composed:
    """Create the HNSW index of a collection's table (also used to rebuild it after a bulk load)."""
    return sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding {}) WITH (m = {}, ef_construction = {})").format(
        names.ident("_hnsw"), names.ident(), sql.SQL(OPCLASS[metric]), sql.Literal(m), sql.Literal(ef_construction)
    )
