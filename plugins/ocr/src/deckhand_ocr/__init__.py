"""deckhand-ai-ocr: scanned PDFs, images and mail as sources, read offline (see :mod:`deckhand_ocr.engine`)."""
