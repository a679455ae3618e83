"""The query engine's side indexes: how they are built from the records and kept in the store next to them.

Keyword (BM25 postings and statistics), exact (phrase texts), definitions, cross-references
and the result locations are all derived from the stored records (:func:`build`). In a store that keeps
side indexes (:class:`deckhand.protocols.SideIndexStorage`, the sqlite store) they are saved
as one blob under :data:`SIDE_INDEX`, tagged with the records version they were built from:
a new process loads them instead of reading every record, and an index whose records changed
since (another process ingested) is never loaded, it is rebuilt. Elsewhere they are rebuilt
from the records at start-up, as before.

A store that also names a file per side index (:class:`deckhand.protocols.SideIndexFiles`, the
sqlite store) gets them, with the builtin ``bm25`` keyword strategy, as a SQLite file of their
own instead (:mod:`deckhand.retrieval.side_index_file`): a new process opens it and each query
reads only its terms' postings, its phrases' texts and its definitions' rows, so start-up does
not grow with the corpus. Other keyword strategies keep the blob.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deckhand.chunking.headings import normalise_section_id
from deckhand.protocols import KeywordIndex, RecordKeywordIndex, RecordLog, SideIndexFiles, SideIndexStorage
from deckhand.retrieval import side_index_file
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.definition_lookup import DefinitionIndex
from deckhand.retrieval.phrase_match import ExactIndex
from deckhand.retrieval.references import ReferenceResolver
from deckhand.types import Record, RecordChanges

log = logging.getLogger("deckhand")

#: Name of the blob in the store's side indexes.
SIDE_INDEX = "hierarchical/indexes"
#: Format of the blob; a blob of another format is rebuilt.
FORMAT = 1
#: Changes since a side index file's build (records deleted plus added) past which it is rebuilt rather than
#: updated in place: updated documents are weighted with the build's statistics, and deleted ones leave their
#: postings behind, so the drift from a fresh build stays within what a tenth of the corpus can cause.
REBUILD_SHARE = 0.1
#: Kept under :data:`SIDE_INDEX` instead of the blob when the indexes are in a side index file (it replaces a blob
#: of an earlier version, and marks the records version the file was built from).
FILE_MARK = b'{"side_index_file": 1}'


@dataclass
class SideIndexes:
    """Everything the query engine derives from the records to answer a hybrid query."""

    keyword: KeywordIndex
    keyword_strategy: str
    definitions: DefinitionIndex
    resolver: ReferenceResolver
    exact: ExactIndex
    locations: Mapping[str, tuple[str, str]]
    #: The side index file the indexes read from (None: they are in memory); close it when done with them.
    file: side_index_file.SideIndexFile | None = None
    #: Record id → store row, and the highest row, when built from a :class:`~deckhand.protocols.RecordLog`
    #: (a side index file written with them can be updated in place, :func:`update_file`).
    rows: Mapping[str, int] | None = None
    last_row: int | None = None

    def close(self) -> None:
        """Close the side index file the indexes read from, if any."""
        if self.file is not None:
            self.file.close()


class KeywordPhrases:
    """The exact modality's phrase texts (:class:`~deckhand.retrieval.phrase_match.PhraseTexts`) answered by a
    keyword index that keeps the records' own text (``tantivy``: phrase queries), with ``locations`` saying
    which records are indexed."""

    def __init__(self, keyword: RecordKeywordIndex, locations: Mapping[str, tuple[str, str]]) -> None:
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
    records: Sequence[Record], keyword: KeywordIndex, keyword_strategy: str, record_log: RecordLog | None = None
) -> SideIndexes:
    """Every side index built from ``records`` (in order), the keyword index built into ``keyword``: a
    :class:`~deckhand.protocols.RecordKeywordIndex` brings itself up to ``record_log`` (the store the records
    were read from, when it keeps one) or indexes the records, any other gets their indexed texts."""
    if isinstance(keyword, RecordKeywordIndex):
        if record_log is not None:
            keyword.sync(record_log)
        else:
            keyword.index_records(records)
    else:
        keyword.build((r.id, indexed_text(r)) for r in records)
    built = SideIndexes(keyword, keyword_strategy, *_derived(records))
    if isinstance(keyword, RecordKeywordIndex):
        built.exact.attach(KeywordPhrases(keyword, built.locations))
    return built


def _derived(
    records: Sequence[Record],
) -> tuple[DefinitionIndex, ReferenceResolver, ExactIndex, dict[str, tuple[str, str]]]:
    """The indexes besides the keyword one, in memory, over ``records`` (in order): a build's, or the new
    records' of an update in place (:func:`_delta`)."""
    definitions = DefinitionIndex()
    definitions.add_records(records)
    resolver = ReferenceResolver()
    resolver.add_records(records)
    exact = ExactIndex(resolver, definitions, normalise_section_id)
    exact.build(records)
    locations = {r.id: (r.source, location_of(r.metadata)) for r in records}
    return definitions, resolver, exact, locations


