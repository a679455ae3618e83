"""The sqlite store's options (``database.options``: how vectors are searched, and how its approximate index
is built) and the capabilities it declares beyond every store's methods."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

import deckhand.stores.sqlite.ivf_files as sqlite_ivf
from deckhand.capabilities import StoreCapability
from deckhand.errors import ConfigError
from deckhand.tool_entry import StrictModel
from deckhand.types import Metric

#: What the sqlite store supports beyond every store's methods (its class and its registration declare it).
SQLITE_CAPABILITIES: frozenset[StoreCapability] = frozenset(
    {
        StoreCapability.PERSISTENT,
        StoreCapability.CONCURRENT_PROCESSES,
        StoreCapability.FILTERS,
        StoreCapability.SIDE_INDEXES,
        StoreCapability.SIDE_INDEX_FILES,
        StoreCapability.RECORD_LOG,
        StoreCapability.INDEX_MAINTENANCE,
        StoreCapability.INTEGRITY_CHECK,
    }
)


#: Candidates beyond ``k`` rescored exactly, by recorded precision, when ``ann_shortlist`` is 0: a graph over sign
#: bits orders its neighbours coarsely, so its right ten are further down its list (docs/benchmarks.md, issue 46).
SHORTLIST = {"i8": 24, "b1": 390}


class SQLiteOptions(StrictModel):
    """``database.options`` of the sqlite store: how vectors are searched."""

    search: Literal["auto", "exact", "ann"] = Field(
        default="auto",
        description="exact: scan every vector; ann: an approximate index (ann_index) beside the file; "
        "auto: ann from ann_threshold records on.",
    )
    ann_threshold: int = Field(
        default=50_000, ge=0, description="auto: records from which the approximate index is used."
    )
    ann_index: Literal["hnsw", "ivf"] = Field(
        default="hnsw",
        description="hnsw: a usearch graph (ann_precision, ann_connectivity, ann_expansion_*); "
        "ivf: k-means lists scanned exactly (ann_lists, ann_probes), built in a fraction of the graph's time.",
    )
    ann_lists: int = Field(default=0, ge=0, description="IVF: lists (0: about 2·√records).")
    ann_probes: int = Field(default=64, ge=1, le=65_536, description="IVF: lists scanned per query.")
    ann_precision: Literal["b1", "f16", "i8", "f32"] = Field(
        default="i8",
        description="How the HNSW index stores vectors (candidates are rescored in float32); by default "
        "i8 for cosine collections and f16 for the others; b1: sign bits compared by Hamming distance.",
    )
    ann_connectivity: int = Field(default=32, ge=4, le=128, description="HNSW: edges per node.")
    ann_expansion_add: int = Field(default=128, ge=16, le=4096, description="HNSW: candidates while building.")
    ann_expansion_search: int = Field(default=512, ge=16, le=4096, description="HNSW: candidates while searching.")
    ann_shortlist: int = Field(
        default=0,
        ge=0,
        le=65_536,
        description="HNSW: candidates the graph returns beyond k, rescored exactly in float32 "
        "(0: 24, or 390 for a b1 graph, whose Hamming order is coarser).",
    )
    ann_mapped_mb: int = Field(
        default=0,
        ge=0,
        description="HNSW: MB of file pages a search process may map in while searching the graph; past it the "
        "graph's pages are unmapped (they stay in the OS page cache, re-mapped as queries touch them). 0: no limit.",
    )
    ann_background_rows: int = Field(
        default=100_000,
        ge=1,
        description="HNSW: an ingest leaving this many records or more builds the graph after it reports; "
        "searches are exact until it is recorded, and an interrupted build is finished by the next ingest.",
    )
    ann_refresh_rows: int = Field(
        default=20_000,
        ge=1,
        description="Rows written or deleted since the index was built that make the next ingest update it.",
    )

    @classmethod
    def parse(cls, options: dict[str, Any] | None) -> SQLiteOptions:
        """Validate ``database.options``; a bad key or value is a one-line :class:`ConfigError`."""
        try:
            return cls.model_validate(dict(options or {}))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "options"
            known = ", ".join(cls.model_fields)
            raise ConfigError(f"database.options.{field}: {error['msg']} (sqlite options: {known})") from None

    def for_metric(self, metric: Metric) -> SQLiteOptions:
        """The settings a collection of this metric is built with: the default i8 graph is for cosine.

        usearch quantizes to int8 on a fixed [-1, 1] scale, which suits unit vectors (cosine) and
        clips others: on the store kit's L2 vectors recall@10 fell to 0.85. Unless
        ``ann_precision`` was set, L2 and inner-product collections get an f16 graph.
        """
        if metric == Metric.COSINE or self.ann_precision != "i8" or "ann_precision" in self.model_fields_set:
            return self
        return self.model_copy(update={"ann_precision": "f16"})

    def shortlist(self, precision: str) -> int:
        """Candidates asked of an index of this recorded precision beyond ``k`` (rescored exactly)."""
        return self.ann_shortlist or SHORTLIST.get(precision, SHORTLIST["i8"])

    @property
    def label(self) -> str:
        """What ``ann_indexes.precision`` records for an index built with these settings."""
        return sqlite_ivf.LABEL if self.ann_index == "ivf" else self.ann_precision

    def wants_ann(self, size: int) -> bool:
        return self.search == "ann" or (self.search == "auto" and size >= self.ann_threshold)
