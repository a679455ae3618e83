"""Keeping the connection string's password out of every log line and error message (core's helpers)."""

from __future__ import annotations

from deckhand.api import redact_secrets, redact_url

__all__ = ["redact_url", "scrub"]


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message) with every secret of ``url`` masked, wherever it appears."""
    return redact_secrets(text, url)
