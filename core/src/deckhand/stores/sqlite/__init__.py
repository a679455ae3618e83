"""deckhand's default store: a persistent collection in an SQLite file (``database.provider: sqlite``).

The front class :class:`SQLiteStore` (:mod:`.store`) holds the connection, the lock and the loaded
matrix, and delegates to the modules beside it:

- :mod:`.transactions`: read snapshots, write transactions (the records' version, the deletion log),
  creating and dropping a collection;
- :mod:`.writes`: inserting and deleting records, the manifest entry of a source;
- :mod:`.reads`: rows by source or filter (cached), records by row or id, the manifest;
- :mod:`.matrix`: the vectors loaded into this process, kept up to date, ranked exactly;
- :mod:`.approximate`: the approximate index as a store uses it (which snapshot, its answers, its upkeep);
  :mod:`.ann` the HNSW graph's files (build, open, record) and :mod:`.ivf` the IVF index;
- :mod:`.record_log`: which records changed since a version (for side index files);
- :mod:`.side_indexes`: side indexes kept in the file or beside it;
- :mod:`.options`: ``database.options`` and the store's capabilities;
- :mod:`.rows`: a collection's and a record's rows; :mod:`.filters`: filters as ``WHERE`` clauses;
  :mod:`.file`: the file itself (opening, locking, stamping, checking, setting a damaged one aside).
"""

from __future__ import annotations

from deckhand.stores.sqlite.file import index_path
from deckhand.stores.sqlite.options import SQLITE_CAPABILITIES, SQLiteOptions
from deckhand.stores.sqlite.store import SQLiteStore

__all__ = ["SQLITE_CAPABILITIES", "SQLiteOptions", "SQLiteStore", "index_path"]
