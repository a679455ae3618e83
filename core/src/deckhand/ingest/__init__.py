"""Ingestion: discover source files, load them as text, chunk, embed and store."""