def _postings(keyword: KeywordIndex) -> BM25Index | None:
    """The keyword index whose postings the side index file holds: the builtin ``bm25`` one; None for a
    :class:`~deckhand.protocols.RecordKeywordIndex`, which keeps its own index (the file holds the others)."""
    return keyword if isinstance(keyword, BM25Index) else None


def file_path(side: SideIndexStorage, keyword: KeywordIndex) -> Path | None:
    """Where the side indexes are kept as a file (:mod:`~deckhand.retrieval.side_index_file`): a store that
    names one, with the builtin ``bm25`` keyword index or one that keeps itself (``tantivy``); None to keep
    them as a blob."""
    if not isinstance(keyword, (BM25Index, RecordKeywordIndex)) or not isinstance(side, SideIndexFiles):
        return None
    return side.side_index_path(SIDE_INDEX)


def open_file(path: Path, version: int, keyword: KeywordIndex, keyword_strategy: str) -> SideIndexes | None:
    """The side indexes kept in ``path`` for the records at ``version``, a ``bm25`` ``keyword`` reading its
    postings; None when there is none for them (the caller rebuilds and :func:`write_file`-s)."""
    if not isinstance(keyword, (BM25Index, RecordKeywordIndex)):
        return None
    opened = side_index_file.open_file(path, version, _postings(keyword), keyword_strategy)
    if opened is None:
        return None
    file, definitions, resolver, exact, locations = opened
    if isinstance(keyword, RecordKeywordIndex):
        exact.attach(KeywordPhrases(keyword, locations))
    return SideIndexes(keyword, keyword_strategy, definitions, resolver, exact, locations, file)


def write_file(path: Path, version: int, indexes: SideIndexes) -> None:
    """``indexes`` (built in this process from the records at ``version``) kept in ``path`` for :func:`open_file`."""
    if not isinstance(indexes.keyword, (BM25Index, RecordKeywordIndex)):
        raise TypeError("only the builtin bm25 keyword index, or one that keeps itself, goes with a side index file")
    side_index_file.write(
        path,
        version,
        indexes.keyword_strategy,
        _postings(indexes.keyword),
        indexes.definitions,
        indexes.resolver,
        indexes.exact,
        indexes.locations,
        indexes.rows,
        indexes.last_row,
    )


def update_file(path: Path, log_: RecordLog, keyword: KeywordIndex, keyword_strategy: str) -> int | None:
    """Apply the records changed since the file at ``path`` was last brought up to date to it, in place
    (:func:`deckhand.retrieval.side_index_file.apply`); the records version it now holds, or None when it
    cannot be updated and is rebuilt instead: no such file, another format or settings, a store whose log
    no longer reaches back, or (with ``bm25`` postings, weighted with the build's statistics) changes since the
    build past :data:`REBUILD_SHARE` of it."""
    if not isinstance(keyword, (BM25Index, RecordKeywordIndex)):
        return None
    postings = _postings(keyword)
    for _ in range(3):  # another process may update it meanwhile: then start from where it left the file
        meta = side_index_file.read_meta(path)
        if meta is None or meta.get("last_row") is None:
            return None
        if not side_index_file.matches(meta, keyword_strategy, postings):
            return None
        changes = log_.changes_since(int(meta["version"]), int(meta["last_row"]))
        if changes is None:
            return None
        if changes.version == meta["version"]:
            return changes.version
        if postings is not None and int(meta.get("changed", 0)) + len(changes.deleted) + len(
            changes.added
        ) > REBUILD_SHARE * max(int(meta.get("built", 0)), 1):
            return None
        if side_index_file.apply(path, _delta(meta, changes, postings)):
            return changes.version
    return None


def _delta(meta: Mapping[str, Any], changes: RecordChanges, keyword: BM25Index | None) -> side_index_file.Delta:
    """``changes`` as the file keeps them: the new records in index order (source, chunk), each analysed for
    ``keyword``'s postings (None: the file holds none)."""
    added = sorted(changes.added, key=lambda item: (item[1].source, item[1].chunk_index))
    records = [record for _, record in added]
    definitions, resolver, exact, locations = _derived(records)
    texts = exact.texts()
    return side_index_file.Delta(
        from_version=int(meta["version"]),
        version=changes.version,
        last_row=changes.last_row,
        deleted_rows=changes.deleted,
        rows=[row for row, _ in added],
        ids=[r.id for r in records],
        sources=[r.source for r in records],
        locations=[locations[r.id][1] for r in records],
        texts=[texts[r.id] for r in records] if keyword is not None else [""] * len(records),
        terms=[keyword.analyzer.terms(indexed_text(r)) if keyword is not None else [] for r in records],
        definitions=definitions.to_state(),
        sections=resolver.to_state(),
    )


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
        "locations": dict(indexes.locations),
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
    if data == FILE_MARK:
        return None
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
