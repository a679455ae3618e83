"""The hierarchical look-ups kept in the ``tantivy`` keyword index beside the sqlite store
(``deckhand.retrieval.tantivy_lookups``): opened, not loaded; answering exactly as the look-ups built in memory;
updated in place when the records change; an earlier version's side index file removed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.api import KeywordIndexBase, StoreBase
from deckhand.retrieval import side_indexes, tantivy_keyword
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.engine import QueryEngine
from deckhand.retrieval.keeper import IndexKeeper
from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions
from deckhand.stores.sqlite import SQLiteStore
from deckhand.types import CollectionSpec, Record, Vector

SPEC = CollectionSpec("acts", 3, "test")
TEXTS = [
    ("Scope. This Act covers harbour buoys and moorings.", {"section_id": "1", "section_ids": ["1"]}),
    (
        '"Vessel" means any craft that floats. Vessels moor at a berth.',
        {
            "section_id": "2",
            "section_ids": ["2"],
            "defined_terms": ["Vessel"],
            "definitions": [{"term": "Vessel", "definition": "any craft that floats"}],
        },
    ),
    (
        "Duties. Keep the buoys lit; every vessel obeys the harbour master. See section 1.",
        {"section_id": "2.1", "section_ids": ["2", "2.1"], "references": ["1", "9"]},
    ),
    ("Penalties. A fine of 500 units for force majeure excluded.", {"section_id": "3", "section_ids": ["3"]}),
]
QUERIES = ["harbour buoys", "vessel berth moor", "fine units", "buoys buoys lit", "nothing here at all"]
EXACT = ['"force majeure"', "§ 2", "Vessel", "what does section 1 require", '"buoys" "berth"', '"ab"']


def _records(source: str = "act.md", texts: list[tuple[str, dict[str, Any]]] = TEXTS) -> list[Record]:
    rng = np.random.default_rng(0)
    out = []
    for i, (text, meta) in enumerate(texts):
        vector: Vector = rng.standard_normal(3).astype(np.float32)
        meta = {"parent_chain": ["Act", f"Part {i}"], **meta}
        out.append(Record(f"{source}#{i}", source, i, text, vector / np.linalg.norm(vector), meta))
    return out


def _store(path: Path) -> SQLiteStore:
    store = SQLiteStore(path / "index.sqlite", "acts")
    store.open(SPEC)
    return store


def _tantivy(store: StoreBase) -> tuple[KeywordIndexBase, str]:
    return TantivyIndex.from_options(store, None, TantivyOptions()), "tantivy"


class _Engine:
    """A tool's pairing in miniature: a keeper of the side indexes and the query engine built over them."""

    def __init__(self, keyword: Any = _tantivy) -> None:
        self.keeper = IndexKeeper(keyword, name="t")
        self.engine = QueryEngine(lambda q: np.ones(3, np.float32), name="t")

    def update_indexes(self, store: SQLiteStore) -> None:
        self.engine = QueryEngine(self.engine.embed, name="t", indexes=self.keeper.refresh(store))

    def rebuild_indexes(self, store: SQLiteStore) -> None:
        self.engine = QueryEngine(self.engine.embed, name="t", indexes=self.keeper._rebuild(store))

    def ensure_current(self, store: SQLiteStore) -> None:
        fresh = self.keeper.current(store)
        if fresh is not None:
            self.engine = QueryEngine(self.engine.embed, name="t", indexes=fresh)

    @property
    def index_origin(self) -> str | None:
        return self.keeper.origin

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


def _engine() -> _Engine:
    return _Engine()


def _answers(engine: Any) -> list[object]:
    assert engine.keyword is not None and engine.exact is not None and engine.definitions is not None
    out: list[object] = [engine.keyword.search(q, 10) for q in QUERIES]
    out += [engine.exact.search(q, 10) for q in EXACT]
    out += [engine.exact.section_of_query(q) for q in EXACT]
    out += [engine.definitions.lookup("vessel"), engine.definitions.relevant("every vessel and Vessels", 5)]
    out += [engine.definitions.terms(), len(engine.definitions)]
    out += [engine.resolve_references(["1", "2", "9", "2.1(a)"]), sorted(engine.locations.items())]
    return out


