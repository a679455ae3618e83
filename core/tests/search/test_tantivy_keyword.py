"""The ``tantivy`` keyword strategy (``deckhand.retrieval.tantivy_keyword``): BM25 against rank-bm25, fields
and boosts, incremental sync from the sqlite store's record log, repair after a kill -9 between the store's
write and the keyword commit, a reader process seeing another's ingest, and filters through the engine."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.bases import KeywordIndexBase
from deckhand.config.loading import load_agent_config
from deckhand.filters.conditions import Filter, condition
from deckhand.retrieval import tantivy_keyword
from deckhand.retrieval.analysis import Analyzer
from deckhand.retrieval.engine import KEYWORD, QueryEngine, SearchSettings
from deckhand.retrieval.keeper import IndexKeeper
from deckhand.retrieval.tantivy_keyword import SIDE_INDEX, TantivyIndex, TantivyOptions
from deckhand.stores.sqlite import SQLiteStore
from deckhand.testing import filter_strategies as fs
from deckhand.tools import build_tool
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.types import CollectionSpec, FileState, Record
from hypothesis import given
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

SPEC = CollectionSpec("acts", 3, "test")
#: tantivy's own BM25 (k1 1.2, b 0.75): no rescoring, lengths exact up to 40 terms.
TANTIVY_OWN = TantivyOptions(b=0.75, k1=1.2)
UNIT = np.ones(3, dtype=np.float32) / math.sqrt(3)


def _record(source: str, i: int, text: str, **meta: Any) -> Record:
    return Record(f"{source}#{i}", source, i, text, UNIT, {"parent_chain": ["Manual"], **meta})


def _state(source: str, chunks: int) -> FileState:
    return FileState(source, 1.0, 1, "h", "test", chunks)


def _store(root: Path) -> SQLiteStore:
    store = SQLiteStore(root / "index.sqlite", "acts")
    store.open(SPEC)
    return store


def _index(store: SQLiteStore) -> TantivyIndex:
    return TantivyIndex.from_options(store, None, TantivyOptions())


def _keeper() -> IndexKeeper:
    return IndexKeeper(lambda s: (_index(s), "tantivy"), name="t")


def test_same_scores_and_ranking_as_rank_bm25() -> None:
    """Tolerance: relative 1e-4 (float32) for documents of up to 40 terms, where tantivy stores a document's
    length exactly; longer ones are stored in a one-byte code (scores then differ by up to a few per cent)."""
    rng = np.random.default_rng(7)
    vocab = [f"word{i}" for i in range(60)] + ["alpha", "beta", "gamma"]
    corpus = [(f"d{i}", " ".join(rng.choice(vocab, size=int(rng.integers(3, 40))))) for i in range(200)]
    index = TantivyIndex(TANTIVY_OWN)
    index.build(corpus)
    analyzer = Analyzer()
    tokenized = [analyzer.terms(text) for _, text in corpus]
    reference = BM25Okapi(tokenized, k1=1.2, b=0.75)  # tantivy's parameters
    n = len(tokenized)
    df: dict[str, int] = {}
    for doc in tokenized:
        for term in set(doc):
            df[term] = df.get(term, 0) + 1
    reference.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}  # Lucene's idf, as tantivy
    for query in ["alpha beta", "word3 word17 gamma", "word5 word9"]:
        theirs = reference.get_scores(analyzer.terms(query))
        ours = dict(index.search(query, n))
        assert set(ours) == {f"d{i}" for i in np.flatnonzero(theirs > 0)}
        np.testing.assert_allclose([ours[f"d{i}"] for i in np.flatnonzero(theirs > 0)], theirs[theirs > 0], rtol=1e-4)


#: Documentation-like chunks: dotted names, CamelCase, compounds, versions and words mixing letters and digits.
_DOC_TEXTS = [
    "Set values on app.config before the first request; see Flask.config_from_object.",
    "The HTTPTransport retries a request when the connection pool is exhausted.",
    "Configuration files are loaded from the instance folder at startup.",
    "Error ERR-4521 means the retry_limit was reached; raise it in settings.toml.",
    "Encode the body as utf8 or latin1; version 1.4.2 changed the default encoding.",
    "A transport adapter mounts a custom connection pool for one host.",
    "Use request.args for the query string and request.form for posted fields.",
]


QUERIES = ["config", "transport connection pool", "request args", "utf8 encoding", "ERR-4521 retry", "1.4.2"]


def test_tantivy_ranks_and_scores_as_the_builtin_bm25_with_its_parameters() -> None:
    """Issue 43: the two strategies index the same terms (identifier parts and wholes, stems), so with tantivy's
    k1 1.2 and b 0.75 the builtin BM25 gives the same scores; before, tantivy's own tokenizer and a separate
    identifier field missed a dotted name's or a CamelCase word's parts (``config``, ``transport``) and counted
    lengths differently."""
    from deckhand.retrieval.bm25 import BM25Index

    docs = [(f"d{i}", text) for i, text in enumerate(_DOC_TEXTS)]
    tantivy_index, reference = TantivyIndex(TANTIVY_OWN), BM25Index(k1=1.2, b=0.75)
    tantivy_index.build(docs)
    reference.build(docs)
    for query in QUERIES:
        theirs, ours = dict(reference.search(query, len(docs))), dict(tantivy_index.search(query, len(docs)))
        assert set(ours) == set(theirs), query
        np.testing.assert_allclose([ours[i] for i in theirs], list(theirs.values()), rtol=1e-4)
    assert "d0" in dict(tantivy_index.search("config", 3))  # app.config's part
    assert "d1" in dict(tantivy_index.search("transport", 3))  # HTTPTransport's part


def test_rescoring_gives_tantivy_the_builtin_bm25s_k1_and_b() -> None:
    """The defaults ``k1`` 0.9 and ``b`` 0.4, the builtin BM25's: the hits' text scores computed again from each
    term's frequency (read back from tantivy's score) and the exact length, also past 40 terms, where tantivy keeps
    a length in a one-byte code. With tantivy's own k1 and b a short document holding a term once and a long one
    holding it four times rank the other way."""
    from deckhand.retrieval.bm25 import BM25Index

    filler = " ".join(f"filler{i}" for i in range(60))
    docs = [(f"d{i}", text) for i, text in enumerate(_DOC_TEXTS)]
    docs += [("short", "connection pool sizing"), ("long", f"pool pool pool pool sizing {filler}")]
    rescored, reference = TantivyIndex(), BM25Index()
    rescored.build(docs)
    reference.build(docs)
    for query in [*QUERIES, "pool"]:
        theirs, ours = dict(reference.search(query, len(docs))), dict(rescored.search(query, len(docs)))
        assert set(ours) == set(theirs), query
        np.testing.assert_allclose([ours[i] for i in theirs], list(theirs.values()), rtol=1e-4)
    own = TantivyIndex(TANTIVY_OWN)
    own.build(docs)
    assert [i for i, _ in rescored.search("pool", 2)] == ["long", "short"]
    ranked = [i for i, _ in own.search("pool", len(docs))]
    assert ranked.index("short") < ranked.index("long")


def test_the_collection_statistics_are_read_once_per_reload() -> None:
    """The rescoring's N and average length (an aggregate over every document) are read once per reload of the
    searcher, not at every search: the cache was keyed on the searcher object, and ``index.searcher()`` gives a new
    one each call. A rebuild reads them again, so the scores are a fresh index's."""
    docs = [(f"d{i}", text) for i, text in enumerate(_DOC_TEXTS)]
    index = TantivyIndex()
    index.build(docs)
    index.search(QUERIES[1], 3)
    first = index._statistics
    index.search(QUERIES[0], 3)
    assert first is not None and index._statistics is first
    more = [*docs, ("long", "connection pool " + " ".join(f"filler{i}" for i in range(60)))]
    index.build(more)
    got = dict(index.search(QUERIES[1], len(more)))
    assert index._statistics is not first
    fresh = TantivyIndex()
    fresh.build(more)
    want = dict(fresh.search(QUERIES[1], len(more)))
    assert set(got) == set(want)
    np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=1e-6)


