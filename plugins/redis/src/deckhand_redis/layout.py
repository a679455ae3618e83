"""Where a collection lives in Redis: index name, key names, and query escaping.

Everything of one collection sits under the prefix ``<index_name>:<collection>:``, so
tools sharing one server stay apart (different ``index_name`` or tool name), and
dropping a collection is one prefix scan:

* ``<p>doc:<sha1(record id)>`` -- a HASH per record, indexed by the search index
* ``<p>src:<sha1(source)>`` -- a SET of the record keys of one source (atomic swaps)
* ``<p>meta`` -- a HASH: the collection spec the index was created with
* ``<p>manifest`` -- a HASH: source path -> JSON FileState (the ingestion manifest)

The search index is named ``<index_name>:<collection>``.

Sources are tagged by a hash of their path (field ``source_tag``), not the path itself:
RediSearch TAG values are split on a separator character, trimmed and case-folded, so
paths such as ``a,b.md`` or ``Notes.md`` vs ``notes.md`` would collide. The hex digest
has none of those problems; the path itself is stored in the plain field ``source``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from deckhand.api import StoreError

_COLLECTION = re.compile(r"[A-Za-z0-9_.-]+")
# Characters RediSearch's query parser treats as syntax; anything else non-alphanumeric
# is escaped too, which the parser accepts.
_QUERY_SPECIAL = re.compile(r"[^A-Za-z0-9\u0080-\U0010ffff]")


def digest(value: str, length: int = 40) -> str:
    """Hex SHA-1 of ``value`` (a key name or tag, not a security measure)."""
    return hashlib.sha1(value.encode("utf-8"), usedforsecurity=False).hexdigest()[:length]


def escape_query_term(term: str) -> str:
    """Backslash-escape every character RediSearch's query syntax could interpret."""
    return _QUERY_SPECIAL.sub(lambda m: "\\" + m.group(0), term)


@dataclass(frozen=True)
class Layout:
    """Key and index names of one collection."""

    index_name: str
    collection: str

    def __post_init__(self) -> None:
        if not _COLLECTION.fullmatch(self.collection):
            raise StoreError(
                f"collection name {self.collection!r} may only use letters, digits, '_', '.' and '-' "
                "(it becomes part of Redis key names)"
            )

    @property
    def prefix(self) -> str:
        return f"{self.index_name}:{self.collection}:"

    @property
    def index(self) -> str:
        return f"{self.index_name}:{self.collection}"

    @property
    def doc_prefix(self) -> str:
        return self.prefix + "doc:"

    @property
    def meta(self) -> str:
        return self.prefix + "meta"

    @property
    def manifest(self) -> str:
        return self.prefix + "manifest"

    def doc_key(self, record_id: str) -> str:
        return self.doc_prefix + digest(record_id)

    def source_key(self, source: str) -> str:
        return self.prefix + "src:" + digest(source)

    @staticmethod
    def source_tag(source: str) -> str:
        return digest(source, 24)

    def source_filter(self, sources: list[str]) -> str:
        """A TAG clause matching any of ``sources`` (hex digests need no escaping)."""
        return "@source_tag:{" + " | ".join(self.source_tag(s) for s in sources) + "}"
