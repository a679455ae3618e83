"""One text embedded with the model itself before an index is dropped for a rebuild, so a rebuild that cannot work
(server down, key refused, wrong vector length) never starts and the previous index keeps answering."""

from __future__ import annotations

import numpy as np

from deckhand.bases import EmbedderBase
from deckhand.embedding.cache import CachedEmbedder
from deckhand.errors import ConfigError, EmbedderAuthenticationError, EmbeddingError

#: The text the probe embeds.
PROBE_TEXT = "deckhand embedding probe"
#: What every probe failure adds: nothing was dropped.
KEPT = "the index was not rebuilt (it is kept as it was and still answers searches)"


def probe(embedder: EmbedderBase, tool: str) -> None:
    """Check ``embedder``'s model gives one finite vector of its dimension, else raise one line naming ``tool``."""
    model = embedder.inner if isinstance(embedder, CachedEmbedder) else embedder
    try:
        vectors = np.asarray(model.embed([PROBE_TEXT]))
    except EmbedderAuthenticationError as exc:
        raise EmbedderAuthenticationError(f"tool {tool!r}: {KEPT}: {exc}") from None
    except EmbeddingError as exc:
        raise EmbeddingError(f"tool {tool!r}: {KEPT}: {exc}") from None
    if vectors.ndim != 2 or vectors.shape[0] != 1 or vectors.shape[1] != embedder.dimension:
        length = vectors.shape[-1] if vectors.ndim else 0
        raise ConfigError(
            f"tool {tool!r}: {KEPT}: embedding model {embedder.model_id!r} returns {length}-dimensional vectors "
            f"but is described as {embedder.dimension}-dimensional; correct the embedder's settings (dimensions:)"
        )
    if not np.isfinite(vectors).all():
        raise EmbeddingError(f"tool {tool!r}: {KEPT}: embedding model {embedder.model_id!r} returns NaN or infinity")
