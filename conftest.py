"""Fixtures for the whole workspace's tests."""

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    """Secrets registered by one test (its ``${VAR}`` configs) do not mask the output of the next."""
    yield
    from deckhand.redaction import SECRETS

    SECRETS.clear()
