"""The ``tantivy`` keyword strategy: BM25 over a tantivy index per collection, beside the store's file (else in
memory), kept current from the store's record log (docs/default-store.md); it also answers quoted phrases,
filters as allowed rows, and the look-ups of :mod:`deckhand.retrieval.tantivy_lookups`."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import stat
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from deckhand.bases import KeywordIndexBase
from deckhand.capabilities import RecordLog, record_log, side_index_files
from deckhand.filters.conditions import Filter
from deckhand.paths import read_no_link
from deckhand.retrieval.analysis import Analyzer, compound_whole, identifier_wholes, identifier_words
from deckhand.retrieval.definition_lookup import definitions_of, term_key
from deckhand.retrieval.references import section_ids_of
from deckhand.retrieval.side_indexes import indexed_text, location_of
from deckhand.types import Record, RowArray

if TYPE_CHECKING:
    import tantivy

log = logging.getLogger("deckhand")

#: Name of the side index (a directory beside the store's file).
SIDE_INDEX = "keyword-tantivy"
#: Layout of the index (fields, analysis); an index written with another is rebuilt.
FORMAT = 6
#: tantivy's own BM25 k1 and b (fixed by tantivy; documentation ranked better with the builtin's 0.9 and 0.4, issue
#: 43, so hits are rescored with the options' k1 and b from each term's frequency, exact length and tantivy's idf).
_TANTIVY_K1 = 1.2
_TANTIVY_B = 0.75
#: Hits read per one wanted when their scores are computed again with other k1 and b (tantivy ranks them).
_RESCORE_OVERREAD = 2
#: A query term in at most this many documents per hit is read from the whole index when rescoring.
_UNRESTRICTED = 4
#: The analyzers registered on every opened index (tantivy does not persist custom tokenizers).
_TERMS_TOKENIZER = "deckhand_terms"
_PATH_TOKENIZER = "deckhand_path"
_EXACT_TOKENIZER = "deckhand_exact"
#: The builtin BM25's analysis, which gives ``body``'s and ``heading``'s terms and a query's.
_ANALYZER = Analyzer()
#: Words of letters and digits, dots kept inside them (``analysis.words`` then stripping outer dots).
_WORD = r"[\p{L}\p{N}]+(?:\.+[\p{L}\p{N}]+)*"
#: Words of a path: letters and digits only.
_PATH_WORD = r"[\p{L}\p{N}]+"
#: Longer tokens are dropped (tantivy refuses terms past 64 KiB; no word of prose comes near this).
_LONGEST = 100
#: Indexing memory of a writer per thread (tantivy needs at least 15 MB): more means fewer segments to merge.
_WRITER_HEAP = 128_000_000
#: Threads of a writer that rebuilds the whole index (one per core, up to four); an update writes with one.
_BUILD_THREADS = max(1, min(os.cpu_count() or 1, 4))
#: How long a sync waits for another process's writer to finish before searching the index as it is.
_LOCK_WAIT_S = 30.0
#: A hit of a tantivy search: its score and address.
_Hit = tuple[float, "tantivy.DocAddress"]
#: Records per batch read from the store for a full build.
_BATCH = 2000
#: The file in the index's directory naming the store log position its last commit reached.
_POSITION_FILE = "position.json"
#: A filter allowing at most this many rows is a term-set clause of the query; more are checked on the hits.
_TERM_SET_ROWS = 4096
#: Hits read per allowed one wanted, at first, when a filter is checked on the hits (then four times more).
_OVERREAD = 2.0


class TantivyOptions(BaseModel):
    """Options of the ``tantivy`` keyword strategy (``keyword_strategy: {name: tantivy, ...}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    heading_boost: float = Field(default=0.0, ge=0.0, le=10.0, description="Extra weight of a heading match.")
    path_boost: float = Field(default=0.0, ge=0.0, le=10.0, description="Weight of a match in the file's path.")
    k1: float = Field(default=0.9, gt=0.0, le=10.0, description="BM25 term-frequency saturation of the text.")
    b: float = Field(default=0.4, ge=0.0, le=1.0, description="BM25 length normalisation of the text.")


def _analyzer(word: str | None = None) -> tantivy.TextAnalyzer:
    """Words of the pattern ``word``, lower-cased; None: terms already analysed in Python, separated by spaces."""
    import tantivy

    if word is None:
        return (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
            .filter(tantivy.Filter.remove_long(_LONGEST))
            .build()
        )
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(word))
        .filter(tantivy.Filter.remove_long(_LONGEST))
        .filter(tantivy.Filter.lowercase())
        .build()
    )


