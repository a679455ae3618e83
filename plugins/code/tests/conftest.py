"""Fixtures of the code plugin's tests: the real default embedder's tokenizer (loaded once) and a private state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deckhand.building.embedders import embedder_for
from deckhand.plugins import get_registry

SAMPLES = Path(__file__).parent / "samples"


@pytest.fixture(scope="session")
def session_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deckhand-state")


@pytest.fixture(autouse=True)
def isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, session_state: Path
) -> Iterator[None]:
    """A private DECKHAND_HOME and HOME per test (the embedding cache and model graph shared by the session)."""
    state = tmp_path_factory.mktemp("state")
    (session_state / "cache").mkdir(exist_ok=True)
    (state / "cache").symlink_to(session_state / "cache", target_is_directory=True)
    monkeypatch.setenv("DECKHAND_HOME", str(state))
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("DECKHAND_MODEL_CACHE", str(session_state / "models"))
    monkeypatch.delenv("DECKHAND_PLUGINS", raising=False)
    yield


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The real default embedder, loaded once: its tokenizer is what chunk sizes are counted in."""
    return embedder_for(get_registry(), None, tmp_path_factory.mktemp("minilm")).inner


@pytest.fixture
def samples() -> Path:
    return SAMPLES