def test_fields_stemming_dotted_numbers_and_boosts() -> None:
    records = [
        Record("a", "docs/rigging.md", 0, "Inspect the anchors before sailing.", UNIT, {"parent_chain": ["Winches"]}),
        Record("b", "docs/winches.md", 0, "Service every winch in 4.2 hours.", UNIT, {"parent_chain": ["Upkeep"]}),
    ]
    plain = TantivyIndex(TantivyOptions(heading_boost=0.0, path_boost=0.0))
    plain.index_records(records)
    assert [i for i, _ in plain.search("anchor sailed", 5)] == ["a"]  # stems: anchors/anchor, sailing/sailed
    assert [i for i, _ in plain.search("4.2", 5)] == ["b"] and plain.search("the of", 5) == []
    assert plain.search("upkeep", 5)[0][0] == "b"  # the heading chain is text too, as bm25 indexes it
    assert plain.search("rigging", 5) == []  # the path is not searched (boost 0)
    # "winches": a's heading, b's text ("winch"); a heading match weighs more with heading_boost
    boosted = TantivyIndex(TantivyOptions(heading_boost=3.0, path_boost=0.0))
    boosted.index_records(records)
    both = dict(plain.search("winches", 5))
    assert set(both) == {"a", "b"} and dict(boosted.search("winches", 5))["a"] > both["a"]
    assert [i for i, _ in boosted.search("winches", 5)] == ["a", "b"]
    by_path = TantivyIndex(TantivyOptions(heading_boost=0.0, path_boost=1.0))
    by_path.index_records(records)
    assert [i for i, _ in by_path.search("rigging", 5)] == ["a"]  # its path, split at the dot and slash


