"""git-memory passes deckhand's memory-backend conformance kit, including the multi-process scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.api import MemoryBackendBase
from deckhand.testing.memory_conformance import BackendSpec, MemoryBackendTests
from deckhand_git_memory import GitMemoryBackend
from git_memory_helpers import make_repo


class TestGitMemoryBackend(MemoryBackendTests):
    @pytest.fixture
    def backend(self, tmp_path: Path) -> MemoryBackendBase:
        return GitMemoryBackend(make_repo(tmp_path / "repo"))

    def reopen(self, backend: MemoryBackendBase) -> MemoryBackendBase:
        assert isinstance(backend, GitMemoryBackend)
        return GitMemoryBackend(backend.repo)

    def backend_spec(self, backend: MemoryBackendBase) -> BackendSpec:
        assert isinstance(backend, GitMemoryBackend)
        return ("git", {"path": str(backend.repo)})
