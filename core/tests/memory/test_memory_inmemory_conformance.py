"""The in-process ``memory`` backend passes the conformance kit (as any third-party backend would)."""

from __future__ import annotations

import pytest
from deckhand.bases import MemoryBackendBase
from deckhand.memory import InMemoryBackend
from deckhand.plugins import get_registry
from deckhand.testing.memory_conformance import MemoryBackendTests, _open


class TestInMemoryBackend(MemoryBackendTests):
    full_grid = True  # fast enough to store all 20,000 coordinates

    @pytest.fixture
    def backend(self) -> MemoryBackendBase:
        return InMemoryBackend()


def test_registered_through_the_hook() -> None:
    component = get_registry().resolve("memory_backend", "in-memory")
    assert component.name == "memory" and component.plugin == "deckhand.builtin"
    assert isinstance(component.create(None), MemoryBackendBase)


def test_rejects_unknown_options() -> None:
    with pytest.raises(TypeError, match="no options"):
        InMemoryBackend(fsync=True)


class ClaimsPersistence(InMemoryBackend):
    """Declares that its storage outlives the object; a dict of the object does not."""

    persistent = True


def test_the_kit_fails_a_backend_declaring_persistence_it_lacks() -> None:
    kit = TestInMemoryBackend()
    backend = ClaimsPersistence()
    manager = _open(backend)
    with pytest.raises(pytest.fail.Exception, match="override reopen"):
        kit.test_restart_sees_stored_decisions(manager, backend)
    kit.reopen = lambda backend: ClaimsPersistence()  # type: ignore[method-assign]
    with pytest.raises(AssertionError):
        kit.test_restart_sees_stored_decisions(_open(backend), backend)
    with pytest.raises(AssertionError):
        kit.test_store_sync_restart_load(_open(backend), backend)
