"""The sqlite store with its approximate (HNSW) index forced on and brought up to date after every write,
against the store conformance kit: every ranking, filter and persistence test goes through the graph."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.stores.sqlite import SQLiteStore
from deckhand.testing.store_conformance import StoreConformanceTests
from deckhand.types import Algorithm

OPTIONS = {"search": "ann", "ann_threshold": 0, "ann_refresh_rows": 1}


class TestSQLiteAnnConformance(StoreConformanceTests):
    """Approximate: HNSW collections must reach the kit's recall, not equal the exact reference.

    Each write is followed by ``maintain()`` (what an ingest does once at its end), so no row is
    left to the exact path; processes the kit starts read the graph this one wrote.
    """

    provider = "sqlite"
    entry_point = None
    algorithms = (Algorithm.HNSW,)
    exact_algorithms = frozenset()
    large_batch = 3_000

    @pytest.fixture
    def database(self) -> DatabaseConfig:
        return DatabaseConfig(provider="sqlite", options=OPTIONS)

    @pytest.fixture(autouse=True)
    def maintained_after_writes(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        for name in ("upsert", "replace_source", "delete_source"):
            original = getattr(SQLiteStore, name)

            def write_then_maintain(store: SQLiteStore, *args: Any, _original: Any = original, **kwargs: Any) -> None:
                _original(store, *args, **kwargs)
                store.maintain()

            monkeypatch.setattr(SQLiteStore, name, write_then_maintain)
        yield


class TestSQLiteIvfConformance(TestSQLiteAnnConformance):
    """The same kit with the IVF index (``ann_index: ivf``) forced on and rebuilt after every write."""

    @pytest.fixture
    def database(self) -> DatabaseConfig:
        return DatabaseConfig(provider="sqlite", options={**OPTIONS, "ann_index": "ivf"})


class TestSQLiteFlatConformance(TestSQLiteAnnConformance):
    """The same kit through the flat snapshot a large first ingest records before its graph (issue 46): every
    ``maintain()`` defers the graph (``ann_background_rows: 1``) and the build never starts, so searches scan the
    snapshot exactly, with the rows written since searched in memory and the ones deleted since dropped."""

    exact_algorithms = frozenset({Algorithm.HNSW})

    @pytest.fixture
    def database(self) -> DatabaseConfig:
        return DatabaseConfig(provider="sqlite", options={**OPTIONS, "ann_background_rows": 1})

    @pytest.fixture(autouse=True)
    def graph_never_built(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(SQLiteStore, "_build", lambda store, threads: None)
