"""Fixtures of the remote embedders' tests: a private state directory, no OpenAI settings from the
developer's environment, the process's embedders forgotten between tests, and the stand-in server."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from _embedding_server import SECRET, EmbeddingServer, serve_embeddings
from deckhand.building.lazy_embedders import forget_embedders
from deckhand.plugins import reset_registry


@pytest.fixture(autouse=True)
def isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("DECKHAND_HOME", str(state))
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    for name in ("DECKHAND_PLUGINS", "DECKHAND_NO_CACHE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    forget_embedders()
    reset_registry()
    level = logging.getLogger().level
    yield state
    logging.getLogger().setLevel(level)
    forget_embedders()
    reset_registry()


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with serve_embeddings(EmbeddingServer()) as state:
        yield state


@pytest.fixture
def openai_env(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> EmbeddingServer:
    """``OPENAI_API_KEY`` set and ``OPENAI_BASE_URL`` pointed at the stand-in."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    return server
