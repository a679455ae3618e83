"""A rebuild checks the embedder (one probe text) before it drops anything, so a rebuild that cannot work keeps the
previous index; an index holding no chunks pins no embedder; the embedding cache never hands back vectors of
another length."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _foundation_helpers import FakeEmbedder, SharedStores, make_tool
from deckhand.embedding.cache import CachedEmbedder, EmbeddingCache, text_hash
from deckhand.errors import ConfigError, EmbeddingError
from deckhand.hookspecs import hookimpl
from deckhand.plugins import PluginRegistry
from deckhand.registration import Registrar


class FlakyEmbedder(FakeEmbedder):
    """A remote model: fails while ``down``; ``returns`` vectors of that length whatever ``dimension`` says."""

    down = False
    returns: int | None = None

    def embed(self, texts: Any) -> Any:
        if self.down:
            raise EmbeddingError("model server: connection error (ConnectError), after 4 attempts")
        vectors = super().embed(texts)
        return vectors[:, : self.returns] if self.returns else vectors


FILES = {
    "ships.md": "# Ships\n\nContainer ships carry standard boxes between large ports.",
    "birds.md": "# Birds\n\nSeagulls nest on cliffs and steal chips from tourists.",
}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    for name, text in FILES.items():
        (tmp_path / "docs" / name).write_text(text)
    return tmp_path / "docs"


def _registry(shared: SharedStores, flaky: FlakyEmbedder) -> PluginRegistry:
    plugin = types.SimpleNamespace()

    @hookimpl
    def deckhand_register(register: Registrar) -> None:
        register.embedder("flaky", lambda model, options: flaky)

    plugin.deckhand_register = deckhand_register
    registry = PluginRegistry(load_entry_points=False)
    registry.register_plugin(shared, "shared")
    registry.register_plugin(plugin, "flaky")
    return registry


@pytest.mark.parametrize("fault", ["unreachable", "wrong length"])
def test_a_rebuild_whose_probe_fails_drops_nothing(tmp_path: Path, docs: Path, minilm: Any, fault: str) -> None:
    shared = SharedStores()
    flaky = FlakyEmbedder(minilm.tokenizer, model_id="flaky-v1")
    registry = _registry(shared, flaky)
    db = {"provider": "shared"}
    good = make_tool(tmp_path, docs, registry=registry, database=db)
    good.initialize_sync()
    before = good.search_text_sync("seagulls nest on cliffs")
    store = shared.stores["kb"]
    spec = store.spec

    flaky.down, flaky.returns = fault == "unreachable", 16 if fault == "wrong length" else None
    changed = make_tool(tmp_path, docs, registry=registry, database=db, embedding_model="flaky")
    with pytest.raises((EmbeddingError, ConfigError)) as raised:
        changed.initialize_sync(force_ingest=True)
    message = str(raised.value)
    assert message.startswith("tool 'kb': the index was not rebuilt (it is kept as it was and still answers searches)")
    assert "\n" not in message
    if fault == "wrong length":
        assert isinstance(raised.value, ConfigError)
        assert "'flaky-v1' returns 16-dimensional vectors but is described as 32-dimensional" in message
    assert (store.count(), store.spec) == (2, spec), "nothing dropped"

    again = make_tool(tmp_path, docs, registry=registry, database=db)  # the previous settings, no --force-ingest
    report = again.initialize_sync()
    assert (report.ingested, len(report.unchanged)) == ([], 2)
    assert again.search_text_sync("seagulls nest on cliffs") == before


def test_a_probe_that_passes_rebuilds(tmp_path: Path, docs: Path, minilm: Any) -> None:
    shared = SharedStores()
    flaky = FlakyEmbedder(minilm.tokenizer, model_id="flaky-rebuilt-v1")
    registry = _registry(shared, flaky)
    make_tool(tmp_path, docs, registry=registry, database={"provider": "shared"}).initialize_sync()
    changed = make_tool(tmp_path, docs, registry=registry, database={"provider": "shared"}, embedding_model="flaky")
    assert len(changed.initialize_sync(force_ingest=True).ingested) == 2
    assert shared.stores["kb"].spec.embedding_model == "flaky-rebuilt-v1"
    assert flaky.calls == 2, "the probe, then the two files in one batch"


def test_an_index_a_failed_first_ingest_left_empty_takes_another_embedder(
    tmp_path: Path, docs: Path, minilm: Any
) -> None:
    shared = SharedStores()
    flaky = FlakyEmbedder(minilm.tokenizer, model_id="flaky-offline-v1")  # nothing of it in the embedding cache
    flaky.down = True
    registry = _registry(shared, flaky)
    db = {"provider": "shared"}
    with pytest.raises(EmbeddingError, match="connection error"):
        make_tool(tmp_path, docs, registry=registry, database=db, embedding_model="flaky").initialize_sync()
    assert shared.stores["kb"].count() == 0 and shared.stores["kb"].spec.embedding_model == "flaky-offline-v1"

    default = make_tool(tmp_path, docs, registry=registry, database=db)  # back to the default model
    assert len(default.initialize_sync().ingested) == 2
    assert shared.stores["kb"].spec.embedding_model == minilm.model_id
    assert "birds.md" in default.search_text_sync("seagulls nest on cliffs")


def test_cached_vectors_of_another_length_are_embedded_again(tmp_path: Path, minilm: Any) -> None:
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    short = np.ones(16, dtype=np.float32) / 4.0
    cache.put_many("flaky-v1", [(text_hash("a text"), short)])  # cached before the model's dimension setting changed
    flaky = FlakyEmbedder(minilm.tokenizer, model_id="flaky-v1")
    vectors = CachedEmbedder(flaky, cache).embed(["a text"])
    assert vectors.shape == (1, 32) and flaky.calls == 1
    again = FlakyEmbedder(minilm.tokenizer, model_id="flaky-v1")
    assert CachedEmbedder(again, cache).embed(["a text"]).shape == (1, 32) and again.calls == 0
