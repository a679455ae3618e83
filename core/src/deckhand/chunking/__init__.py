"""Splitting documents into chunks: fixed token windows and the structure-aware chunker."""
