"""deckhand's default store: a persistent collection in an SQLite file (``database.provider: sqlite``).

The front class :class:`SQLiteStore` (:mod:`.store`) keeps the collection's records, manifest and
side indexes; beside it :mod:`.ann` holds the approximate (HNSW) index and the store's options and
capabilities, :mod:`.file` the file itself (opening, locking, stamping, checking, setting a damaged
one aside) and :mod:`.filters` the translation of filters into SQLite ``WHERE`` clauses.
"""

from __future__ import annotations

from deckhand.stores.sqlite.file import index_path
from deckhand.stores.sqlite.options import SQLITE_CAPABILITIES, SQLiteOptions
from deckhand.stores.sqlite.store import SQLiteStore

__all__ = ["SQLITE_CAPABILITIES", "SQLiteOptions", "SQLiteStore", "index_path"]
