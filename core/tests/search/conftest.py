"""A small legislation-like corpus shared by the hierarchical search tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.testing.legal_corpus import write_legal_corpus


@pytest.fixture
def legal_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with docs/act.md, docs/guide.md and an isolated deckhand state dir."""
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / ".state"))
    return write_legal_corpus(tmp_path)