def test_sync_applies_only_the_changes_since_its_last_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path)
    store.replace_source("a.md", [_record("a.md", i, f"harbour buoy {i}") for i in range(3)], _state("a.md", 3))
    index = _index(store)
    index.sync(store)
    assert sorted(index.ids()) == ["a.md#0", "a.md#1", "a.md#2"] and index.position() == store.log_position()
    path = store.side_index_path(SIDE_INDEX)
    assert path is not None and path.is_dir()

    def no_rebuild(*args: object, **kwargs: object) -> None:
        raise AssertionError("rebuilt from every record instead of applying the changes")

    monkeypatch.setattr(SQLiteStore, "iter_rows", no_rebuild)
    store.replace_source("a.md", [_record("a.md", 0, "mooring chain")], _state("a.md", 1))
    store.replace_source("b.md", [_record("b.md", 0, "harbour master")], _state("b.md", 1))
    index.sync(store)
    assert sorted(index.ids()) == ["a.md#0", "b.md#0"]
    assert [i for i, _ in index.search("harbour", 10)] == ["b.md#0"]
    assert [i for i, _ in index.search("mooring", 10)] == ["a.md#0"]
    store.delete_source("a.md")
    reopened = _index(_store(tmp_path))  # a new process: opens the directory, applies the delete
    reopened.sync(store)
    assert reopened.ids() == ["b.md#0"] and len(reopened) == 1


