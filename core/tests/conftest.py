"""Shared fixtures for core's tests.

The real default embedder (all-MiniLM-L6-v2, int8 ONNX) is loaded once per session;
every test gets its own ``DECKHAND_HOME`` (:mod:`deckhand.testing.isolation`: the default store's
index starts empty) whose ``cache/`` is the session's (so each text is embedded once), a model-graph cache shared by the
session (so a ``deckhand`` subprocess does not rebuild the graph), and its own ``HOME``: nothing
is written into the repository or read from the developer's own ``~/.deckhand``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.register_assert_rewrite("deckhand.testing.store_conformance")

from _foundation_helpers import AcmeStorePlugin  # noqa: E402
from deckhand.building.embedders import embedder_for  # noqa: E402
from deckhand.plugins import get_registry, reset_registry  # noqa: E402
from deckhand.testing.isolation import isolated_state, session_state  # noqa: E402, F401


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
