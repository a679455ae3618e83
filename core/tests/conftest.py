"""Shared fixtures for core's tests.

The real default embedder (all-MiniLM-L6-v2, int8 ONNX) is loaded once per session;
every test gets its own ``DECKHAND_HOME`` (so the default store's index starts empty) whose
``cache/`` is the session's (so each text is embedded once), a model-graph cache shared by the
session (so a ``deckhand`` subprocess does not rebuild the graph), and its own ``HOME``: nothing
is written into the repository or read from the developer's own ``~/.deckhand``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance")

from _foundation_helpers import AcmeStorePlugin  # noqa: E402
from deckhand.building.embedders import embedder_for  # noqa: E402
from deckhand.plugins import get_registry, reset_registry  # noqa: E402


@pytest.fixture(scope="session")
def session_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's state directory: its ``cache/`` (embeddings, LLM contexts) is shared by every test."""
    return tmp_path_factory.mktemp("deckhand-state")


@pytest.fixture(autouse=True)
def isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, session_state: Path
) -> Iterator[Path]:
    """A private DECKHAND_HOME (sharing the session's caches) and HOME per test, no plugin restriction,
    logging level restored."""
    home = tmp_path_factory.mktemp("home")
    state = tmp_path_factory.mktemp("state")
    shared = session_state / "cache"
    shared.mkdir(exist_ok=True)
    (state / "cache").symlink_to(shared, target_is_directory=True)
    monkeypatch.setenv("DECKHAND_HOME", str(state))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DECKHAND_MODEL_CACHE", str(session_state / "models"))
    monkeypatch.delenv("DECKHAND_PLUGINS", raising=False)
    monkeypatch.delenv("DECKHAND_NO_CACHE", raising=False)
    monkeypatch.delenv("DECKHAND_CHUNK_WORKERS", raising=False)
    root = logging.getLogger()
    level = root.level
    yield home
    root.setLevel(level)


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The real default embedder, loaded once for the whole session (tools reuse it)."""
    return embedder_for(get_registry(), None, tmp_path_factory.mktemp("minilm")).inner


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """Forget the process-wide registry before and after the test."""
    reset_registry()
    yield
    reset_registry()


@pytest.fixture
def acme_store(fresh_registry: None) -> Iterator[None]:
    """The process-wide registry with the ``acme`` store plugin registered."""
    get_registry().register_plugin(AcmeStorePlugin(), "acme")
    yield
