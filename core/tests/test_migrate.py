"""``deckhand migrate``: a tool's index copied into another store (records, vectors, manifest) without embedding.

Each test ingests a small corpus into one sqlite file with the real default model, then
migrates it into another with the embedder made to fail if anything loads or calls it.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from deckhand.building.lazy_embedders import LazyEmbedder
from deckhand.cli.main import cli
from deckhand.hookspecs import hookimpl
from deckhand.plugins import get_registry
from deckhand.registration import Registrar
from deckhand.stores.sqlite import SQLiteStore
from deckhand.types import CollectionSpec, FileState, Record

TOPICS = ["keys", "ports", "billing", "backups", "logs", "tokens", "quotas", "regions", "alerts", "exports", "users"]


def _corpus(root: Path) -> None:
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for i, topic in enumerate(TOPICS):
        body = "\n\n".join(f"Paragraph {p} on how {topic} work in Harbor, note {i}." for p in range(3))
        (docs / f"{topic}.md").write_text(
            f"# {topic.title()}\n\n## Setup\n\n{body}\n\n## Limits\n\nAt most {i} {topic}.\n"
        )


def _config(root: Path, name: str, *, tool_type: str = "vectorstore", extra: str = "") -> Path:
    """``<name>.yaml`` beside the corpus: tool ``kb`` over docs/ in ``<name>.sqlite``."""
    config = root / f"{name}.yaml"
    hierarchical = tool_type == "hierarchical_document"
    chunking = "    max_chunk_tokens: 40\n" if hierarchical else "    chunk_size: 40\n    chunk_overlap: 8\n"
    config.write_text(
        f"tools:\n  - type: {tool_type}\n    name: kb\n    source: docs/\n{chunking}{extra}"
        f"    database: {{provider: sqlite, connection_string: {name}.sqlite}}\n"
    )
    return config


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _ingested(root: Path, name: str = "old", **kwargs: Any) -> Path:
    _corpus(root)
    config = _config(root, name, **kwargs)
    result = _run("-c", str(config), "ingest")
    assert result.exit_code == 0, result.output
    return config


def _contents(path: Path, collection: str = "kb") -> tuple[dict[str, tuple[Any, ...]], dict[str, FileState]]:
    """Every record (without its vector) and the manifest of ``collection`` in the file at ``path``."""
    gc.collect()
    store = SQLiteStore(path, collection)
    try:
        records = {r.id: (r.source, r.chunk_index, r.content, r.metadata) for r in store.iter_records()}
        return records, store.manifest()
    finally:
        store.close()


def _vectors(path: Path) -> dict[str, np.ndarray]:
    gc.collect()
    store = SQLiteStore(path, "kb")
    try:
        return {r.id: r.vector for r in store.iter_records()}
    finally:
        store.close()


def _forbid_embedding(patch: pytest.MonkeyPatch) -> None:
    """From now on, loading or calling the embedder fails the test (the ingest before it used the real model)."""
    patch.setattr(LazyEmbedder, "load", _refuse)
    patch.setattr(LazyEmbedder, "embed", _refuse)


def _refuse(*_: object, **__: object) -> None:
    raise AssertionError("the embedder was used")


def _assert_same_index(root: Path, old: str = "old", new: str = "new") -> None:
    assert _contents(root / f"{new}.sqlite") == _contents(root / f"{old}.sqlite")
    before, after = _vectors(root / f"{old}.sqlite"), _vectors(root / f"{new}.sqlite")
    assert set(before) == set(after) and all(np.array_equal(before[i], after[i]) for i in before)


def test_sqlite_to_sqlite_embeds_nothing_and_leaves_nothing_to_ingest(tmp_path: Path, minilm: object) -> None:
    old = _ingested(tmp_path)
    new = _config(tmp_path, "new")
    records, manifest = _contents(tmp_path / "old.sqlite")
    with pytest.MonkeyPatch.context() as patch:
        _forbid_embedding(patch)
        moved = _run("-c", str(old), "migrate", "--to", str(new), "--tool", "kb", "--batch-size", "7")
        assert moved.exit_code == 0, moved.output
        line = f"kb [sqlite -> sqlite]: migrated {len(records)} records from {len(manifest)} sources in "
        assert line in moved.stdout and moved.stdout.rstrip().endswith("(no embeddings computed)")
        _assert_same_index(tmp_path)
        # The manifest came along: an ingest through the new configuration has nothing to do (and embeds nothing).
        again = _run("-c", str(new), "ingest")
        assert again.exit_code == 0, again.output
        assert f"0 ingested (0 chunks, 0 embedded), {len(manifest)} unchanged" in again.output
    found = _run("-c", str(new), "search", "how do billing work", "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["kb"][0]["source"].endswith("billing.md")


def _refuse(*_: object, **__: object) -> None:
    raise AssertionError("the embedder was used")


def test_hierarchical_tool_searches_the_target_at_once(
    tmp_path: Path, minilm: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword and definition indexes are derived: the target tool rebuilds them from the copied records."""
    old = _ingested(tmp_path, tool_type="hierarchical_document")
    _forbid_embedding(monkeypatch)
    new = _config(tmp_path, "new", tool_type="hierarchical_document", extra="    search_mode: keyword\n")
    moved = _run("-c", str(old), "migrate", "--to", str(new), "--json")
    assert moved.exit_code == 0, moved.output
    (report,) = json.loads(moved.stdout)["tools"]
    assert report["records"] == len(_contents(tmp_path / "old.sqlite")[0]) == report["target_count"]
    assert report["sources"] == len(TOPICS) and report["embeddings_computed"] == 0
    _assert_same_index(tmp_path)
    # keyword mode embeds no query: the search runs with the embedder still refused
    found = _run("-c", str(new), "search", "quotas limits", "--json")
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)["kb"]
    assert hits and hits[0]["source"].endswith("quotas.md")


