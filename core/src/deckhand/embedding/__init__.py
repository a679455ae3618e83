"""Embedders: the default offline model, the on-disk embedding cache and the factory tools and memory share."""
