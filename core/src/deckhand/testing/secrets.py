"""Checks that a secret never shows: its pieces, and which of them a text holds.

A test puts a marker secret into a ``${VAR}`` field, triggers a failure, and asserts
``leaked_pieces(output, [marker]) == []`` over everything a person or an agent could see. A
piece is any :data:`~deckhand.redaction.MIN_PIECE`-character run of the secret, or of its
URL-quoted forms, compared without case (deckhand masks exactly these).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from deckhand.redaction import MIN_PIECE


def secret_pieces(secret: str) -> set[str]:
    """Every piece of ``secret`` and of its URL-quoted forms, lower case."""
    found: set[str] = set()
    for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
        low = form.lower()
        found |= {low[i : i + MIN_PIECE] for i in range(len(low) - MIN_PIECE + 1)}
    return found


def leaked_pieces(text: str, secrets: Iterable[str]) -> list[str]:
    """The pieces of ``secrets`` that ``text`` shows, sorted (empty when none)."""
    low = text.lower()
    return sorted({piece for secret in secrets for piece in secret_pieces(secret) if piece in low})
