"""deckhand: retrieval tools and long-term memory for AI agents, built from plugins."""

from __future__ import annotations

__version__ = "0.1.0"

from deckhand.hookspecs import hookimpl

__all__ = ["__version__", "hookimpl"]