def _schema() -> tantivy.Schema:
    import tantivy

    builder = tantivy.SchemaBuilder()
    for name in ("body", "heading"):  # term frequencies only: BM25 needs no positions (phrases are ``content``'s)
        builder.add_text_field(name, tokenizer_name=_TERMS_TOKENIZER, index_option="freq")
    builder.add_text_field("path", tokenizer_name=_PATH_TOKENIZER, index_option="freq")
    builder.add_text_field("content", tokenizer_name=_EXACT_TOKENIZER, index_option="position")
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("file_type", tokenizer_name="raw")
    builder.add_integer_field("row", indexed=True, fast=True)
    builder.add_integer_field("length", fast=True)  # ``body``'s terms: BM25 with other k1 and b
    builder.add_text_field("every", tokenizer_name="raw", index_option="basic")  # one term: tantivy's N
    # the look-ups (:mod:`deckhand.retrieval.tantivy_lookups`): defined terms, section ids and source untokenised
    for name in ("term", "section"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("source", stored=True, fast=True, tokenizer_name="raw", index_option="basic")
    builder.add_integer_field("chunk", stored=True)
    builder.add_bytes_field("place", stored=True)  # JSON: location, section id, definitions
    return builder.build()


def ident_terms(text: str, *, query: bool = False) -> list[str]:
    """The terms the identifiers in ``text`` add to its words, as the builtin BM25 analyses them; for a ``query``
    only each identifier's whole."""
    added = identifier_wholes(text) if query else identifier_words(text)
    return [t for t in map(_ANALYZER.term, added) if t is not None and len(t) <= _LONGEST]


def terms_text(text: str) -> str:
    """The value of ``body`` or ``heading`` for ``text``: its builtin BM25 terms separated by spaces (both
    strategies index the same terms and lengths: tantivy's own tokenizer ranked documentation differently, issue 43)."""
    return " ".join(_ANALYZER.terms(text))


def heading_text(record: Record) -> str:
    """The ``heading`` field: the heading chain, weighted ``heading_boost`` on top of its match in ``body``."""
    return "\n".join(str(h) for h in record.metadata.get("parent_chain") or [])


class TantivyIndex(KeywordIndexBase):
    """A tantivy index over a collection's records: a keyword strategy that reads records and filters searches."""

    reads_records = True
    runs_beside = True

    @classmethod
    def from_options(cls, store: object, cache_path: Path | None, options: TantivyOptions) -> TantivyIndex:
        """The registered factory: on disk beside a store with side index files and a record log, else in memory."""
        files, log_ = side_index_files(store), record_log(store)
        if files is not None and log_ is not None:
            return cls(options, lambda: files.side_index_path(SIDE_INDEX), log_.rows_matching)
        return cls(options)

    def __init__(
        self,
        options: TantivyOptions | None = None,
        location: Callable[[], Path | None] | None = None,
        rows_matching: Callable[[Filter], RowArray] | None = None,
    ):
        self.options = options or TantivyOptions()
        self._location = location or (lambda: None)
        #: The store's rows a filter allows (None: an index in memory, whose documents carry no rows).
        self._rows_matching = rows_matching
        #: Kept on disk beside a store (else in memory, rebuilt from the records).
        self.kept = location is not None
        #: What the last :meth:`sync` did: ``loaded`` (nothing to do), ``updated`` (changes applied) or ``rebuilt``.
        self.synced = "loaded"
        self._lock = threading.Lock()
        self._index: tantivy.Index | None = None
        self._path: Path | None = None
        self._schema: tantivy.Schema | None = None
        #: Reloads of the searcher so far (``index.searcher()`` gives a new object each call).
        self._generation = 0
        #: By generation: the documents tantivy's idf counts and the live ones' average ``length`` (N and avgdl).
        self._statistics: tuple[int, int, float] | None = None
        #: The query's analyzers: paths, exact phrases (text and headings: :data:`_ANALYZER`, in Python).
        self._analyzers: tuple[tantivy.TextAnalyzer, tantivy.TextAnalyzer] | None = None

    # -- opening --------------------------------------------------------------------
    def settings(self) -> str:
        """What the indexed documents depend on besides the records; an index written with others is rebuilt."""
        return json.dumps({"format": FORMAT, "word": _WORD, "path": _PATH_WORD, "longest": _LONGEST}, sort_keys=True)

    def _open(self) -> tantivy.Index:
        """The index at the store's current location (opened or created; reopened when the location changed)."""
        path = self._location()
        if self._index is not None and path == self._path:
            return self._index
        import tantivy

        schema = _schema()
        if path is None:
            index = tantivy.Index(schema)
        else:
            _set_aside_if_damaged(path)
            saved = _saved(path)
            if saved is not None and saved.get("settings") != self.settings():  # e.g. an older deckhand's layout
                log.info("keyword index %s was written with another layout; rebuilding it from the records", path)
                shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True, exist_ok=True)
            try:
                index = tantivy.Index(schema, path=str(path), reuse=True)
            except (ValueError, OSError) as exc:
                log.warning("keyword index %s cannot be opened (%s); rebuilding it from the records", path, exc)
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir(parents=True, exist_ok=True)
                index = tantivy.Index(schema, path=str(path), reuse=False)
        index.register_tokenizer(_TERMS_TOKENIZER, _analyzer())
        index.register_tokenizer(_PATH_TOKENIZER, _analyzer(_PATH_WORD))
        index.register_tokenizer(_EXACT_TOKENIZER, _analyzer(_WORD))
        index.config_reader("manual")
        self._index, self._path, self._schema = index, path, schema
        self._analyzers = (_analyzer(_PATH_WORD), _analyzer(_WORD))
        return index

    # -- building ---------------------------------------------------------------------
    def build(self, docs: Iterable[tuple[str, str]]) -> None:
        """(Re)build from ``(record id, indexed text)`` pairs, all in the ``body`` field (the plain contract)."""
        with self._lock:
            index = self._open()
            self._rewrite(index, ((None, _plain(record_id, text)) for record_id, text in docs))

    def index_records(self, records: Sequence[Record]) -> None:
        """(Re)build from ``records`` (a store without a record log: every update is a rebuild)."""
        with self._lock:
            index = self._open()
            self._rewrite(index, ((None, _document(r, None)) for r in records))

    def sync(self, records: RecordLog) -> None:
        """Bring the index to the store's current log position (the changes since its last commit, or a rebuild),
        then reload the searcher; waits (up to a deadline) while another process writes it."""
        with self._lock:
            index = self._open()
            deadline = time.monotonic() + _LOCK_WAIT_S
            while True:
                self._reload(index)
                done = self._apply(index, records)
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if not done:
                log.warning("keyword index %s is being written by another process; searching it as it is", self._path)
            self._reload(index)

    def _apply(self, index: tantivy.Index, records: RecordLog) -> bool:
        """One attempt of :meth:`sync`; False when another writer holds the index."""
        position = self.position()
        current = records.log_position()
        if position is not None and position == current:
            self.synced = "loaded"
            return True
        changes = records.changes_since(*position) if position is not None else None
        try:
            writer = _writer(index, full=changes is None)
        except ValueError:  # LockBusy: another process is writing it
            return False
        if changes is None:
            version, last_row = current
            added = (
                (row, _document(record, row))
                for row, record in records.iter_rows(_BATCH)
                if row <= last_row  # rows past the position read come with the next sync
            )
            self._write(writer, added, deleted=None, position=(version, last_row))
            self.synced = "rebuilt"
            log.info("keyword index %s rebuilt from the records (version %d)", self._path, version)
        else:
            self._write(
                writer,
                ((row, _document(record, row)) for row, record in changes.added),
                deleted=changes.deleted,
                position=(changes.version, changes.last_row),
            )
            self.synced = "updated"
        return True

    def _rewrite(self, index: tantivy.Index, docs: Iterable[_Row]) -> None:
        """Replace every document by ``docs`` in one commit."""
        self._write(_writer(index, full=True), docs, deleted=None, position=None)
        self._reload(index)

    def _reload(self, index: tantivy.Index) -> None:
        """Reload the searcher and count it (the collection statistics of the one before no longer hold)."""
        index.reload()
        self._generation += 1

    def _write(
        self,
        writer: tantivy.IndexWriter,
        docs: Iterable[_Row],
        *,
        deleted: Sequence[int] | None,
        position: tuple[int, int] | None,
    ) -> None:
        """Delete the rows ``deleted`` (None: all), add ``docs``, commit once, write ``position``, finish merges."""
        try:
            if deleted is None:
                writer.delete_all_documents()
            else:
                for gone in deleted:
                    writer.delete_documents_by_term("row", gone)
            replay = deleted is not None  # a replay after a kill between commit and position: no duplicate
            for row, doc in docs:
                if row is not None and replay:
                    writer.delete_documents_by_term("row", row)
                writer.add_document(doc)
            writer.commit()
            if position is not None:
                self._save_position(position)
        except BaseException:
            with contextlib.suppress(ValueError):
                writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()

    def _save_position(self, position: tuple[int, int]) -> None:
        """``position`` (and the settings) written beside the index, renamed into place after the commit."""
        assert self._path is not None
        text = json.dumps({"settings": self.settings(), "version": position[0], "last_row": position[1]})
        fd, temporary = tempfile.mkstemp(prefix=".position-", dir=self._path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self._path / _POSITION_FILE)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def position(self) -> tuple[int, int] | None:
        """The store log position the index's last commit reached (None: none known, or other settings)."""
        saved = _saved(self._path) if self._path is not None else None
        try:
            if saved is None or saved["settings"] != self.settings():
                return None
            return int(saved["version"]), int(saved["last_row"])
        except (ValueError, KeyError, TypeError):
            return None

    # -- querying ---------------------------------------------------------------------
    def __len__(self) -> int:
        """Records indexed."""
        index = self._index
        return 0 if index is None else int(index.searcher().num_docs)

    def _query(self, query: str) -> tantivy.Query | None:
        """``query``'s analysed terms, each looked for in every field at its weight (None: no term)."""
        import tantivy

        schema, analyzers = self._schema, self._analyzers
        if schema is None or analyzers is None:
            return None
        terms = [t for t in _ANALYZER.query_terms(query) if len(t) <= _LONGEST]
        path_terms = analyzers[0].analyze(query)
        clauses = []
        for field, boost, words in (
            ("body", 1.0, terms),
            ("heading", self.options.heading_boost, terms),
            ("path", self.options.path_boost, path_terms),
        ):
            if boost <= 0:
                continue
            for term in words:
                q = tantivy.Query.term_query(schema, field, term)
                clauses.append((tantivy.Occur.Should, q if boost == 1.0 else tantivy.Query.boost_query(q, boost)))
        return tantivy.Query.boolean_query(clauses) if clauses else None

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Best ``k`` ``(record id, score)`` pairs, best first; records sharing no term are left out."""
        index, built = self._index, self._query(query)
        if index is None or built is None or k <= 0:
            return []
        generation, searcher = self._generation, index.searcher()
        total = max(searcher.num_docs, 1)
        read = min(total, k * self._overread())
        hits = self._rescored(searcher, generation, query, searcher.search(built, read, count=False).hits)[:k]
        return [(str(searcher.doc(address).get_first("id")), float(score)) for score, address in hits]

    def _overread(self) -> int:
        """Hits read per one wanted: more when they are scored again with other k1 and b."""
        return 1 if (self.options.k1, self.options.b) == (_TANTIVY_K1, _TANTIVY_B) else _RESCORE_OVERREAD

    def _collection_statistics(self, searcher: tantivy.Searcher, generation: int) -> tuple[int, float]:
        """The document count tantivy's idf uses (deleted ones until merged) and the live ones' average length."""
        import tantivy

        if self._statistics is None or self._statistics[0] != generation:
            found = searcher.aggregate(tantivy.Query.all_query(), {"avgdl": {"avg": {"field": "length"}}})
            counted = max(int(searcher.doc_freq("every", "1")), searcher.num_docs, 1)
            self._statistics = generation, counted, float(found["avgdl"]["value"] or 0.0)
        return self._statistics[1], self._statistics[2]

    def _rescored(self, searcher: tantivy.Searcher, generation: int, query: str, hits: list[_Hit]) -> list[_Hit]:
        """``hits`` with their ``body`` scores computed again with the options ``k1`` and ``b``, best first (a term
        rarer than :data:`_UNRESTRICTED` times the hits is read from the whole index, cheaper than a filter)."""
        import tantivy

        k1, b, schema = self.options.k1, self.options.b, self._schema
        if (k1, b) == (_TANTIVY_K1, _TANTIVY_B) or not hits or schema is None:
            return hits
        addresses = [address for _, address in hits]
        keys = [(a.segment_ord, a.doc) for a in addresses]
        where = {key: i for i, key in enumerate(keys)}
        total, avgdl = self._collection_statistics(searcher, generation)
        avgdl = max(avgdl, 1e-9)
        # per hit: tantivy's k1 times its length normalisation, and ours (the exact length, tantivy's avgdl)
        lengths = np.array([float(n or 0) for n in searcher.fast_field_values("length", addresses)])
        theirs = _TANTIVY_K1 * (1.0 - _TANTIVY_B + _TANTIVY_B * lengths / avgdl)
        ours = k1 * (1.0 - b + b * lengths / avgdl)
        scores = np.array([score for score, _ in hits], dtype=np.float64)
        everything, among = len(hits) >= searcher.num_docs, None
        for term, count in Counter(t for t in _ANALYZER.query_terms(query) if len(t) <= _LONGEST).items():
            df = int(searcher.doc_freq("body", term))
            idf = math.log1p((total - df + 0.5) / (df + 0.5)) if df else 0.0
            if idf <= 0:
                continue
            q = tantivy.Query.term_query(schema, "body", term)
            if not everything and df > _UNRESTRICTED * len(hits):
                if among is None:
                    among = self._among(searcher, hits)
                q = tantivy.Query.boolean_query([(tantivy.Occur.Must, q), (tantivy.Occur.Must, among)])
                limit = min(len(hits), df)
            else:
                limit = df
            found = searcher.search(q, limit, count=False).hits
            at = np.array([where.get((a.segment_ord, a.doc), -1) for _, a in found], dtype=np.int64)
            theirs_score = np.array([score for score, _ in found], dtype=np.float64)[at >= 0]
            at = at[at >= 0]
            # tantivy's score solved for the term's frequency (an integer), then the score with k1 and b
            x = np.minimum(theirs_score / ((_TANTIVY_K1 + 1.0) * idf), 1.0 - 1e-9)
            tf = np.maximum(1.0, np.rint(theirs[at] * x / (1.0 - x)))
            scores[at] += count * (idf * (k1 + 1.0) * tf / (tf + ours[at]) - theirs_score)
        segments, docs = np.array(keys, dtype=np.int64).T
        order = np.lexsort((docs, segments, -scores))  # best first, then tantivy's own order (segment, document)
        final = scores.tolist()
        return [(final[i], addresses[i]) for i in order.tolist()]

    def _among(self, searcher: tantivy.Searcher, hits: list[_Hit]) -> tantivy.Query:
        """A filter matching ``hits`` alone: their store rows (a fast field), else their ids (stored), each a term
        query of one disjunction (tantivy's ``term_set_query`` costs twice as much and more on a larger index)."""
        import tantivy

        assert self._schema is not None
        addresses = [address for _, address in hits]
        rows = searcher.fast_field_values("row", addresses)
        values: list[int] | list[str]
        if all(row is not None for row in rows):
            field, values = "row", [int(row) for row in rows if row is not None]
        else:
            field, values = "id", [str(searcher.doc(address).get_first("id")) for address in addresses]
        clauses = [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, field, v)) for v in values]
        return tantivy.Query.const_score_query(tantivy.Query.boolean_query(clauses), 0.0)

    def search_filtered(self, query: str, k: int, where: Filter) -> list[tuple[str, float]] | None:
        """Best ``k`` of the records ``where`` allows; None for an index in memory (its documents carry no rows)."""
        import tantivy

        index, schema, built = self._index, self._schema, self._query(query)
        if self._rows_matching is None or self._path is None:
            return None
        if index is None or schema is None or built is None or k <= 0:
            return []
        allowed = np.asarray(self._rows_matching(where), dtype=np.int64)
        generation, searcher = self._generation, index.searcher()
        total = max(searcher.num_docs, 1)
        if allowed.size == 0:
            return []
        if allowed.size <= _TERM_SET_ROWS:
            rows = tantivy.Query.const_score_query(tantivy.Query.term_set_query(schema, "row", allowed.tolist()), 0.0)
            narrowed = tantivy.Query.boolean_query([(tantivy.Occur.Must, built), (tantivy.Occur.Must, rows)])
            read = min(total, k * self._overread())
            hits = self._rescored(searcher, generation, query, searcher.search(narrowed, read, count=False).hits)[:k]
            return [(str(searcher.doc(address).get_first("id")), float(score)) for score, address in hits]
        limit = min(total, int(k * _OVERREAD * total / allowed.size) + 1)
        while True:
            hits = searcher.search(built, limit, count=False).hits
            found = np.asarray(searcher.fast_field_values("row", [address for _, address in hits]), dtype=np.int64)
            at = np.searchsorted(allowed, found).clip(0, allowed.size - 1)
            passing = [hit for hit, ok in zip(hits, allowed[at] == found, strict=True) if ok][:k]
            if len(passing) >= k or len(hits) < limit or limit >= total:
                passing = self._rescored(searcher, generation, query, passing)
                return [(str(searcher.doc(address).get_first("id")), float(score)) for score, address in passing]
            limit = min(total, limit * 4)

    def phrases(self, phrases: Sequence[str], limit: int) -> list[tuple[int, int, str]]:
        """``(phrases found, order, record id)`` of at most ``limit`` records whose own text holds at least one of
        ``phrases`` word for word (case-insensitive), in store order (``order``: the row, else the hit's rank)."""
        import tantivy

        index, schema, analyzers = self._index, self._schema, self._analyzers
        if index is None or schema is None or analyzers is None or limit <= 0:
            return []
        searcher = index.searcher()
        found: dict[str, list[int]] = {}
        for phrase in dict.fromkeys(phrases):
            words = analyzers[1].analyze(phrase)
            whole = compound_whole(phrase)
            whole = None if whole is None else _ANALYZER.term(whole)
            if not words:
                continue
            if whole is not None and len(whole) <= _LONGEST:  # one identifier (``err-4521``): its whole, not its parts
                q = tantivy.Query.term_query(schema, "body", whole)
            elif len(words) == 1:
                q = tantivy.Query.term_query(schema, "content", words[0])
            else:
                q = tantivy.Query.phrase_query(schema, "content", list[str | tuple[int, str]](words))
            hits = searcher.search(q, min(limit, max(searcher.num_docs, 1)), count=False).hits
            rows = searcher.fast_field_values("row", [address for _, address in hits])
            for rank, ((_, address), row) in enumerate(zip(hits, rows, strict=True)):
                record_id = str(searcher.doc(address).get_first("id"))
                entry = found.setdefault(record_id, [0, rank if row is None else int(row)])
                entry[0] += 1
        ordered = sorted(((count, order, rid) for rid, (count, order) in found.items()), key=lambda h: h[1])
        return ordered[:limit]

    def documents(self, field: str, values: Sequence[str], *, source: str | None = None) -> list[tantivy.Document]:
        """The documents whose untokenised ``field`` holds one of ``values`` (from ``source``, if given)."""
        import tantivy

        index, schema = self._index, self._schema
        if index is None or schema is None or not values:
            return []
        searcher = index.searcher()
        limit = sum(int(searcher.doc_freq(field, value)) for value in values)  # deleted ones too: an upper bound
        if limit == 0:
            return []
        if len(values) == 1:
            query = tantivy.Query.term_query(schema, field, values[0])
        else:
            query = tantivy.Query.term_set_query(schema, field, list(values))
        if source is not None:
            limit = min(limit, int(searcher.doc_freq("source", source)))
            both = [query, tantivy.Query.term_query(schema, "source", source)]
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, q) for q in both])
        if limit == 0:
            return []
        return [searcher.doc(address) for _, address in searcher.search(query, limit, count=False).hits]

    def first_source(self, section: str) -> str | None:
        """The first source (in sort order) with a chunk of ``section``, read as one hit."""
        import tantivy

        index, schema = self._index, self._schema
        if index is None or schema is None:
            return None
        query = tantivy.Query.term_query(schema, "section", section)
        hits = index.searcher().search(query, 1, count=False, order_by_field="source", order=tantivy.Order.Asc).hits
        return str(hits[0][0]) if hits else None

    def terms(self, field: str) -> list[str]:
        """Every value of the untokenised ``field`` that a live document holds (sorted by how many do)."""
        import tantivy

        index = self._index
        if index is None:
            return []
        found = index.searcher().terms_with_prefix(field, "", filter_query=tantivy.Query.all_query())
        return [str(term) for term, _ in found]

    def ids(self) -> list[str]:
        """Every record id indexed (a full scan: tests and checks)."""
        import tantivy

        index = self._index
        if index is None:
            return []
        searcher = index.searcher()
        hits = searcher.search(tantivy.Query.all_query(), max(searcher.num_docs, 1), count=False).hits
        return [str(searcher.doc(address).get_first("id")) for _, address in hits]


