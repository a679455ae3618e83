"""deckhand embedder plugin running local sentence-transformers models on torch (CPU, or a GPU in fp16), offline."""

from deckhand_sentence_transformers.embedder import SentenceTransformerEmbedder, resolve_model_dir

__all__ = ["SentenceTransformerEmbedder", "resolve_model_dir"]
