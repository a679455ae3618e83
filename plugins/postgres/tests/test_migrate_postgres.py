"""``deckhand migrate`` from the embedded sqlite store to a real PostgreSQL (pgvector): every record, vector and
manifest entry arrives, nothing is embedded, and the tool searches the new store at once; an unreachable server is
one line without the password."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner, Result
from deckhand.cli.main import cli
from deckhand.config.models import DatabaseConfig
from deckhand.embedding.lazy import LazyEmbedder
from deckhand.plugins import get_registry
from deckhand.stores.tool_store import create_store
from deckhand.types import CollectionSpec
from deckhand_postgres.server import free_port

pytestmark = pytest.mark.postgres

SECRET = "n0t-the-Pa55word"
TOPICS = ["tides", "moorings", "pilots", "locks", "dredging", "buoys", "cranes", "customs"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # no user-level config leaks in
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(TOPICS):
        text = "\n\n".join(f"Rule {n} for {topic} in the harbour, number {i}." for n in range(4))
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\n{text}\n")
    return tmp_path


def _config(root: Path, name: str, database: dict[str, Any], tool_type: str = "hierarchical_document") -> Path:
    tool = {"type": tool_type, "name": "harbour", "source": "docs", "database": database}
    config = root / f"{name}.yaml"
    config.write_text(yaml.safe_dump({"tools": [tool]}))
    return config


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _refuse(*_: object, **__: object) -> None:
    raise AssertionError("the embedder was used")


def _snapshot(database: DatabaseConfig, base_dir: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(records without vectors, vectors, manifest) of collection ``harbour`` as a fresh connection sees them."""
    store = create_store(get_registry().resolve("store", database.provider), database, "harbour", base_dir=base_dir)
    try:
        assert store.open(CollectionSpec("harbour", 384, "unused")) is not None, "the collection must exist"
        records, vectors = {}, {}
        for r in store.iter_records(100):
            records[r.id] = (r.source, r.chunk_index, r.content, r.metadata)
            vectors[r.id] = r.vector
        return records, vectors, store.manifest()
    finally:
        store.close()


def test_sqlite_to_postgres(env: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sqlite = {"provider": "sqlite", "connection_string": "old.sqlite"}
    index = f"migrate_{uuid.uuid4().hex[:8]}"
    postgres = {"provider": "postgres", "connection_string": postgres_url, "index_name": index}
    old, new = _config(env, "old", sqlite), _config(env, "new", postgres)
    ingested = _run("-c", str(old), "ingest")
    assert ingested.exit_code == 0, ingested.stderr
    records, vectors, manifest = _snapshot(DatabaseConfig(**sqlite), env)

    monkeypatch.setattr(LazyEmbedder, "load", _refuse)
    monkeypatch.setattr(LazyEmbedder, "embed", _refuse)
    moved = _run("-c", str(old), "migrate", "--to", str(new), "--batch-size", "5")
    assert moved.exit_code == 0, moved.stderr
    assert f"harbour [sqlite -> postgres]: migrated {len(records)} records from {len(TOPICS)} sources" in moved.stdout
    got_records, got_vectors, got_manifest = _snapshot(DatabaseConfig(**postgres), env)
    assert got_records == records and got_manifest == manifest
    assert all(np.allclose(got_vectors[i], vectors[i], atol=1e-6) for i in vectors)

    again = _run("-c", str(new), "ingest")  # the manifest came along: nothing to read, nothing to embed
    assert again.exit_code == 0 and f"0 ingested (0 chunks, 0 embedded), {len(TOPICS)} unchanged" in again.stderr
    monkeypatch.undo()
    found = _run("-c", str(new), "search", "pilots in the harbour", "--json")
    assert found.exit_code == 0, found.stderr
    assert json.loads(found.stdout)["harbour"][0]["source"].endswith("pilots.md")


def test_unreachable_target_is_one_line_without_the_password(env: Path) -> None:
    old = _config(env, "old", {"provider": "sqlite", "connection_string": "old.sqlite"}, "vectorstore")
    url = f"postgresql://deckhand:{SECRET}@127.0.0.1:{free_port()}/vectors"
    new = _config(env, "new", {"provider": "postgres", "connection_string": url}, "vectorstore")
    assert _run("-c", str(old), "ingest").exit_code == 0
    refused = _run("-c", str(old), "migrate", "--to", str(new))
    assert refused.exit_code == 1
    assert (
        refused.stderr.startswith("error: tool 'harbour' of ")
        and "postgresql://deckhand:***@127.0.0.1:" in refused.stderr
    )
    assert SECRET not in refused.output and refused.stderr.count("\n") == 1
