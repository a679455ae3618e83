"""The query engine's side indexes (keyword, exact, definitions, references, locations), derived from the records:
kept in the ``tantivy`` index beside a store with a record log, else rebuilt in memory (:func:`build`)."""

from __future__ import annotations

import abc
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deckhand.bases import KeywordIndexBase
from deckhand.capabilities import RecordLog
from deckhand.chunking.headings import normalise_section_id
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import ReferenceResolver
from deckhand.types import Record

log = logging.getLogger("deckhand")

#: Name of the side index file where earlier versions kept the look-ups (removed when found: tantivy holds them).
OLD_FILE = "hierarchical/indexes"


class KeptLocations(Mapping[str, tuple[str, str]]):
    """Record id → (source, location), read per id from where the side indexes are kept."""

    @abc.abstractmethod
    def many(self, record_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Those of ``record_ids`` indexed, read together (a query's candidates)."""


@dataclass
class SideIndexes:
    """Everything the query engine derives from the records to answer a hybrid query."""

    keyword: KeywordIndexBase
    keyword_strategy: str
    definitions: DefinitionIndex
    resolver: ReferenceResolver
    exact: ExactIndex
    locations: Mapping[str, tuple[str, str]]

    def sources(self, record_ids: list[str]) -> dict[str, str]:
        """The sources of those of ``record_ids`` indexed: from where they are kept in one read for them all."""
        locations = self.locations
        if isinstance(locations, KeptLocations):
            found: Mapping[str, tuple[str, str]] = locations.many(record_ids)
        else:
            found = {i: locations[i] for i in record_ids if i in locations}
        return {record_id: where[0] for record_id, where in found.items()}


class KeywordPhrases:
    """The exact modality's phrase texts answered by a keyword index that keeps the records' text (``tantivy``)."""

    def __init__(self, keyword: KeywordIndexBase, locations: Mapping[str, tuple[str, str]]) -> None:
        self.keyword = keyword
        self.locations = locations

    def __len__(self) -> int:
        return len(self.locations)

    def __contains__(self, record_id: object) -> bool:
        return record_id in self.locations

    def present(self, record_ids: list[str]) -> set[str]:
        """All of ``record_ids``: sections and definitions are kept from the same records as the locations."""
        return set(record_ids)

    def containing(self, phrases: tuple[str, ...], limit: int) -> list[tuple[int, int, str]]:
        return self.keyword.phrases(phrases, limit)


def location_of(metadata: dict[str, Any]) -> str:
    """``A > B > C`` from a record's heading chain."""
    chain = metadata.get("parent_chain") or []
    return " > ".join(str(h) for h in chain)


def indexed_text(record: Record) -> str:
    """What keyword search sees: content plus context, heading chain, section id and defined terms, each part
    already in the content left out."""
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


def build(
    records: Sequence[Record], keyword: KeywordIndexBase, keyword_strategy: str, log_: RecordLog | None = None
) -> SideIndexes:
    """Every side index built from ``records``: a keyword index that reads records syncs itself to ``log_`` (or
    indexes them) and answers quoted phrases; any other gets the indexed texts and phrases are matched in memory."""
    if keyword.reads_records:
        if log_ is not None:
            keyword.sync(log_)
        else:
            keyword.index_records(records)
    else:
        keyword.build((r.id, indexed_text(r)) for r in records)
    built = SideIndexes(keyword, keyword_strategy, *_derived(records))
    if keyword.reads_records:
        built.exact.attach(KeywordPhrases(keyword, built.locations))
    else:
        built.exact.build(records)
    return built


def _derived(
    records: Sequence[Record],
) -> tuple[DefinitionIndex, ReferenceResolver, ExactIndex, dict[str, tuple[str, str]]]:
    """The look-ups besides the keyword index, built in memory over ``records`` (phrase texts are the caller's)."""
    definitions = DefinitionIndex()
    definitions.add_records(records)
    resolver = ReferenceResolver()
    resolver.add_records(records)
    exact = ExactIndex(resolver, definitions, normalise_section_id)
    locations = {r.id: (r.source, location_of(r.metadata)) for r in records}
    return definitions, resolver, exact, locations
