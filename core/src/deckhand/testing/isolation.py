"""Pytest fixtures that keep each test's deckhand state private, for core's tests and plugins' alike.

Import them into a ``conftest.py``::

    from deckhand.testing.isolation import isolated_state, session_state  # noqa: F401

Every test then gets its own ``DECKHAND_HOME`` (so a default store's index starts empty) whose ``cache/`` is
the session's (each text is embedded once), a model-graph cache shared by the session (a ``deckhand``
subprocess does not rebuild the graph) and its own ``HOME``: nothing is written into the repository or read
from the developer's own ``~/.deckhand``. The environment variables that would change what a run does
(``DECKHAND_PLUGINS``, ``DECKHAND_NO_CACHE``, ``DECKHAND_CHUNK_WORKERS``) are unset, and the root logger's
level is restored after the test.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def session_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's state directory: its ``cache/`` (embeddings, LLM contexts) is shared by every test."""
    return tmp_path_factory.mktemp("deckhand-state")


@pytest.fixture(autouse=True)
def isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, session_state: Path
) -> Iterator[Path]:
    """A private DECKHAND_HOME (sharing the session's caches) and HOME per test, no plugin restriction,
    logging level restored; yields the test's HOME."""
    home = tmp_path_factory.mktemp("home")
    state = tmp_path_factory.mktemp("state")
    shared = session_state / "cache"
    shared.mkdir(exist_ok=True)
    (state / "cache").symlink_to(shared, target_is_directory=True)
    monkeypatch.setenv("DECKHAND_HOME", str(state))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DECKHAND_MODEL_CACHE", str(session_state / "models"))
    for name in ("DECKHAND_PLUGINS", "DECKHAND_NO_CACHE", "DECKHAND_CHUNK_WORKERS"):
        monkeypatch.delenv(name, raising=False)
    root = logging.getLogger()
    level = root.level
    yield home
    root.setLevel(level)
