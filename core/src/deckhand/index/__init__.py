"""An opened collection, the centre of deckhand: :class:`~deckhand.index.opened_index.Index`.

A tool is its configuration, an :class:`Index` and the formatting of what the index answers
(:mod:`deckhand.tools.source_tool`); ingestion writes into the index's store, queries go through its
query engine, and nothing else holds the store.
"""

from deckhand.index.opened_index import Index, IndexOpened

__all__ = ["Index", "IndexOpened"]
