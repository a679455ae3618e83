"""An opened collection, the centre of deckhand: :class:`~deckhand.index.opened_index.Index`."""

from deckhand.index.opened_index import Index, IndexOpened

__all__ = ["Index", "IndexOpened"]