def test_an_index_of_other_settings_or_a_damaged_one_is_rebuilt(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.replace_source("a.md", [_record("a.md", 0, "harbour buoy")], _state("a.md", 1))
    path = store.side_index_path(SIDE_INDEX)
    assert path is not None
    path.mkdir()
    (path / "meta.json").write_text("{not json", encoding="utf-8")
    index = _index(store)
    index.sync(store)
    assert index.ids() == ["a.md#0"]


@pytest.mark.parametrize("how", ["file", "link", "link-inside", "fifo-inside"])
def test_an_index_replaced_by_a_file_or_a_link_is_set_aside_and_rebuilt(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A regular file or a symbolic link where the index directory should be (or a link or FIFO inside it) is
    damage like any other: one warning line, the thing set aside (a link renamed, never followed), the index
    rebuilt from the records; nothing outside the index folder is read or written."""
    store = _store(tmp_path / "index")
    store.replace_source("a.md", [_record("a.md", 0, "harbour buoy")], _state("a.md", 1))
    path = store.side_index_path(SIDE_INDEX)
    assert path is not None
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep out", encoding="utf-8")
    if how == "file":
        path.write_text("not an index", encoding="utf-8")
    elif how == "link":
        path.symlink_to(outside, target_is_directory=True)
    else:
        _index(store).sync(store)  # a healthy index first
        if how == "link-inside":
            (path / "meta.json").unlink()
            (path / "meta.json").symlink_to(outside / "secret.txt")
        else:
            (path / "position.json").unlink()
            os.mkfifo(path / "position.json")  # would block a reader
    with caplog.at_level(logging.INFO, logger="deckhand"):
        for _ in range(2):  # healed: the second open finds nothing wrong
            index = _index(store)
            index.sync(store)
            assert index.ids() == ["a.md#0"] and [i for i, _ in index.search("harbour", 5)] == ["a.md#0"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0] and str(path) in warnings[0], warnings
    assert "set aside as" in warnings[0] and "rebuilding it from the records" in warnings[0]
    assert path.is_dir() and not path.is_symlink()
    assert len(list(path.parent.glob(f"{path.name}.damaged-*"))) == 1
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing written outside
    assert (outside / "secret.txt").read_text(encoding="utf-8") == "keep out"


def test_an_index_of_an_older_layout_is_rebuilt_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import tantivy

    store = _store(tmp_path)
    store.replace_source("a.md", [_record("a.md", 0, "harbour buoy")], _state("a.md", 1))
    path = store.side_index_path(SIDE_INDEX)
    assert path is not None
    path.mkdir()
    older = tantivy.SchemaBuilder()
    older.add_text_field("body", index_option="position")  # another schema: tantivy refuses to open it with ours
    tantivy.Index(older.build(), path=str(path))
    settings = json.dumps({"format": 3, "longest": 100, "path": "p", "word": "w"}, sort_keys=True)
    (path / "position.json").write_text(json.dumps({"settings": settings, "version": 1, "last_row": 1}))
    with caplog.at_level(logging.INFO, logger="deckhand"):
        index = _index(store)
        index.sync(store)
    assert index.ids() == ["a.md#0"] and index.position() == store.log_position()
    assert "another layout" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


#: The child process of the kill -9 tests: it writes the second state of the collection to the store, then
#: brings the keyword index up to it, and kills itself at ``point``: before the keyword sync, after the
#: ``n``-th document handed to tantivy (before the commit), or after the commit.
_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np
    from deckhand.retrieval import tantivy_keyword
    from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.types import CollectionSpec, FileState, Record

    root, point = sys.argv[1], sys.argv[2]
    unit = np.ones(3, dtype=np.float32) / np.sqrt(3)
    store = SQLiteStore(os.path.join(root, "index.sqlite"), "acts")
    store.open(CollectionSpec("acts", 3, "test"))
    index = TantivyIndex.from_options(store, None, TantivyOptions())
    records = [Record(f"b.md#{i}", "b.md", i, f"lighthouse keeper {i}", unit, {}) for i in range(6)]
    store.replace_source("b.md", records, FileState("b.md", 1.0, 1, "h", "test", 6))
    mooring = [Record("a.md#0", "a.md", 0, "mooring chain", unit, {})]
    store.replace_source("a.md", mooring, FileState("a.md", 1.0, 1, "h", "test", 1))
    if point == "before-sync":
        os.kill(os.getpid(), signal.SIGKILL)
    if point.startswith("after-doc-"):
        count, limit, fields = [0], int(point.rsplit("-", 1)[1]), tantivy_keyword._document
        def counting(record, row):
            count[0] += 1
            if count[0] > limit:
                os.kill(os.getpid(), signal.SIGKILL)
            return fields(record, row)
        tantivy_keyword._document = counting
    index.sync(store)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.parametrize("point", ["before-sync", "after-doc-3", "after-commit"])
def test_a_kill_between_the_store_write_and_the_keyword_commit_is_repaired_on_open(tmp_path: Path, point: str) -> None:
    store = _store(tmp_path)
    old = [_record("a.md", i, f"harbour buoy {i}") for i in range(4)]
    store.replace_source("a.md", old, _state("a.md", 4))
    first = _index(store)
    first.sync(store)
    store.close()
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), point], capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    store = _store(tmp_path)
    index = _index(store)
    index.sync(store)  # the next open: compares the commit's position with the store's, applies what is missing
    assert sorted(index.ids()) == sorted(r.id for r in store.iter_records())
    assert index.search("harbour buoy", 10) == []  # no stale text
    assert sorted(i for i, _ in index.search("lighthouse", 10)) == [f"b.md#{i}" for i in range(6)]  # none missing
    assert [i for i, _ in index.search("mooring", 10)] == ["a.md#0"]
    assert index.position() == store.log_position()


_WRITER = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.types import CollectionSpec, FileState, Record

    unit = np.ones(3, dtype=np.float32) / np.sqrt(3)
    store = SQLiteStore(os.path.join(sys.argv[1], "index.sqlite"), "acts")
    store.open(CollectionSpec("acts", 3, "test"))
    records = [Record(f"c.md#{i}", "c.md", i, f"pilot boat {i}", unit, {}) for i in range(3)]
    store.replace_source("c.md", records, FileState("c.md", 1.0, 1, "h", "test", 3))
    TantivyIndex.from_options(store, None, TantivyOptions()).sync(store)
    """
)


def test_a_reader_open_during_an_ingest_sees_the_new_documents(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.replace_source("a.md", [_record("a.md", 0, "harbour buoy")], _state("a.md", 1))
    keeper = _keeper()
    keyword = keeper.refresh(store).keyword
    assert isinstance(keyword, TantivyIndex) and keyword.search("pilot", 5) == []
    done = subprocess.run([sys.executable, "-c", _WRITER, str(tmp_path)], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert keeper.current(store) is not None  # what every query does first: the records version changed
    assert sorted(i for i, _ in keyword.search("pilot boat", 5)) == ["c.md#0", "c.md#1", "c.md#2"]
    # the writer brought the index up to date itself: the reader reloaded it, with nothing to apply
    assert keeper.origin == "loaded" and keyword.position() == store.log_position()


def test_a_new_process_opens_the_side_index_file_and_reads_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start-up: the exact, definition and section look-ups are kept in the side index file (without BM25
    postings), the keyword index in its directory; a new process opens both and reads no record."""
    store = _store(tmp_path)
    store.replace_source(
        "a.md", [_record("a.md", i, f"harbour buoy {i}", section_id=f"{i}") for i in range(3)], _state("a.md", 3)
    )
    first = _keeper()
    first.refresh(store)
    assert first.origin == "rebuilt"

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("read every record at start-up")

    monkeypatch.setattr(SQLiteStore, "iter_rows", no_reading)
    monkeypatch.setattr(SQLiteStore, "iter_records", no_reading)
    again = _store(tmp_path)
    keeper = _keeper()
    indexes = keeper.refresh(again)
    assert keeper.origin == "loaded"
    assert sorted(i for i, _ in indexes.keyword.search("buoy", 5)) == ["a.md#0", "a.md#1", "a.md#2"]
    assert indexes.exact.section_of_query("§ 1") == ["a.md#1"]
    again.replace_source("a.md", [_record("a.md", 0, "mooring chain", section_id="1")], _state("a.md", 1))
    indexes = keeper.current(again)  # in place: the file and the keyword index apply the change, no record re-read
    assert indexes is not None and keeper.origin == "updated" and indexes.keyword.search("buoy", 5) == []
    assert indexes.exact.section_of_query("§ 1") == ["a.md#0"]


@pytest.mark.parametrize("term_set_rows", [tantivy_keyword._TERM_SET_ROWS, 0], ids=["term-set", "checked-hits"])
def test_filters_hold_in_keyword_mode_over_random_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, term_set_rows: int
) -> None:
    """Property: a filtered keyword search returns exactly the records holding the word that pass the filter
    (:meth:`Filter.matches`), with the index brought up to date incrementally after every rewrite; both ways
    tantivy applies the store's allowed rows (a term-set clause, or the hits' ``row`` fast field checked, read
    deeper until enough pass)."""
    monkeypatch.setattr(tantivy_keyword, "_TERM_SET_ROWS", term_set_rows)
    store = _store(tmp_path)
    keeper = _keeper()
    settings = SearchSettings(top_k=50, weights={KEYWORD: 1.0}, candidates=50)

    @fs.property_settings()
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        metadata = data.draw(fs.metadata_lists())
        words = data.draw(st.lists(st.sampled_from(["anchor", "buoy"]), min_size=len(metadata), max_size=len(metadata)))
        pairs = enumerate(zip(metadata, words, strict=True))
        records = [_record("p.md", i, f"chunk {i} {w}", **meta) for i, (meta, w) in pairs]
        store.replace_source("p.md", records, _state("p.md", len(records)))
        engine = QueryEngine(lambda q: UNIT, name="t", indexes=keeper.refresh(store))
        for _ in range(3):
            where = data.draw(fs.filters_for(metadata))
            expected = {r.id for r in records if "anchor" in r.content and where.matches(r.metadata)}
            got = {h.record.id for h in engine.search(store, "anchor", settings, where=where)}
            assert got == expected, f"filter {where.describe()} over {metadata!r}"

    check()


def test_the_tool_with_keyword_strategy_tantivy_as_the_docs_configure_it(legal_corpus: Path) -> None:
    """docs/hierarchical-document.md's ``keyword_strategy: {name: tantivy, ...}`` on the default (sqlite) store,
    end to end: ingest, keyword and exact answers, then a changed file picked up in place."""
    (legal_corpus / "agent.yaml").write_text(
        "name: legal\ntools:\n  - name: act\n    type: hierarchical_document\n    source: ./docs\n"
        "    keyword_strategy: {name: tantivy, heading_boost: 1.0, path_boost: 0.5}\n"
    )
    tool = build_tool(load_agent_config(legal_corpus / "agent.yaml").tools[0], base_dir=legal_corpus)
    assert isinstance(tool, HierarchicalDocumentTool)
    tool.initialize_sync()
    assert tool.provider == "sqlite" and tool.keyword_strategy == "tantivy"
    found = tool.search_results_sync("tomatoes compost", 3, mode="keyword")
    assert found and found[0].source == "docs/guide.md"
    assert tool.search_results_sync("§ 2.1")[0].section_id == "2.1"
    guide = legal_corpus / "docs" / "guide.md"
    guide.write_text(guide.read_text(encoding="utf-8").replace("Tomatoes", "Pumpkins"), encoding="utf-8")
    tool.initialize_sync()
    assert [r.source for r in tool.search_results_sync("pumpkins", 3, mode="keyword")] == ["docs/guide.md"]
    assert tool.search_results_sync("tomatoes", 3, mode="keyword") == []
    tool.close()


def test_dropping_the_collection_removes_its_keyword_index(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.replace_source("a.md", [_record("a.md", 0, "harbour buoy")], _state("a.md", 1))
    _index(store).sync(store)
    path = store.side_index_path(SIDE_INDEX)
    assert path is not None and path.is_dir()
    store.drop()
    assert not path.exists()


class _Substring(KeywordIndexBase):
    """A plugin-like keyword strategy that neither persists (no blob) nor keeps itself."""

    def __init__(self) -> None:
        self.docs: list[tuple[str, str]] = []

    def build(self, docs: Any) -> None:
        self.docs = list(docs)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return [(i, 1.0) for i, text in self.docs if query in text][:k]


def test_another_processs_changes_reach_a_strategy_that_keeps_nothing(tmp_path: Path) -> None:
    """A keyword strategy without a blob or a file of its own is rebuilt when the records version changes
    (before, the engine never noted the version it was built from, so it never rebuilt)."""
    store = _store(tmp_path)
    store.replace_source("a.md", [_record("a.md", 0, "harbour buoy")], _state("a.md", 1))
    keeper = IndexKeeper(lambda s: (_Substring(), "substring"), name="t")
    keeper.refresh(store)
    other = _store(tmp_path)
    other.replace_source("b.md", [_record("b.md", 0, "pilot boat")], _state("b.md", 1))
    indexes = keeper.current(store)
    assert indexes is not None and [i for i, _ in indexes.keyword.search("pilot", 5)] == ["b.md#0"]


@pytest.mark.parametrize("term_set_rows", [tantivy_keyword._TERM_SET_ROWS, 0], ids=["term-set", "checked-hits"])
def test_a_filtered_query_asks_tantivy_for_the_allowed_rows_not_its_whole_ranking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, term_set_rows: int
) -> None:
    """The filtered-query cost: the filter goes to tantivy as the store's allowed rows (checked on the ``row``
    fast field), so the engine never asks for the whole ranking to recheck every hit's record (before, it did:
    every hit's id read from tantivy's document store, then its record from the store)."""
    monkeypatch.setattr(tantivy_keyword, "_TERM_SET_ROWS", term_set_rows)
    store = _store(tmp_path)
    records = [_record("a.md", i, f"harbour buoy {i}", berth=i % 40) for i in range(400)]
    store.replace_source("a.md", records, _state("a.md", len(records)))
    engine = QueryEngine(lambda q: UNIT, name="t", indexes=_keeper().refresh(store))

    def whole_ranking(self: TantivyIndex, query: str, k: int) -> list[tuple[str, float]]:
        raise AssertionError(f"asked for {k} hits to recheck them")

    monkeypatch.setattr(TantivyIndex, "search", whole_ranking)
    where = Filter((condition("berth", "eq", [7]),))
    settings = SearchSettings(top_k=5, weights={KEYWORD: 1.0}, candidates=5)
    found = engine.search(store, "buoy", settings, where=where)
    assert len(found) == 5 and all(h.record.metadata["berth"] == 7 for h in found)


def test_an_index_built_with_the_old_default_opens_with_tantivy_and_keeps_its_vectors(legal_corpus: Path) -> None:
    """A collection whose side indexes were built with ``bm25`` (the default before) opens under ``auto`` (now
    ``tantivy`` on sqlite): the keyword index is built from the store's records on first open, nothing is
    re-ingested or re-embedded, and the dense index is the same."""
    agent = legal_corpus / "agent.yaml"
    tool_yaml = "name: legal\ntools:\n  - name: act\n    type: hierarchical_document\n    source: ./docs\n"
    agent.write_text(tool_yaml + "    keyword_strategy: bm25\n")
    old = build_tool(load_agent_config(agent).tools[0], base_dir=legal_corpus)
    assert isinstance(old, HierarchicalDocumentTool)
    old.initialize_sync()
    assert old.keyword_strategy == "bm25"
    store = old.index.ready("x")
    vectors = {r.id: r.vector.tolist() for r in store.iter_records()}
    old.close()
    agent.write_text(tool_yaml)
    new = build_tool(load_agent_config(agent).tools[0], base_dir=legal_corpus)
    assert isinstance(new, HierarchicalDocumentTool)
    report = new.open_sync()
    assert new.keyword_strategy == "tantivy" and not report.ingested and new.index_origin == "rebuilt"
    found = new.search_results_sync("tomatoes compost", 3, mode="keyword")
    assert found and found[0].source == "docs/guide.md"
    assert new.search_results_sync("§ 2.1")[0].section_id == "2.1"
    assert {r.id: r.vector.tolist() for r in new.index.ready("x").iter_records()} == vectors
    new.close()
