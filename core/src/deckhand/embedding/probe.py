"""One text embedded before an index is dropped for a rebuild, so a rebuild that cannot work never starts.

A rebuild (``--force-ingest`` after a change of model, dimension, metric or algorithm) drops the
collection and embeds everything again. Before the drop, :func:`probe` asks the embedder's model
itself (never the embedding cache) for one vector: that checks the server is reachable, the key is
accepted and the vectors have the length the configuration declares. When it fails, the error
says so in one line and the previous index is left as it was, still answering searches.
"""

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
    """Embed :data:`PROBE_TEXT` with ``embedder``'s model and check the answer is one finite vector of
    ``embedder.dimension`` values; raises one line naming tool ``tool`` otherwise (a refused key and a
    wrong vector length exit 3, as configuration errors; an unreachable server is an :class:`EmbeddingError`)."""
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
