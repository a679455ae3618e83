"""Where deckhand keeps local state: the embedding and context caches and the default store's index."""

from __future__ import annotations

import os
from pathlib import Path

ENV_HOME = "DECKHAND_HOME"
ENV_NO_CACHE = "DECKHAND_NO_CACHE"


def state_dir(base_dir: Path) -> Path:
    """``$DECKHAND_HOME`` if set, else ``<base_dir>/.deckhand`` (``base_dir``: the agent config's directory)."""
    env = os.environ.get(ENV_HOME)
    return Path(env) if env else base_dir / ".deckhand"


def cache_disabled() -> bool:
    """``DECKHAND_NO_CACHE=1`` turns off every on-disk cache (embeddings, LLM contexts)."""
    return os.environ.get(ENV_NO_CACHE) == "1"
