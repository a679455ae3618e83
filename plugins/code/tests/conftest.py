"""Fixtures of the code plugin's tests: the real default embedder's tokenizer (loaded once) and a private state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.building.embedders import embedder_for
from deckhand.plugins import get_registry
from deckhand.testing.isolation import isolated_state, session_state  # noqa: F401

SAMPLES = Path(__file__).parent / "samples"


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The real default embedder, loaded once: its tokenizer is what chunk sizes are counted in."""
    return embedder_for(get_registry(), None, tmp_path_factory.mktemp("minilm")).inner


@pytest.fixture
def samples() -> Path:
    return SAMPLES
