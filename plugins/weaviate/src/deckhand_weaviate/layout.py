"""Where one deckhand collection lives in Weaviate: two collection names and the keys of its objects.

Weaviate collection names must match ``[A-Z][_0-9A-Za-z]*`` and are compared without regard to
case, so a tool's ``index_name`` and name are not used as they are: each is reduced to letters,
digits and underscores, and an 8-character hash of the exact pair keeps two pairs that reduce
alike apart (``docs`` and ``Docs``). The records live in ``<name>``; the spec, the manifest and
the replacement markers in ``<name>_Meta``.

Text that is matched exactly (a source path, a record id) is filtered through its SHA-1 hex
digest in a ``field``-tokenized property: Weaviate's ``field`` tokenization trims whitespace,
and the digest keeps paths such as ``" a.md"`` and ``"a.md"`` apart.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass

_UNSAFE = re.compile(r"[^0-9A-Za-z_]+")
#: Longest part of a name taken from the user's index and tool names (Weaviate allows 255 characters).
_PART = 60
#: Namespace of every object uuid this plugin derives (uuid5), so ids are stable across processes.
NAMESPACE = uuid.UUID("6f1c2a4e-3b59-5d8e-9c1a-7e4b2d0f8a13")


def digest(text: str) -> str:
    """The SHA-1 hex digest of ``text``: the exact-match key of a source or record id."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def _part(text: str) -> str:
    cleaned = _UNSAFE.sub("_", text).strip("_")
    return cleaned[:_PART] or "x"


@dataclass(frozen=True)
class Layout:
    """The Weaviate names of collection ``collection`` under ``index_name``."""

    index_name: str
    collection: str

    @property
    def tag(self) -> str:
        """8 hex characters identifying the exact ``(index_name, collection)`` pair."""
        return digest(f"{self.index_name}\x00{self.collection}")[:8]

    @property
    def records(self) -> str:
        """The collection holding the records (with their vectors)."""
        return f"Deckhand_{_part(self.index_name)}_{_part(self.collection)}_{self.tag}"

    @property
    def meta(self) -> str:
        """The side collection holding the spec, the manifest and the replacement markers."""
        return f"{self.records}_Meta"


def record_uuid(record_id: str, generation: str) -> uuid.UUID:
    """The object uuid of record ``record_id`` written by ``generation`` (versions of one id do not collide)."""
    return uuid.uuid5(NAMESPACE, f"record\x00{generation}\x00{record_id}")


def entry_uuid(source: str) -> uuid.UUID:
    """The object uuid of the manifest entry of ``source``."""
    return uuid.uuid5(NAMESPACE, f"source\x00{source}")


#: The object uuid of the collection's spec in the side collection.
SPEC_UUID = uuid.uuid5(NAMESPACE, "spec")


def upsert_generation(source: str) -> str:
    """The generation of records written by ``upsert`` (not by ``replace_source``) for ``source``."""
    return "u" + digest(source)[:31]
