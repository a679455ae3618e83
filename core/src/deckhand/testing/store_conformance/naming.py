"""Index names that separate collections, and nothing written into the working directory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from deckhand.config.models import DatabaseConfig
from deckhand.plugins import get_registry
from deckhand.stores.tool_store import create_store
from deckhand.testing.store_conformance.store_fixtures import (
    StoreFactory,
    StoreKit,
    file_state,
    make_records,
    make_vectors,
)
from deckhand.types import record_id


class NamingTests(StoreKit):
    """Index names that separate collections, and nothing written into the working directory."""

    # -- names and paths ------------------------------------------------------------------------
    def test_index_name_separates_collections(
        self,
        database: DatabaseConfig,
        base_dir: Path,
        collection: str,
        store_factory: StoreFactory,
        rng: np.random.Generator,
    ) -> None:
        """``index_name`` is a namespace: the same collection name under another index_name is another collection."""
        component = get_registry().resolve("store", database.provider)
        other_config = database.model_copy(update={"index_name": f"{database.index_name}_kit2"})
        spec = self._process_spec(collection)
        mine = store_factory(collection)
        other = create_store(component, other_config, collection, base_dir=base_dir)
        try:
            assert mine.open(spec) is None
            assert other.open(replace(spec, dimension=self.dimension + 4)) is None, (
                f"a collection under index_name {other_config.index_name!r} sees the one under {database.index_name!r}"
            )
            vectors = make_vectors(rng, 5, self.dimension)
            mine.replace_source("guide.md", make_records(vectors, "guide.md"), file_state("guide.md", chunks=5))
            other_vectors = make_vectors(rng, 2, self.dimension + 4)
            other.replace_source(
                "guide.md", make_records(other_vectors, "guide.md"), file_state("guide.md", chunks=2, salt="o")
            )
            assert (mine.count(), other.count()) == (5, 2)
            assert mine.manifest()["guide.md"] == file_state("guide.md", chunks=5)
            other.drop()
            assert mine.count() == 5, "drop() under another index_name removed this collection's records"
            assert mine.manifest() == {"guide.md": file_state("guide.md", chunks=5)}
            assert self._ids(mine.search(vectors[1], 1)) == [record_id("guide.md", 1)]
        finally:
            other.drop()
            other.close()
            mine.close()

    def test_writes_nothing_into_the_working_directory(
        self,
        store_factory: StoreFactory,
        collection: str,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        rng: np.random.Generator,
    ) -> None:
        """Relative paths resolve against the ``base_dir`` the factory receives, never the current directory."""
        cwd = tmp_path / "elsewhere"
        cwd.mkdir()
        monkeypatch.chdir(cwd)
        store = store_factory(collection)
        try:
            store.open(self._process_spec(collection))
            vectors = make_vectors(rng, 3, self.dimension)
            store.replace_source("a.md", make_records(vectors, "a.md"), file_state("a.md", chunks=3))
            assert store.search(vectors[0], 1)
        finally:
            store.close()
        written = sorted(p.name for p in cwd.iterdir())
        assert written == [], (
            f"the store wrote {written} into the current directory: resolve relative paths against the "
            "base_dir the factory receives "
            "(see deckhand.stores.tool_store.create_store)"
        )
