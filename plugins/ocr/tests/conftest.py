"""Fixtures of the OCR plugin's tests: a private deckhand state per test, and the real engine made once."""

from __future__ import annotations

import pytest
from deckhand.testing.isolation import isolated_state, session_state  # noqa: F401
from deckhand_ocr.engine import Engine


@pytest.fixture(scope="session")
def engine() -> Engine:
    """RapidOCR on the bundled models, loaded once for the session."""
    return Engine()
