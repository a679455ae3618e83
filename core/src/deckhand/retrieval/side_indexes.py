"""The query engine's side indexes: what it derives from the records, and how they are kept beside the store.

Keyword, exact (section ids, defined terms, quoted phrases), definitions, cross-references and the result
locations are all derived from the stored records (:func:`build`). With a keyword index that keeps itself
(:attr:`deckhand.bases.KeywordIndexBase.reads_records`, the ``tantivy`` strategy) in a store that names side
index files and keeps a record log (``StoreCapability.SIDE_INDEX_FILES`` and ``RECORD_LOG``: the sqlite
store), the look-ups are kept in a file of their own (:mod:`deckhand.retrieval.side_index_file`) and the
keyword index in its directory: a new process opens both instead of reading every record, and a change is
applied to both in place (:func:`update_file`). Anywhere else (the in-memory store, ``bm25`` or a plugin's
strategy) they are rebuilt from the records in memory (:class:`deckhand.retrieval.keeper.IndexKeeper` decides
which).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhand.bases import KeywordIndexBase
from deckhand.capabilities import record_log, side_index_files
from deckhand.chunking.headings import normalise_section_id
from deckhand.protocols import RecordLog, SideIndexStorage
from deckhand.retrieval import side_index_file
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import ReferenceResolver
from deckhand.types import Record, RecordChanges

log = logging.getLogger("deckhand")

#: Name of the side index file (and, in the store's side index table, the mark that replaced an earlier blob).
SIDE_INDEX = "hierarchical/indexes"
#: Kept under :data:`SIDE_INDEX` in the store (it replaces a blob an earlier version kept there).
FILE_MARK = b'{"side_index_file": 1}'


@dataclass
class SideIndexes:
    """Everything the query engine derives from the records to answer a hybrid query."""

    keyword: KeywordIndexBase
    keyword_strategy: str
    definitions: DefinitionIndex
    resolver: ReferenceResolver
    exact: ExactIndex
    locations: Mapping[str, tuple[str, str]]
    #: The side index file the look-ups read from (None: they are in memory); closed when collected.
    file: side_index_file.SideIndexFile | None = None
    #: Record id → store row, and the highest row, when built from a :class:`~deckhand.protocols.RecordLog`
    #: (the side index file written from them can be updated in place, :func:`update_file`).
    rows: Mapping[str, int] | None = None
    last_row: int | None = None

    def sources(self, record_ids: list[str]) -> dict[str, str]:
        """The sources of those of ``record_ids`` indexed: from a side index file in one read for them all."""
        locations = self.locations
        if isinstance(locations, side_index_file.Locations):
            found: Mapping[str, tuple[str, str]] = locations.many(record_ids)
        else:
            found = {i: locations[i] for i in record_ids if i in locations}
        return {record_id: where[0] for record_id, where in found.items()}

    def close(self) -> None:
        """Close the side index file the indexes read from, if any."""
        if self.file is not None:
            self.file.close()


class KeywordPhrases:
    """The exact modality's phrase texts (:class:`~deckhand.retrieval.phrase_match.PhraseTexts`) answered by a
    keyword index that keeps the records' own text (``tantivy``: phrase queries), with ``locations`` saying
    which records are indexed."""

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


def build(
    records: Sequence[Record], keyword: KeywordIndexBase, keyword_strategy: str, log_: RecordLog | None = None
) -> SideIndexes:
    """Every side index built from ``records`` (in order), the keyword index built into ``keyword``: one that
    reads records (:attr:`~deckhand.bases.KeywordIndexBase.reads_records`) brings itself up to ``log_`` (the
    store the records were read from, when it keeps one) or indexes the records, and answers the quoted
    phrases; any other gets the records' indexed texts, and the phrases are looked for in the contents held in
    memory."""
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
    """The look-ups besides the keyword index, in memory, over ``records`` (in order): a build's, or the new
    records' of an update in place (:func:`_delta`). The exact index's phrase texts are the caller's."""
    definitions = DefinitionIndex()
    definitions.add_records(records)
    resolver = ReferenceResolver()
    resolver.add_records(records)
    exact = ExactIndex(resolver, definitions, normalise_section_id)
    locations = {r.id: (r.source, location_of(r.metadata)) for r in records}
    return definitions, resolver, exact, locations


def file_path(side: SideIndexStorage, keyword: KeywordIndexBase) -> Path | None:
    """Where the look-ups are kept as a file (:mod:`~deckhand.retrieval.side_index_file`): a store that names
    one and keeps a record log (``StoreCapability.SIDE_INDEX_FILES`` and ``RECORD_LOG``), with a keyword index
    that keeps itself (``tantivy``); None to rebuild them in memory from the records."""
    files = side_index_files(side)
    if not keyword.reads_records or files is None or record_log(side) is None:
        return None
    return files.side_index_path(SIDE_INDEX)


def open_file(path: Path, version: int, keyword: KeywordIndexBase, keyword_strategy: str) -> SideIndexes | None:
    """The side indexes kept in ``path`` for the records at ``version``, quoted phrases answered by ``keyword``
    (which keeps itself: :func:`file_path`); None when there is none for them (the caller updates or rebuilds
    it)."""
    if not keyword.reads_records:
        return None
    opened = side_index_file.open_file(path, version, keyword_strategy)
    if opened is None:
        return None
    file, definitions, resolver, exact, locations = opened
    exact.attach(KeywordPhrases(keyword, locations))
    return SideIndexes(keyword, keyword_strategy, definitions, resolver, exact, locations, file)


def write_file(path: Path, version: int, indexes: SideIndexes) -> None:
    """``indexes`` (built in this process from a record log's records at ``version``) kept in ``path``."""
    if indexes.rows is None or indexes.last_row is None:
        raise ValueError("a side index file is written from a record log's records (their rows are needed)")
    side_index_file.write(
        path,
        version,
        indexes.keyword_strategy,
        indexes.definitions,
        indexes.resolver,
        indexes.locations,
        indexes.rows,
        indexes.last_row,
    )


def update_file(path: Path, log_: RecordLog, keyword_strategy: str) -> int | None:
    """Apply the records changed since the file at ``path`` was last brought up to date to it, in place
    (:func:`deckhand.retrieval.side_index_file.apply`); the records version it now holds, or None when it
    cannot be updated and is rebuilt instead: no such file, another format or strategy, or a store whose log
    no longer reaches back."""
    for _ in range(3):  # another process may update it meanwhile: then start from where it left the file
        meta = side_index_file.read_meta(path)
        if meta is None or meta.get("last_row") is None or not side_index_file.matches(meta, keyword_strategy):
            return None
        changes = log_.changes_since(int(meta["version"]), int(meta["last_row"]))
        if changes is None:
            return None
        if changes.version == meta["version"]:
            return changes.version
        if side_index_file.apply(path, _delta(meta, changes)):
            return changes.version
    return None


def _delta(meta: Mapping[str, Any], changes: RecordChanges) -> side_index_file.Delta:
    """``changes`` as the file keeps them: the new records in index order (source, chunk)."""
    added = sorted(changes.added, key=lambda item: (item[1].source, item[1].chunk_index))
    records = [record for _, record in added]
    definitions, resolver, _, locations = _derived(records)
    return side_index_file.Delta(
        from_version=int(meta["version"]),
        version=changes.version,
        last_row=changes.last_row,
        deleted_rows=changes.deleted,
        rows=[row for row, _ in added],
        ids=[r.id for r in records],
        sources=[r.source for r in records],
        locations=[locations[r.id][1] for r in records],
        definitions=definitions.to_state(),
        sections=resolver.to_state(),
    )