def test_a_new_store_object_opens_the_index_and_answers_as_the_look_ups_built_in_memory(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.upsert(_records())
    built = _engine()
    built.update_indexes(store)
    assert built.index_origin == "rebuilt"
    assert built.indexes is not None and isinstance(built.indexes.locations, side_indexes.KeptLocations)
    expected = _answers(built)
    in_memory = _engine()
    in_memory.rebuild_indexes(_store(tmp_path))  # the same keyword index, every look-up built in memory
    assert isinstance(in_memory.locations, dict) and _answers(in_memory) == expected

    opened = _engine()
    opened.update_indexes(_store(tmp_path))
    assert opened.index_origin == "loaded"
    assert _answers(opened) == expected
    ids = [*built.locations, "not-a-record"]
    assert opened.locations.many(ids) == {i: built.locations[i] for i in built.locations}  # type: ignore[attr-defined]


def test_another_processs_records_are_found_after_the_index_is_brought_up_to_date(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.upsert(_records())
    first = _engine()
    first.update_indexes(store)
    loaded = _engine()
    loaded.update_indexes(_store(tmp_path))
    assert loaded.index_origin == "loaded" and loaded.keyword is not None
    assert loaded.keyword.search("lighthouse", 5) == []

    writer = _store(tmp_path)  # another store object (process) adds a document
    writer.upsert(_records("light.md", [("The lighthouse keeper lights the lamp.", {"section_id": "7"})]))
    loaded.ensure_current(loaded.keeper.store)
    assert loaded.index_origin == "updated"
    assert [rid for rid, _ in loaded.keyword.search("lighthouse", 5)] == ["light.md#0"]

    fresh = _engine()
    fresh.update_indexes(_store(tmp_path))
    assert fresh.index_origin == "loaded" and fresh.keyword is not None
    assert [rid for rid, _ in fresh.keyword.search("lighthouse", 5)] == ["light.md#0"]
    assert _answers(fresh) == _answers(loaded)


def test_another_keyword_strategy_rebuilds_in_memory_and_keeps_nothing(tmp_path: Path) -> None:
    """``bm25`` (or a plugin's strategy) on the sqlite store: every side index is rebuilt from the records when a
    process opens the store (no file, no blob), and answers as before."""
    store = _store(tmp_path)
    store.upsert(_records())
    engine = _Engine(lambda s: (BM25Index(), "bm25"))
    engine.update_indexes(store)
    for name in (tantivy_keyword.SIDE_INDEX, side_indexes.OLD_FILE):
        path = store.side_index_path(name)
        assert path is not None and not path.exists()
    again = _Engine(lambda s: (BM25Index(), "bm25"))
    again.update_indexes(_store(tmp_path))
    assert again.index_origin == "rebuilt" and again.keyword is not None
    assert again.keyword.search("harbour buoys", 3) == engine.keyword.search("harbour buoys", 3)


def test_definitions_narrowed_to_a_texts_first_words_match_as_the_whole_pattern() -> None:
    from deckhand.retrieval.definition_lookup import Definition, DefinitionIndex, term_key

    rng = np.random.default_rng(5)
    words = ["vessel", "vessels", "berth", "force", "majeure", "act", "u.s.", "(a)", "data", "ſhip", "Ship", "co-op"]
    terms = sorted({" ".join(rng.choice(words, size=int(rng.integers(1, 4)))) for _ in range(60)})
    table: dict[str, list[Definition]] = {}
    for i, t in enumerate(terms):
        table.setdefault(term_key(t), []).append(Definition(t, f"{t} means x", "d.md", None, f"d.md#{i}"))
    index = DefinitionIndex.over(table)
    seps = [" ", "  ", "\n", ", ", "; ", "-", "", ".", "es ", "s "]
    for _ in range(300):
        text = "".join(
            str(rng.choice(words)).upper() if rng.random() < 0.2 else str(rng.choice(words)) + str(rng.choice(seps))
            for _ in range(12)
        )
        narrowed = index.relevant(text, 50)
        index._narrowed = lambda t: index._compiled()  # type: ignore[method-assign]
        whole = index.relevant(text, 50)
        del index._narrowed
        assert narrowed == whole, text


# -- updated in place: the records changed since the build applied to the index ---------------------------------
NEW_ACT3 = [
    ("Scope. This Act covers lighthouses and their keepers.", {"section_id": "1", "section_ids": ["1"]}),
    (
        '"Keeper" means the person who tends a lighthouse lamp.',
        {
            "section_id": "4",
            "section_ids": ["4"],
            "defined_terms": ["Keeper"],
            "definitions": [{"term": "Keeper", "definition": "the person who tends a lighthouse lamp"}],
        },
    ),
    ("Logs. The keeper writes every schooner into a green leather book. See section 4.", {"section_id": "4.1"}),
]


def _corpus(store: SQLiteStore, sources: int = 30) -> None:
    for n in range(sources):
        store.upsert(_records(f"act{n}.md"))


def _comparable(engine: Any) -> list[object]:
    """What must be the same after an update in place as after a rebuild (orders of equals aside)."""
    assert engine.exact is not None and engine.definitions is not None
    out: list[object] = [sorted(engine.exact.search(q, 200)) for q in [*EXACT, '"green leather"', "Keeper"]]
    out += [sorted(engine.exact.section_of_query(q)) for q in EXACT]
    out += [engine.definitions.lookup("vessel"), engine.definitions.lookup("keeper")]
    out += [sorted(engine.definitions.terms()), len(engine.definitions)]
    out += [sorted(ids) for ids in (engine.resolve_references([ref]) for ref in ["1", "2", "4", "4.1", "9"])]
    out += [sorted(engine.locations.items()), len(engine.locations)]
    return out


def _scores(engine: Any, query: str) -> dict[str, float]:
    assert engine.keyword is not None
    return dict(engine.keyword.search(query, 500))


def test_records_changed_since_the_build_update_the_index_in_place(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _corpus(store)
    _engine().update_indexes(store)

    writer = _store(tmp_path)  # another process: act3.md rewritten, light.md added
    writer.delete_source("act3.md")
    writer.upsert(_records("act3.md", NEW_ACT3))
    writer.upsert(_records("light.md", [("The lamp room is above the gallery.", {"section_id": "9"})]))

    updated = _engine()
    updated.update_indexes(_store(tmp_path))
    assert updated.index_origin == "updated"
    rebuilt = _engine()
    rebuilt.rebuild_indexes(_store(tmp_path))
    assert _comparable(updated) == _comparable(rebuilt)

    # the old act3.md text is gone from every index; its new text and light.md are found
    assert "act3.md#3" not in _scores(updated, "fine units force majeure")
    assert next(iter(_scores(updated, "green leather schooner"))) == "act3.md#2"
    assert next(iter(_scores(updated, "lamp gallery"))) == "light.md#0"
    # BM25 statistics: tantivy's own, kept with every commit. Against an index built afresh from the same records
    # the same documents score; a deleted document counts in its terms' document frequency until tantivy merges
    # its segment (as in Lucene), so scores may differ by that, here within 2%
    fresh_index = TantivyIndex()
    fresh_index.index_records(list(_store(tmp_path).iter_records()))
    for query in [*QUERIES, "keeper lighthouse", "lamp"]:
        fresh, kept = dict(fresh_index.search(query, 500)), _scores(updated, query)
        assert kept.keys() == fresh.keys(), query
        assert all(abs(kept[i] - fresh[i]) <= 0.02 * fresh[i] for i in fresh), query

    again = _engine()  # a new process opens the updated index as it is
    again.update_indexes(_store(tmp_path))
    assert again.index_origin == "loaded"
    assert _comparable(again) == _comparable(rebuilt)


def test_a_reader_with_the_index_open_follows_an_update(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _corpus(store)
    _engine().update_indexes(store)
    reader = _engine()
    reader.update_indexes(_store(tmp_path))
    assert reader.keyword is not None and reader.exact is not None
    assert "act3.md#3" in _scores(reader, "fine units")  # cached: postings, a location, a section, a definition
    assert reader.exact.search('"force majeure"', 100)
    assert reader.locations.get("act3.md#3") is not None
    assert reader.resolver is not None and "act3.md#2" in reader.resolver.resolve("2.1")

    writer = _store(tmp_path)
    writer.delete_source("act3.md")
    _engine().update_indexes(writer)  # the ingesting process updates the index
    reader.ensure_current(reader.keeper.store)  # a query's first step: the records version changed
    assert reader.index_origin == "loaded", "the writer's update is opened, not applied again"
    assert reader.locations.get("act3.md#3") is None and len(reader.locations) == 29 * 4
    assert reader.resolver is not None and "act3.md#2" not in reader.resolver.resolve("2.1")
    assert "act3.md#3" not in _scores(reader, "fine units")
    assert "act3.md#3" not in {rid for rid, _ in reader.exact.search('"force majeure"', 100)}
    assert len(reader.keyword.search("fine units", 29)) == 29, "a deleted document takes no place in the top k"


def test_an_earlier_versions_side_index_file_is_removed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.upsert(_records())
    old = store.side_index_path(side_indexes.OLD_FILE)
    assert old is not None
    old.write_bytes(b"an earlier version's look-ups")
    old.with_name(old.name + "-journal").write_bytes(b"and its journal")
    engine = _engine()
    engine.update_indexes(store)
    assert not old.exists() and not old.with_name(old.name + "-journal").exists()
    assert engine.definitions is not None and engine.definitions.lookup("vessel") is not None


def test_a_first_build_reads_the_records_once_and_a_sections_start_reads_none_of_its_other_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    _corpus(store, sources=6)  # section "2" in every source, two chunks each
    reads: list[int] = []
    iter_rows = SQLiteStore.iter_rows

    def counted(self: SQLiteStore, batch_size: int = 1000) -> Any:
        reads.append(batch_size)
        return iter_rows(self, batch_size)

    monkeypatch.setattr(SQLiteStore, "iter_rows", counted)
    engine = _engine()
    engine.update_indexes(store)
    assert engine.index_origin == "rebuilt" and len(reads) == 1, "tantivy's build is the only read of the records"

    looked_up: list[tuple[str, list[str], str | None]] = []
    documents = TantivyIndex.documents

    def recorded(self: TantivyIndex, field: str, values: Any, *, source: str | None = None) -> Any:
        looked_up.append((field, list(values), source))
        return documents(self, field, values, source=source)

    monkeypatch.setattr(TantivyIndex, "documents", recorded)
    assert engine.resolver is not None
    assert engine.resolver.first("2", source="act4.md") == "act4.md#1"
    assert engine.resolver.first("2") == "act0.md#1"  # no source: the first document (by source) that has it
    assert engine.resolver.first("9", source="act4.md") is None
    assert all(source is not None for _, _, source in looked_up), looked_up
    assert engine.resolver.resolve("2") == [f"act{n}.md#{i}" for n in range(6) for i in (1, 2)]  # every chunk
