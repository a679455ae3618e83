"""Documents an agent adds live beside the source's files: every ingest keeps them, ``deckhand migrate`` moves
them, and a rebuild for another embedding model embeds them again (issue 32, item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _foundation_helpers import SharedStores, make_tool
from deckhand.errors import EmbeddingError
from test_migrate import _contents, _ingested, _run
from test_rebuild_safety import FlakyEmbedder, _registry

NOTE = "Lighthouse keepers log every passing tanker in the harbor book at dusk."


def _add(config: Path, text: str = NOTE, doc_id: str = "keepers") -> None:
    from deckhand.calls.toolbox import Toolbox
    from deckhand.calls.write_calls import AddArguments

    box = Toolbox.from_config(config)
    try:
        box.add_document(AddArguments(tool="kb", title="Keepers", text=text, id=doc_id))
    finally:
        box.close()


def test_migrate_moves_agent_documents_and_the_target_keeps_them(tmp_path: Path, minilm: object) -> None:
    old = _ingested(tmp_path, extra="    writable: true\n")
    _add(old)
    records, manifest = _contents(tmp_path / "old.sqlite")
    assert "deckhand-agent://kb/keepers" in manifest
    new = tmp_path / "new.yaml"
    new.write_text(old.read_text().replace("old.sqlite", "new.sqlite"))
    moved = _run("-c", str(old), "migrate", "--to", str(new), "--tool", "kb")
    assert moved.exit_code == 0, moved.output
    assert _contents(tmp_path / "new.sqlite") == (records, manifest)
    again = _run("-c", str(new), "ingest")  # the agent document is no file gone from the source
    assert again.exit_code == 0, again.output
    assert "0 removed" in again.output
    found = _run("-c", str(new), "search", "who logs the tankers at dusk", "--json")
    assert json.loads(found.stdout)["kb"][0]["source"] == "deckhand-agent://kb/keepers"


def test_a_rebuild_for_another_model_embeds_agent_documents_again(tmp_path: Path, minilm: Any) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ships.md").write_text("# Ships\n\nContainer ships carry standard boxes between large ports.")
    shared = SharedStores()
    flaky = FlakyEmbedder(minilm.tokenizer, model_id="flaky-rebuilt-v1")
    registry = _registry(shared, flaky)
    good = make_tool(tmp_path, docs, registry=registry, database={"provider": "shared"})
    good.initialize_sync()
    good.add_document("keepers", "Keepers", NOTE, {"team": "ops"})
    good.close()

    changed = make_tool(tmp_path, docs, registry=registry, database={"provider": "shared"}, embedding_model="flaky")
    report = changed.initialize_sync(force_ingest=True)
    assert report.ingested == ["docs/ships.md"] or len(report.ingested) == 1
    store = shared.stores["kb"]
    assert store.spec.embedding_model == "flaky-rebuilt-v1"
    kept = changed.index.agent_document("keepers")
    assert kept is not None and (kept.text, kept.title, kept.metadata) == (NOTE, "Keepers", {"team": "ops"})
    assert store.manifest()["deckhand-agent://kb/keepers"].model == "flaky-rebuilt-v1"
    assert flaky.calls == 3, "the probe, the file, then the agent document"


def test_a_write_keeps_a_complete_index_complete(tmp_path: Path, minilm: Any) -> None:
    """The next process opens the index without walking the source (a write is no interrupted ingest)."""
    from deckhand.index import IndexOpened

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ships.md").write_text("# Ships\n\nContainer ships carry standard boxes between large ports.")
    database = {"provider": "sqlite", "connection_string": str(tmp_path / "index.sqlite")}
    tool = make_tool(tmp_path, docs, database=database)
    tool.initialize_sync()
    tool.add_document("keepers", "Keepers", NOTE, {})
    tool.index.remove_entry("docs/ships.md")
    tool.close()
    again = make_tool(tmp_path, docs, database=database)
    assert isinstance(again.open_sync(), IndexOpened)
    assert again.index.agent_document("keepers") is not None
    assert set(again.index.entries()) == {"deckhand-agent://kb/keepers"}
    again.close()


class _DiesAfterProbe(FlakyEmbedder):
    """A model server that answers the rebuild's probe, then goes down (the process is as good as killed)."""

    def embed(self, texts: Any) -> Any:
        if self.calls >= 1 and self.dies:
            raise EmbeddingError("model server: killed after the drop")
        return super().embed(texts)

    dies = True


def test_a_rebuild_killed_after_its_drop_loses_no_agent_document(tmp_path: Path, minilm: Any) -> None:
    """The kept documents are on disk before the drop: the next ingest writes them into the new index."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ships.md").write_text("# Ships\n\nContainer ships carry standard boxes between large ports.")
    shared = SharedStores()
    dying = _DiesAfterProbe(minilm.tokenizer, model_id="dies-after-probe-v1")  # nothing of it cached
    registry = _registry(shared, dying)
    good = make_tool(tmp_path, docs, registry=registry, database={"provider": "shared"})
    good.initialize_sync()
    good.add_document("keepers", "Keepers", NOTE, {"team": "ops"})
    good.close()

    changed = make_tool(tmp_path, docs, registry=registry, database={"provider": "shared"}, embedding_model="flaky")
    with pytest.raises(EmbeddingError):  # the run dies midway, after the old index was dropped
        changed.initialize_sync(force_ingest=True)
    assert "deckhand-agent://kb/keepers" not in shared.stores["kb"].manifest()

    dying.dies = False
    again = make_tool(tmp_path, docs, registry=registry, database={"provider": "shared"}, embedding_model="flaky")
    again.initialize_sync()
    kept = again.index.agent_document("keepers")
    assert kept is not None and (kept.text, kept.title, kept.metadata) == (NOTE, "Keepers", {"team": "ops"})
    assert not list((tmp_path / ".deckhand" / "rebuild-pending").glob("*.json")), "the journal is gone once written"


def test_the_rebuild_journal_follows_no_link(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A link planted where the journal or its partial file goes is neither read through nor written through."""
    from deckhand.index.agent_documents import AgentDocument, load_pending, pending_path, save_pending

    outside = tmp_path / "outside.json"
    outside.write_text('[{"tool": "kb", "id": "x", "chunks": 1, "size": 1, "added": 0.0}]')
    journal = pending_path(tmp_path / "state", "kb")
    journal.parent.mkdir(parents=True)
    journal.symlink_to(outside)
    with caplog.at_level("WARNING", logger="deckhand"):
        assert load_pending(journal) == []
    assert "not read" in caplog.text

    journal.unlink()
    journal.with_suffix(".partial").symlink_to(outside)
    doc = AgentDocument("kb", "keepers", 1, len(NOTE), 1.0, "Keepers", NOTE, {})
    save_pending(journal, [doc])
    assert outside.read_text().startswith('[{"tool": "kb", "id": "x"'), "the link's target is untouched"
    assert not journal.is_symlink() and load_pending(journal) == [doc]
