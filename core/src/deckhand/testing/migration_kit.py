"""``deckhand migrate`` into a real store: the check a store plugin's test suite runs against its own server.

:func:`check_migrates_from_sqlite` ingests a small corpus into the default sqlite store with the
real default model, then runs ``deckhand migrate`` into the ``database:`` block it is given with
the embedder made to fail if it is loaded or called, and checks that every record (text,
metadata, vector) and manifest entry arrived, that ``deckhand ingest`` through the target then
has nothing to do, and that the hierarchical tool searches the target at once (its side
indexes rebuilt from the copied records).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner, Result

from deckhand.building.lazy_embedders import LazyEmbedder
from deckhand.cli.main import cli
from deckhand.config.models import DatabaseConfig
from deckhand.plugins import get_registry
from deckhand.stores.tool_store import create_store
from deckhand.types import CollectionSpec

TOOL = "harbour"
TOPICS = ["tides", "moorings", "pilots", "locks", "dredging", "buoys", "cranes", "customs"]


def _refuse(*_: object, **__: object) -> None:
    raise AssertionError("deckhand migrate used the embedder")


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _config(root: Path, name: str, database: Mapping[str, Any]) -> Path:
    tool = {"type": "hierarchical_document", "name": TOOL, "source": "docs", "database": dict(database)}
    config = root / f"{name}.yaml"
    config.write_text(yaml.safe_dump({"tools": [tool]}))
    return config


def snapshot(database: Mapping[str, Any], base_dir: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(records without their vectors, vectors, manifest) of the tool's collection, as a new connection sees them."""
    gc.collect()
    config = DatabaseConfig(**database)
    store = create_store(get_registry().resolve("store", config.provider), config, TOOL, base_dir=base_dir)
    try:
        assert store.open(CollectionSpec(TOOL, 384, "unused")) is not None, "the collection must exist"
        records, vectors = {}, {}
        for r in store.iter_records(100):
            records[r.id] = (r.source, r.chunk_index, r.content, r.metadata)
            vectors[r.id] = r.vector
        return records, vectors, store.manifest()
    finally:
        store.close()


def check_migrates_from_sqlite(root: Path, target: Mapping[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Migrate an index from sqlite into ``target`` (a ``database:`` block with its own ``index_name``) and check it.

    ``root`` is an empty directory; ``monkeypatch`` refuses the embedder during the migration.
    The environment should keep the user's files out (``DECKHAND_HOME`` and ``HOME`` under ``root``).
    """
    docs = root / "docs"
    docs.mkdir()
    for i, topic in enumerate(TOPICS):
        text = "\n\n".join(f"Rule {n} for {topic} in the harbour, number {i}." for n in range(4))
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\n{text}\n")
    sqlite = {"provider": "sqlite", "connection_string": "old.sqlite"}
    old, new = _config(root, "old", sqlite), _config(root, "new", target)
    ingested = _run("-c", str(old), "ingest")
    assert ingested.exit_code == 0, ingested.output
    records, vectors, manifest = snapshot(sqlite, root)
    provider = get_registry().resolve("store", str(target["provider"])).name

    with monkeypatch.context() as patch:
        patch.setattr(LazyEmbedder, "load", _refuse)
        patch.setattr(LazyEmbedder, "embed", _refuse)
        moved = _run("-c", str(old), "migrate", "--to", str(new), "--batch-size", "5")
        assert moved.exit_code == 0, moved.output
        expected = f"{TOOL} [sqlite -> {provider}]: migrated {len(records)} records from {len(TOPICS)} sources"
        assert expected in moved.stdout, moved.stdout
        got_records, got_vectors, got_manifest = snapshot(target, root)
        assert got_records == records and got_manifest == manifest
        assert all(np.allclose(got_vectors[i], vectors[i], atol=1e-6) for i in vectors)
        again = _run("-c", str(new), "ingest")  # the manifest came along: nothing to read, nothing to embed
        assert again.exit_code == 0, again.output
        assert f"0 ingested (0 chunks, 0 embedded), {len(TOPICS)} unchanged" in again.output, again.output
        resumed = _run("-c", str(old), "migrate", "--to", str(new))  # run again: everything is there already
        assert resumed.exit_code == 0 and f"; {len(TOPICS)} sources were already there" in resumed.stdout
    found = _run("-c", str(new), "search", "pilots in the harbour", "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)[TOOL][0]["source"].endswith("pilots.md")