def test_an_interrupted_migration_completes_when_run_again(
    tmp_path: Path, minilm: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _ingested(tmp_path)
    _forbid_embedding(monkeypatch)
    new = _config(tmp_path, "new")
    target = tmp_path / "new.sqlite"
    original = SQLiteStore.replace_source
    written = 0

    def fail_on_fifth(self: SQLiteStore, source: str, records: Any, state: FileState) -> None:
        nonlocal written
        if self.path == target:
            written += 1
            if written == 5:
                raise OSError("disk full")
        original(self, source, records, state)

    monkeypatch.setattr(SQLiteStore, "replace_source", fail_on_fifth)
    cut = _run("-c", str(old), "migrate", "--to", str(new), "--batch-size", "10")
    assert cut.exit_code == 1 and "disk full" in cut.output
    # what the target holds is consistent: each file it names has all its chunks, no chunk lacks its file
    records, manifest = _contents(target)
    assert len(manifest) == 4 and {r[0] for r in records.values()} == set(manifest)
    assert len(records) == sum(state.chunk_count for state in manifest.values())

    monkeypatch.setattr(SQLiteStore, "replace_source", original)
    resumed = _run("-c", str(old), "migrate", "--to", str(new))
    assert resumed.exit_code == 0, resumed.output
    assert f"from {len(TOPICS) - 4} sources" in resumed.stdout and "; 4 sources were already there" in resumed.stdout
    _assert_same_index(tmp_path)
    again = _run("-c", str(old), "migrate", "--to", str(new))  # a third run copies nothing
    assert again.exit_code == 0 and "migrated 0 records from 0 sources" in again.stdout


class _OtherModel:
    """Registers ``other-model`` (another model id, 32 dims), described without building it."""

    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.embedder(
            "other-model", _refuse, model_id="other-model-v1", dimension=32, max_tokens=256, description="test"
        )


def test_another_embedding_model_is_refused(
    tmp_path: Path, minilm: object, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    get_registry().register_plugin(_OtherModel(), "other-model")
    old = _ingested(tmp_path)
    _forbid_embedding(monkeypatch)
    new = _config(tmp_path, "new", extra="    embedding_model: other-model\n")
    refused = _run("-c", str(old), "migrate", "--to", str(new))
    assert refused.exit_code == 3
    (line,) = refused.output.strip().splitlines()
    assert "its index holds vectors of embedding model" in line and "(384 dims)" in line
    assert "'other-model-v1' (32 dims); give it the same embedding_model" in line
    assert not _contents(tmp_path / "new.sqlite")[1]


def test_a_target_holding_other_files_is_refused_unless_replace(
    tmp_path: Path, minilm: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _ingested(tmp_path)
    _forbid_embedding(monkeypatch)
    new = _config(tmp_path, "new")
    _, manifest = _contents(tmp_path / "old.sqlite")
    spec = SQLiteStore(tmp_path / "old.sqlite", "kb")
    built = spec.open(CollectionSpec("kb", 384, "x"))
    spec.close()
    assert built is not None
    other = SQLiteStore(tmp_path / "new.sqlite", "kb")
    other.open(built)
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 1.0
    other.replace_source(
        "elsewhere.md",
        [Record("elsewhere.md_chunk_0", "elsewhere.md", 0, "x", vector)],
        FileState("elsewhere.md", 1.0, 1, "0" * 64, built.embedding_model, 1),
    )
    other.close()
    refused = _run("-c", str(old), "migrate", "--to", str(new))
    assert refused.exit_code == 3
    assert "already holds 1 files the source does not have (e.g. elsewhere.md); pass --replace" in refused.output
    replaced = _run("-c", str(old), "migrate", "--to", str(new), "--replace")
    assert replaced.exit_code == 0, replaced.output
    _assert_same_index(tmp_path)
    assert "elsewhere.md" not in _contents(tmp_path / "new.sqlite")[1] and len(manifest) == len(TOPICS)


def test_refusals_are_one_line(tmp_path: Path, minilm: object, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _ingested(tmp_path)
    _forbid_embedding(monkeypatch)
    same = _run("-c", str(old), "migrate", "--to", str(old))
    assert same.exit_code == 3 and "use the same collection in sqlite" in same.output
    memory = tmp_path / "memory.yaml"
    memory.write_text(
        old.read_text().replace("{provider: sqlite, connection_string: old.sqlite}", "{provider: in-memory}")
    )
    volatile = _run("-c", str(old), "migrate", "--to", str(memory))
    assert volatile.exit_code == 3 and "keeps nothing after the command ends" in volatile.output
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    moved = elsewhere / "new.yaml"
    moved.write_text(old.read_text().replace("source: docs/", f"source: {tmp_path / 'docs'}"))
    beside = _run("-c", str(old), "migrate", "--to", str(moved))
    assert beside.exit_code == 3 and "put the new configuration beside the old one" in beside.output
    (tmp_path / "docs2").mkdir()
    other_source = _config(tmp_path, "new")
    other_source.write_text(other_source.read_text().replace("source: docs/", "source: docs2/"))
    files = _run("-c", str(old), "migrate", "--to", str(other_source))
    assert files.exit_code == 3 and "give both the same source:" in files.output
    empty = _config(tmp_path, "empty")
    nothing = _run("-c", str(empty), "migrate", "--to", str(_config(tmp_path, "new")))
    assert (
        nothing.exit_code == 3 and "has no index in sqlite" in nothing.output and "nothing to migrate" in nothing.output
    )
    assert not (tmp_path / "empty.sqlite").exists()  # looking for it created no file
    unknown = _run("-c", str(old), "migrate", "--to", str(_config(tmp_path, "new")), "--tool", "nope")
    assert unknown.exit_code == 3 and "no tool named nope (tools: kb)" in unknown.output
    for result in (same, volatile, beside, files, nothing, unknown):
        assert len(result.output.strip().splitlines()) == 1, result.output


SCALING_MD = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"


def test_the_commands_of_docs_scaling_md_run_as_written(
    tmp_path: Path, minilm: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/scaling.md's "Moving to a server store": its new.yaml (with sqlite standing in for the server) and its
    commands, run as written from the configurations' directory."""
    section = SCALING_MD.read_text().split(". Moving to a server store\n")[1].split("\n## ")[0]
    yaml_block = section.split("```yaml\n")[1].split("```")[0]
    bash_block = section.split("```bash\n")[1].split("```")[0]
    _corpus(tmp_path)
    database = yaml_block[yaml_block.index("    database:") :]
    (tmp_path / "new.yaml").write_text(
        yaml_block.replace(database, "    database: {provider: sqlite, connection_string: new.sqlite}\n")
    )
    (tmp_path / "agent.yaml").write_text(yaml_block.replace(database, ""))  # the default store
    monkeypatch.chdir(tmp_path)
    assert _run("-c", "agent.yaml", "ingest").exit_code == 0
    _forbid_embedding(monkeypatch)
    commands = [line.split("#")[0].split() for line in bash_block.splitlines() if line.startswith("deckhand ")]
    assert [c[3] for c in commands] == ["migrate", "ingest"]
    moved = _run(*commands[0][1:])
    assert moved.exit_code == 0, moved.output
    assert (
        moved.stdout.startswith("docs [sqlite -> sqlite]: migrated ") and f"from {len(TOPICS)} sources" in moved.stdout
    )
    again = _run(*commands[1][1:])
    assert again.exit_code == 0 and f"0 ingested (0 chunks, 0 embedded), {len(TOPICS)} unchanged" in again.output
