"""deckhand ui: a retrieval workbench in the browser (``deckhand ui``; see docs/ui.md)."""
