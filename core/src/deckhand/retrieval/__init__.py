"""Query-time search: keyword (BM25), exact match, fusion, and the definitions and references that annotate results."""
