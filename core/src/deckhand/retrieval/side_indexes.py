"""The query engine's side indexes: how they are built from the records and kept in the store next to them.

Keyword (BM25 postings and statistics), exact (phrase texts), definitions, cross-references
and the result locations are all derived from the stored records (:func:`build`). In a store that keeps
side indexes (:class:`deckhand.protocols.SideIndexStorage`, the sqlite store) they are saved
as one blob under :data:`SIDE_INDEX`, tagged with the records version they were built from:
a new process loads them instead of reading every record, and an index whose records changed
since (another process ingested) is never loaded, it is rebuilt. Elsewhere they are rebuilt
from the records at start-up, as before.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deckhand.chunking.headings import normalise_section_id
from deckhand.protocols import KeywordIndex
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import ReferenceResolver
from deckhand.types import Record

log = logging.getLogger("deckhand")

#: Name of the blob in the store's side indexes.
SIDE_INDEX = "hierarchical/indexes"
#: Format of the blob; a blob of another format is rebuilt.
FORMAT = 1


@dataclass
class SideIndexes:
    """Everything the query engine derives from the records to answer a hybrid query."""

    keyword: KeywordIndex
    keyword_strategy: str
    definitions: DefinitionIndex
    resolver: ReferenceResolver
    exact: ExactIndex
    locations: dict[str, tuple[str, str]]


def location_of(metadata: dict[str, Any]) -> str:
    """``A > B > C`` from a record's heading chain."""
    chain = metadata.get("parent_chain") or []
    return " > ".join(str(h) for h in chain)


def indexed_text(record: Record) -> str:
    """What keyword search sees: content plus context, heading chain, section id and defined terms.

    Parts already contained in the content (a title repeated as the first heading) are
    left out, so no word is counted twice just because it is both context and content.
    """
    meta = record.metadata
    content = record.content
    seen = content.lower()
    parts = []
    extras = [
        str(meta.get("context") or ""),
        *[str(h) for h in meta.get("parent_chain") or []],
        str(meta.get("section_label") or meta.get("section_id") or ""),
        *[str(t) for t in meta.get("defined_terms") or []],
    ]
    for extra in extras:
        extra = extra.strip()
        if extra and extra.lower() not in seen:
            parts.append(extra)
            seen += "\n" + extra.lower()
    parts.append(content)
    return "\n".join(parts)


def build(records: Sequence[Record], keyword: KeywordIndex, keyword_strategy: str) -> SideIndexes:
    """Every side index built from ``records`` (in order), the keyword index built into ``keyword``."""
    keyword.build((r.id, indexed_text(r)) for r in records)
    definitions = DefinitionIndex()
    definitions.add_records(records)
    resolver = ReferenceResolver()
    resolver.add_records(records)
    exact = ExactIndex(resolver, definitions, normalise_section_id)
    exact.build(records)
    locations = {r.id: (r.source, location_of(r.metadata)) for r in records}
    return SideIndexes(keyword, keyword_strategy, definitions, resolver, exact, locations)


def persistable(keyword: KeywordIndex) -> bool:
    """Whether ``keyword`` can be saved (the builtin ``bm25`` can; a store's own full text needs nothing saved)."""
    return callable(getattr(keyword, "to_bytes", None)) and callable(getattr(keyword, "restore", None))


def dump(indexes: SideIndexes) -> bytes:
    """``indexes`` as one blob for :func:`load` (the keyword index must be :func:`persistable`)."""
    keyword: Any = indexes.keyword
    meta = {
        "format": FORMAT,
        "keyword_strategy": indexes.keyword_strategy,
        "definitions": indexes.definitions.to_state(),
        "references": indexes.resolver.to_state(),
        "texts": indexes.exact.texts(),
        "locations": indexes.locations,
    }
    out = io.BytesIO()
    np.savez(
        out,
        meta=np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8),
        keyword=np.frombuffer(keyword.to_bytes(), dtype=np.uint8),
    )
    return out.getvalue()


def load(data: bytes, keyword: KeywordIndex, keyword_strategy: str) -> SideIndexes | None:
    """The indexes :func:`dump` wrote, with the keyword index restored into ``keyword``.

    None when the blob was written in another format, for another keyword strategy or
    settings, or cannot be read: the caller rebuilds from the records.
    """
    try:
        with np.load(io.BytesIO(data)) as arrays:
            meta = json.loads(bytes(arrays["meta"]).decode("utf-8"))
            keyword_bytes = arrays["keyword"].tobytes()
    except (OSError, ValueError, KeyError) as exc:
        log.warning("ignoring unreadable stored side indexes (%s); rebuilding them", exc)
        return None
    if meta.get("format") != FORMAT or meta.get("keyword_strategy") != keyword_strategy:
        return None
    restore: Any = getattr(keyword, "restore", None)
    if not callable(restore) or not restore(keyword_bytes):
        return None
    definitions = DefinitionIndex.from_state(meta["definitions"])
    resolver = ReferenceResolver.from_state(meta["references"])
    exact = ExactIndex(resolver, definitions, normalise_section_id)
    exact.restore(meta["texts"])
    locations = {rid: (str(where[0]), str(where[1])) for rid, where in meta["locations"].items()}
    return SideIndexes(keyword, keyword_strategy, definitions, resolver, exact, locations)
