"""deckhand-ai-code: source files as documents, chunked at their syntax (see :mod:`deckhand_code.chunker`)."""
