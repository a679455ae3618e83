"""Hybrid search: keyword (BM25) and exact-match indexes and weighted reciprocal rank fusion.

Used by the ``hierarchical_document`` tool; each index is rebuilt from stored records
(never per query), so the store stays the single source of truth.
"""
