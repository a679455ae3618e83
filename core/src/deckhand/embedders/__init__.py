"""Embedders shipped with deckhand and the on-disk embedding cache."""
