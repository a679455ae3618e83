"""Identifiers and exact tokens (issue 47; issue 40, item 5): understood whole and by parts the same way by every
keyword strategy, never off-topic when the index holds them, and their holder first whatever the dense search
prefers and wherever in its chunk the token stands, on the in-memory store (BM25) and on sqlite (tantivy)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.retrieval.analysis import Analyzer, identifier_words
from deckhand.retrieval.bm25 import BM25Index
from deckhand.retrieval.engine import QueryEngine, SearchSettings
from deckhand.retrieval.keeper import IndexKeeper
from deckhand.retrieval.phrase_match import InMemoryTexts, identifier_shaped
from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions, ident_terms
from deckhand.stores.inmemory import InMemoryStore
from deckhand.stores.sqlite import SQLiteStore
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.types import CollectionSpec, FileState, Record, Vector
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DIM = 4
QUERY = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
#: The hierarchical tool's defaults as the engine gets them (``results: focused``, MiniLM's levels).
FOCUSED = SearchSettings(
    top_k=10,
    weights={"semantic": 1.0, "keyword": 1.1, "exact": 1.0},
    per_source=1,
    relative_cutoff=0.5,
    semantic_floor=0.15,
    relevance_floor=0.28,
)
RANKED = SearchSettings(top_k=10, weights={"semantic": 1.0, "keyword": 1.1, "exact": 1.0})
FILLER = (
    "The service reads its settings at start and the worker retries a failed request after a short wait. "
    "Every night the backup job copies the ledger to the bucket and the report lists what changed. "
)


def _vector(similarity: float, seed: int) -> Vector:
    """A unit vector whose cosine with the query is ``similarity``."""
    rest = np.random.default_rng(seed).standard_normal(DIM - 1)
    rest = rest / np.linalg.norm(rest) * math.sqrt(max(0.0, 1.0 - similarity**2))
    return np.asarray([similarity, *rest], dtype=np.float32)


def _records(texts: list[str], similarities: list[float]) -> list[Record]:
    return [
        Record(f"n{i}.md#0", f"n{i}.md", 0, text, _vector(sim, i), {"parent_chain": [f"Note {i}"]})
        for i, (text, sim) in enumerate(zip(texts, similarities, strict=True))
    ]


def _memory(records: list[Record], root: Path) -> tuple[Any, QueryEngine]:
    store = InMemoryStore("ids")
    store.open(CollectionSpec("ids", DIM, "test"))
    store.upsert(records)
    keeper = IndexKeeper(lambda s: (BM25Index(), "bm25"), name="t")
    return store, QueryEngine(lambda q: QUERY, name="t", indexes=keeper.refresh(store))


def _sqlite(records: list[Record], root: Path) -> tuple[Any, QueryEngine]:
    store = SQLiteStore(root / "index.sqlite", "ids")
    store.open(CollectionSpec("ids", DIM, "test"))
    for r in records:
        store.replace_source(r.source, [r], FileState(r.source, 1.0, 1, "h", "test", 1))
    keeper = IndexKeeper(lambda s: (TantivyIndex.from_options(s, None, TantivyOptions()), "tantivy"), name="t")
    return store, QueryEngine(lambda q: QUERY, name="t", indexes=keeper.refresh(store))


STORES: dict[str, Callable[[list[Record], Path], tuple[Any, QueryEngine]]] = {"memory": _memory, "sqlite": _sqlite}


def _ids(engine: QueryEngine, store: Any, query: str, settings: SearchSettings = FOCUSED) -> list[str]:
    return [hit.record.id for hit in engine.search(store, query, settings)]


# -- analysis -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "whole", "parts"),
    [
        ("parse_args", "parse_args", ["pars", "arg"]),
        ("HTTPTransport", "httptransport", ["http", "transport"]),
        ("billing.retry.limit", "billing.retry.limit", ["bill", "retri", "limit"]),
        ("ERR-4521", "err-4521", ["err", "4521"]),
        ("#1234", "#1234", ["1234"]),
        ("123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000", ["e89b", "a456"]),
        ("1.4.2", "1.4.2", []),
        ("0x1f", "0x1f", []),
        ("ann.lee@corp.example.com", "ann.lee@corp.example.com", ["ann", "lee", "corp", "exampl"]),
        ("https://example.com/docs/retry-limit", "https://example.com/docs/retry-limit", ["doc", "retri", "exampl"]),
    ],
)
def test_an_identifier_is_indexed_whole_and_by_its_parts_the_same_way_everywhere(
    text: str, whole: str, parts: list[str]
) -> None:
    terms = Analyzer().terms(f"See {text}, then retry.")
    assert whole in terms and set(parts) <= set(terms), terms
    # tantivy's ``body`` holds the builtin BM25's terms, these among them
    analyzer = Analyzer()
    added = [t for t in map(analyzer.term, identifier_words(text)) if t is not None]
    assert ident_terms(text) == added
    assert identifier_shaped(text)
    # a query looks up its words and the identifier's whole (the parts of a document's identifiers are its words)
    query = Analyzer().query_terms(text)
    assert whole in query and set(query) <= set(terms)


def test_prose_is_not_taken_for_identifiers() -> None:
    assert not any(identifier_shaped(w) for w in ["retry", "Where", "HTTP", "URLs", "4.2", "2024", "e", "built-in"])
    assert identifier_words("Where is the service? It retries, then stops.") == []


@pytest.mark.parametrize(
    "token",
    ["a" * 1_000_000 + "-", "a" * 1_000_000 + "É", "a-" * 500_000, "aB" * 500_000, "x." * 500_000 + "!"],
    ids=["run-then-connector", "run-then-non-ascii-capital", "connectors", "camel", "dotted"],
)
def test_a_megabyte_token_is_analysed_in_linear_time(token: str) -> None:
    """The identifier patterns start only where a run of letters starts: tried again inside a long run that
    cannot match, they were quadratic (a 40,000-letter token took 32 s; this megabyte would take hours)."""
    started = time.perf_counter()
    identifier_words(token)
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("strategy", ["bm25", "tantivy"])
def test_the_whole_identifier_outranks_chunks_holding_only_its_parts(strategy: str) -> None:
    """``billing_retry_limit``'s parts are everywhere; the one chunk holding it whole comes first, ahead of a short
    chunk holding all three parts (which a split into parts alone ranked first: BM25's length normalisation)."""
    docs = [
        ("holder", FILLER * 3 + "Set billing_retry_limit to 5. " + FILLER * 3),
        ("parts", "billing retry limit"),
        ("neighbour", "billing_retry_window and the limit of billing_retry_count"),
        ("camel", "BillingRetryLimit is the class; its limit is billing's."),
    ]
    index: Any = BM25Index() if strategy == "bm25" else TantivyIndex()
    if strategy == "bm25":
        index.build(docs)
    else:
        index.build(docs)
    assert index.search("billing_retry_limit", 4)[0][0] == "holder"
    assert index.search("ERR-4521", 4) == []
    assert index.search("BillingRetryLimit", 4)[0][0] == "camel"
    assert {"holder", "parts", "neighbour", "camel"} <= {i for i, _ in index.search("billing retry limit", 4)}


def test_a_quoted_phrase_in_memory_is_matched_word_for_word_not_inside_a_longer_word() -> None:
    texts = InMemoryTexts({"a": "raised err-45210 twice", "b": "see err-4521.", "c": "zqtok0xy", "d": "v 4.2.1"})
    assert [rid for _, _, rid in texts.containing(("err-4521",), 10)] == ["b"]
    assert texts.containing(("zqtok0x",), 10) == []
    assert texts.containing(("4.2",), 10) == []


# -- the engine: off-topic and ranking ----------------------------------------------------------------------
def _corpus(token: str, position: int, similar: float) -> tuple[list[str], list[float]]:
    """A long chunk holding ``token`` at character ``position`` (its dense similarity 0.02), prefix neighbours
    of it in other chunks, and twenty chunks the dense search likes (``similar``)."""
    body = (FILLER * 40)[:6000]
    at = body.rfind(" ", 0, max(position, 1)) + 1 if position else 0
    holder = f"{body[:at]}{token} {body[at:]}"
    neighbours = [f"{FILLER} {token}y and {token[:-2]}14x here." for _ in range(3)]
    others = [FILLER + f" Note {i}." for i in range(20)]
    return [holder, *neighbours, *others], [0.02, 0.05, 0.05, 0.05, *([similar] * 20)]


@pytest.mark.parametrize("store_kind", sorted(STORES))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.integers(0, 6000), similar=st.sampled_from([0.1, 0.2, 0.6, 0.9]))
def test_a_token_anywhere_in_its_chunk_is_found_first_plain_and_quoted(
    store_kind: str, position: int, similar: float, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Whatever the dense search prefers (0.1 and 0.2: every similarity under the off-topic level) and wherever the
    token stands: its holder first, plain, quoted or in a question, in focused and ranked results, prefix
    neighbours after it."""
    texts, sims = _corpus("zqtok0x", position, similar)
    store, engine = STORES[store_kind](_records(texts, sims), tmp_path_factory.mktemp(store_kind))
    try:
        for query in ("zqtok0x", '"zqtok0x"', 'where is "zqtok0x" handled?', "where is zqtok0x handled?"):
            for chosen in (FOCUSED, RANKED):
                found = _ids(engine, store, query, chosen)
                assert found and found[0] == "n0.md#0", (query, chosen.relative_cutoff, found[:3])
    finally:
        store.close()


@pytest.mark.parametrize("store_kind", sorted(STORES))
def test_off_topic_questions_still_get_nothing(store_kind: str, tmp_path: Path) -> None:
    texts, sims = _corpus("zqtok0x", 100, 0.2)
    store, engine = STORES[store_kind](_records(texts, sims), tmp_path)
    try:
        for query in ("best pizza recipe in Naples", "asdf qwerty zxcv", "who won the match 2-1 last night?"):
            assert _ids(engine, store, query) == [], query
        assert _ids(engine, store, "zqtok9q") == []  # an identifier nothing holds
    finally:
        store.close()


# -- the tool, with the default model --------------------------------------------------------------------------
def test_the_default_tool_finds_each_notes_own_token_first(tmp_path: Path, minilm: Any) -> None:
    """The issue's probe: twenty notes of ordinary words, each with one unique nine-letter token; the default tool
    answered every plain query with "No relevant results"."""
    rng = np.random.default_rng(47)
    docs = tmp_path / "docs"
    docs.mkdir()
    tokens = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 9)) for _ in range(20)]
    for i, token in enumerate(tokens):
        words = [str(w) for w in rng.choice(FILLER.replace(".", "").split(), 120)]
        words.insert(int(rng.integers(0, 120)), token)
        (docs / f"note{i:02d}.md").write_text(f"# Note {i}\n\n{' '.join(words)}\n", encoding="utf-8")
    config = {"type": "hierarchical_document", "name": "notes", "source": str(docs)}
    tool = HierarchicalDocumentTool(HierarchicalDocumentToolConfig.model_validate(config), base_dir=tmp_path)
    tool.initialize_sync()
    try:
        for i, token in enumerate(tokens):
            for query in (token, f'"{token}"'):
                results = tool.search_results_sync(query)
                assert results and results[0].source.endswith(f"note{i:02d}.md"), (query, results[:1])
        assert tool.search_text_sync("best pizza recipe in Naples").startswith("No relevant results: nothing")
    finally:
        tool.close()


def test_a_keyword_index_of_the_layout_before_identifiers_is_rebuilt_once_from_the_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index written before the ``ident`` field (FORMAT 4) opens: rebuilt from the store's records (no vector is
    computed) with one info line, then an identifier is found whole; the next open loads it as it is."""
    import json
    import logging

    import tantivy
    from deckhand.retrieval import tantivy_keyword

    store = SQLiteStore(tmp_path / "index.sqlite", "ids")
    store.open(CollectionSpec("ids", DIM, "test"))
    record = Record("a.md#0", "a.md", 0, "Raised as ERR-4521 by the parser.", _vector(0.5, 1), {})
    store.replace_source("a.md", [record], FileState("a.md", 1.0, 1, "h", "test", 1))
    path = store.side_index_path(tantivy_keyword.SIDE_INDEX)
    assert path is not None
    path.mkdir()
    older = tantivy.SchemaBuilder()
    for name in ("body", "heading", "path"):
        older.add_text_field(name, index_option="freq")
    older.add_text_field("content", index_option="position")
    older.add_text_field("id", stored=True, tokenizer_name="raw")
    tantivy.Index(older.build(), path=str(path))
    settings = json.loads(TantivyIndex().settings())
    settings["format"] = 4
    (path / "position.json").write_text(
        json.dumps({"settings": json.dumps(settings, sort_keys=True), "version": 1, "last_row": 1})
    )
    with caplog.at_level(logging.INFO, logger="deckhand"):
        index = TantivyIndex.from_options(store, None, TantivyOptions())
        index.sync(store)
    assert [r.getMessage() for r in caplog.records if "another layout" in r.getMessage()] != []
    assert len([r for r in caplog.records if "layout" in r.getMessage()]) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert [i for i, _ in index.search("err-4521", 5)] == ["a.md#0"]
    again = TantivyIndex.from_options(store, None, TantivyOptions())
    again.sync(store)
    assert again.synced == "loaded"
    store.close()
