"""Fixtures: a temporary git repository, and no dependence on the developer's global git config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from git_memory_helpers import make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture(autouse=True)
def _no_global_git_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend's git calls must not depend on the developer's ~/.gitconfig either."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