def _damage(path: Path) -> str | None:
    """What is wrong with the index directory ``path`` before tantivy opens it (None: missing, or a directory of
    regular files): tantivy follows links and would block on a FIFO, so a link anywhere is damage."""
    try:
        found = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(found.st_mode):
        return "it is a symbolic link, never followed"
    if not stat.S_ISDIR(found.st_mode):
        return "it is not a directory"
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_symlink():
                return f"{entry.name} in it is a symbolic link, never followed"
            if not entry.is_file(follow_symlinks=False) and not entry.is_dir(follow_symlinks=False):
                return f"{entry.name} in it is not a regular file"
    return None


def _set_aside_if_damaged(path: Path) -> None:
    """Move a damaged index directory (or what is in its place) aside as ``<name>.damaged-<when>``, with a warning."""
    try:
        reason = _damage(path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
    if reason is None:
        return
    target = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        os.replace(path, target)  # renames a link itself, never its target
    except FileNotFoundError:
        return  # another process set it aside first
    except OSError as exc:  # e.g. a directory already there under that name
        log.warning("keyword index %s is damaged (%s) and cannot be set aside (%s)", path, reason, exc)
        raise
    log.warning(
        "keyword index %s is damaged (%s); set aside as %s, rebuilding it from the records", path, reason, target
    )


def _saved(path: Path) -> dict[str, Any] | None:
    """The position file in the index directory ``path`` (None: none, or unreadable; never read through a link)."""
    try:
        saved = json.loads(read_no_link(path / _POSITION_FILE).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def _writer(index: tantivy.Index, *, full: bool) -> tantivy.IndexWriter:
    """A writer of ``index``, multi-threaded for a ``full`` rebuild (ValueError while another process writes)."""
    threads = _BUILD_THREADS if full else 1
    return index.writer(_WRITER_HEAP * threads, threads)


#: A document to add, with its store row (None: not from a record log).
_Row = tuple["int | None", "tantivy.Document"]


def _plain(record_id: str, text: str) -> tantivy.Document:
    """A document of the plain ``KeywordIndex`` contract: its text's terms in ``body``."""
    import tantivy

    terms = _ANALYZER.terms(text)
    return tantivy.Document(id=record_id, body=" ".join(terms), length=len(terms), every="1")


def _document(record: Record, row: int | None) -> tantivy.Document:
    """``record``'s document, built in one call: the keyword fields and the look-up fields."""
    import tantivy

    meta = record.metadata
    definitions = definitions_of(record)
    section_id = meta.get("section_id")
    place = [
        location_of(meta),
        None if section_id is None else str(section_id),
        [[d.term, d.definition] for d in definitions],
    ]
    terms = _ANALYZER.terms(indexed_text(record))
    return tantivy.Document(
        id=record.id,
        body=" ".join(terms),
        length=len(terms),
        every="1",
        heading=terms_text(heading_text(record)) or [],
        path=str(meta.get("path") or record.source),
        file_type=str(meta.get("file_type") or "") or [],
        content=record.content or [],
        row=[] if row is None else row,
        source=record.source,
        term=list(dict.fromkeys(term_key(d.term) for d in definitions)),
        section=section_ids_of(record),
        chunk=record.chunk_index,
        place=json.dumps(place, ensure_ascii=False).encode(),
    )
