"""Metadata filters (``StoreCapability.FILTERS``): every operator against the reference evaluation."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from deckhand.bases import StoreBase
from deckhand.capabilities import NativeKeywordSearch, StoreCapability
from deckhand.errors import FilterError
from deckhand.filters.conditions import Filter, Op, condition
from deckhand.similarity import exact_scores
from deckhand.stores import filtering
from deckhand.testing.store_conformance.store_fixtures import (
    AWKWARD_SOURCES,
    SCORE_TOLERANCE,
    StoreKit,
    _require,
    file_state,
    make_vectors,
)
from deckhand.types import Algorithm, Metric, Record, Vector, record_id

#: Where each source of the filter corpus lives relative to a tool's source (one per source).
FILTER_PATHS = (
    "guides/setup.md",
    "guides/a b-c,d|e{f}.md",
    "notes/ünïcødé 文档 'quoted' \"double\" %_*.txt",
    "guides/setup.MD",
)

#: Document fields the filter corpus cycles through: strings, numbers, booleans, lists, objects, missing keys.
FILTER_METADATA: tuple[dict[str, Any], ...] = (
    {
        "author": "Ann",
        "year": 2021,
        "tags": ["ops", "security"],
        "draft": False,
        "rating": 4.5,
        "last-updated": "2024",
        "sep": "x y",
    },
    {"author": "Bo", "year": 2019, "tags": ["ops"], "draft": True, "rating": 3, "stars": "*b*b*"},
    {"author": "ann", "year": "2021", "tags": [], "draft": "false"},
    {"author": "Ann", "year": 2023.0, "tags": ["a,b|c{d} 'q' \"dq\" %_*", "ünï 文档"], "rating": 5, "flag": True},
    {"author": {"name": "Ann"}, "year": [2021], "tags": "ops", "draft": None, "dir": "C:\\docs\\*"},
    {"author": "Cy", "year": 2020, "tags": ["security", 7, True], "draft": False, "rating": -1.25},
)


def filter_cases() -> list[tuple[str, Filter]]:
    """Every filter kind and operator, with the edge cases each store's translation must get right."""

    def one(key: str, op: Op, *values: Any) -> Filter:
        return Filter((condition(key, op, values),))

    return [
        ("author eq 'Ann' (case-sensitive; an object never matches)", one("author", Op.EQ, "Ann")),
        ("author eq any of", one("author", Op.EQ, "Ann", "Bo")),
        ("list membership tags eq 'ops'", one("tags", Op.EQ, "ops")),
        ("awkward text in a list", one("tags", Op.EQ, "a,b|c{d} 'q' \"dq\" %_*")),
        ("unicode text", one("tags", Op.EQ, "ünï 文档")),
        ("number eq int (2021.0 == 2021, '2021' is text)", one("year", Op.EQ, 2021)),
        ("number eq float", one("year", Op.EQ, 2023.0)),
        ("text eq '2021' (not the number)", one("year", Op.EQ, "2021")),
        ("list of numbers eq 7", one("tags", Op.EQ, 7)),
        ("bool eq true (not the text 'false', not 1)", one("draft", Op.EQ, True)),
        ("bool eq false", one("draft", Op.EQ, False)),
        ("bool in a list", one("tags", Op.EQ, True)),
        ("ne (records without the key pass)", one("author", Op.NE, "Ann")),
        ("ne any of", one("tags", Op.NE, "ops", "security")),
        ("lt", one("year", Op.LT, 2021)),
        ("lte", one("year", Op.LTE, 2021)),
        ("gt float bound", one("rating", Op.GT, 3.5)),
        ("gte negative", one("rating", Op.GTE, -1.25)),
        ("booleans are not numbers", one("flag", Op.GT, 0)),
        ("glob on path", one("path", Op.GLOB, "guides/*")),
        ("glob crosses / and is case-sensitive", one("path", Op.GLOB, "*.md")),
        ("glob ? is one character", one("path", Op.GLOB, "guides/?etup.md")),
        ("glob with awkward literals", one("path", Op.GLOB, "*{f}.md", "*%_*.txt", "*'quoted'*")),
        ("glob on list items", one("tags", Op.GLOB, "sec*")),
        ("glob with a backslash (a literal)", one("dir", Op.GLOB, "*\\*")),
        ("glob with a backslash before a wildcard", one("dir", Op.GLOB, "C:\\d*")),
        ("glob of a backslash that matches nothing", one("author", Op.GLOB, "*\\*")),
        ("text with backslashes", one("dir", Op.EQ, "C:\\docs\\*")),
        ("glob ? is one character, not one byte", one("tags", Op.GLOB, "ünï ??")),
        ("a control character is itself (Redis's TAG separator was a space)", one("sep", Op.EQ, "x\x1fy")),
        ("text with a space", one("sep", Op.EQ, "x y")),
        ("glob over a stored '*' (RediSearch 2.10 looped forever)", one("stars", Op.GLOB, "**b", "*?*b")),
        ("key with a hyphen", one("last-updated", Op.EQ, "2024")),
        ("exists", one("rating", Op.EXISTS, True)),
        ("missing (or null)", one("draft", Op.EXISTS, False)),
        ("type any of", one("file_type", Op.EQ, "md", "txt")),
        (
            "conjunction of every kind",
            Filter(
                (
                    condition("path", Op.GLOB, ["guides/*"]),
                    condition("file_type", Op.EQ, ["md"]),
                    condition("year", Op.GTE, [2020]),
                    condition("author", Op.NE, ["Bo"]),
                    condition("rating", Op.EXISTS, [True]),
                )
            ),
        ),
    ]


class FilterTests(StoreKit):
    """Metadata filters (``StoreCapability.FILTERS``): every operator against the reference evaluation."""

    # -- capability: filters ----------------------------------------------------------------
    def _filter_corpus(self, store: StoreBase, rng: np.random.Generator) -> tuple[list[Record], Vector]:
        """Records of every metadata shape a filter meets, written through ``replace_source``."""
        records: list[Record] = []
        per_source = 12
        for s, (source, path) in enumerate(zip((*AWKWARD_SOURCES, "guides/setup.MD"), FILTER_PATHS, strict=True)):
            vectors = make_vectors(rng, per_source, self.dimension)
            batch = []
            for i in range(per_source):
                n = s * per_source + i
                meta = dict(FILTER_METADATA[n % len(FILTER_METADATA)])
                meta.update({"path": path, "file_type": path.rsplit(".", 1)[-1].lower(), "n": n})
                batch.append(Record(record_id(source, i), source, i, f"chunk {n}", vectors[i], meta))
            store.replace_source(source, batch, file_state(source, chunks=per_source))
            records.extend(batch)
        return records, np.stack([r.vector for r in records])

    def _check_filtered(
        self, hits: Sequence[Any], records: Sequence[Record], where: Filter, algorithm: Algorithm, label: str
    ) -> None:
        expected = {r.id for r in records if where.matches(r.metadata)}
        got = self._ids(hits)
        wrong = sorted(set(got) - expected)
        assert not wrong, f"filter {label}: returned {len(wrong)} record(s) that do not satisfy it, e.g. {wrong[:3]}"
        assert len(got) == len(set(got)), f"filter {label}: duplicate hits"
        if self._exact(algorithm):
            assert set(got) == expected, (
                f"filter {label}: {len(expected - set(got))} matching record(s) missing, e.g. "
                f"{sorted(expected - set(got))[:3]}"
            )
        else:
            assert len(set(got) & expected) >= 0.9 * len(expected), f"filter {label}: recall below 0.9"

    def test_filters(
        self,
        store: StoreBase,
        algorithm: Algorithm,
        rng: np.random.Generator,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        _require(capabilities, StoreCapability.FILTERS)
        records, vectors = self._filter_corpus(store, rng)
        query = vectors[7]
        searcher: Any = store
        for label, where in filter_cases():
            hits = searcher.search(query, len(records), where=where)
            self._check_filtered(hits, records, where, algorithm, label)
        assert searcher.search(query, 5, where=Filter((condition("author", Op.EQ, ["nobody"]),))) == []

    def test_filters_rank_and_combine(
        self,
        store: StoreBase,
        algorithm: Algorithm,
        rng: np.random.Generator,
        capabilities: frozenset[StoreCapability],
    ) -> None:
        _require(capabilities, StoreCapability.FILTERS)
        records, vectors = self._filter_corpus(store, rng)
        where = Filter((condition("file_type", Op.EQ, ["md"]), condition("year", Op.GTE, [2020])))
        allowed = np.array([where.matches(r.metadata) for r in records])
        searcher: Any = store
        for probe in (3, 30):
            query = vectors[probe]
            keys, scores = exact_scores(Metric.COSINE, vectors, query)
            keys = np.where(allowed, keys, -np.inf)
            kth = np.sort(keys)[-5]
            hits = searcher.search(query, 5, where=where)
            assert len(hits) == 5, f"a filter with {int(allowed.sum())} matches returned {len(hits)} of 5 hits"
            position = {r.id: i for i, r in enumerate(records)}
            got = [keys[position[h.record.id]] for h in hits]
            assert all(np.isfinite(got)), "a filtered search returned a record the filter excludes"
            assert np.all(np.diff(got) <= 1e-4), "filtered hits are not best-first"
            for hit in hits:
                assert math.isclose(hit.score, float(scores[position[hit.record.id]]), abs_tol=SCORE_TOLERANCE)
            if self._exact(algorithm):
                assert sum(1 for key in got if key >= kth - 1e-4) == 5, "filtered top 5 differ from exact"
        source = AWKWARD_SOURCES[1]
        hits = searcher.search(vectors[0], 50, sources=[source], where=where)
        expected = {r.id for r in records if r.source == source and where.matches(r.metadata)}
        assert set(self._ids(hits)) <= expected, "sources= and where= together returned records outside both"
        if self._exact(algorithm):
            assert set(self._ids(hits)) == expected
        threshold = 0.3
        hits = searcher.search(vectors[0], 50, min_score=threshold, where=where)
        assert all(h.score >= threshold and where.matches(h.record.metadata) for h in hits)
        if isinstance(store, NativeKeywordSearch) and StoreCapability.KEYWORD_SEARCH in capabilities:
            kw: Any = store
            hits = kw.keyword_search("chunk", 100, where=where)
            expected = {r.id for r in records if where.matches(r.metadata)}
            assert hits, "keyword_search with a filter found nothing"
            assert set(self._ids(hits)) <= expected, "keyword_search returned records the filter excludes"
            assert kw.keyword_search("chunk", 100, where=Filter((condition("author", Op.EQ, ["nobody"]),))) == []

    def test_filters_agree_with_the_reference(
        self, connect: Callable[[], StoreBase], collection: str, capabilities: frozenset[StoreCapability]
    ) -> None:
        """Property: on random metadata (awkward text, equal-as-float numbers, lists, objects, None) every
        random filter returns exactly the records :meth:`Filter.matches` accepts.

        ``DECKHAND_HYPOTHESIS_EXAMPLES`` sets the number of examples (see
        :mod:`deckhand.testing.filter_strategies`); a failure shows the smallest metadata and filter found.
        """
        _require(capabilities, StoreCapability.FILTERS)
        from hypothesis import given
        from hypothesis import strategies as st

        from deckhand.testing import filter_strategies as fs

        spec = self._process_spec(collection)
        store = connect()
        store.open(spec)
        searcher: Any = store
        rng = np.random.default_rng(11)
        vectors = make_vectors(rng, 12, self.dimension)
        exact = self._exact(spec.algorithm)

        @fs.property_settings()
        @given(data=st.data())
        def check(data: st.DataObject) -> None:
            store.delete_source("p.md")  # each example starts from nothing (so a failure replays the same)
            # The file as first ingested, then as re-ingested after an edit: a rewritten record must keep
            # nothing of its previous metadata (Redis kept the old filter fields of a rewritten HASH).
            for metadata in (data.draw(fs.metadata_lists()), data.draw(fs.metadata_lists())):
                records = [
                    Record(record_id("p.md", i), "p.md", i, f"chunk {i}", vectors[i], meta)
                    for i, meta in enumerate(metadata)
                ]
                store.replace_source("p.md", records, file_state("p.md", chunks=len(records)))
            for _ in range(4):
                where = data.draw(fs.filters_for(metadata))
                expected = {r.id for r in records if where.matches(r.metadata)}
                got = {h.record.id for h in searcher.search(vectors[0], len(records), where=where)}
                label = f"filter {where.describe()} over metadata {metadata!r}"
                assert got <= expected, f"{label}: returned records that fail it: {sorted(got - expected)}"
                if exact:
                    assert got == expected, f"{label}: missed records that pass it: {sorted(expected - got)}"

        check()

    def test_filters_refused_when_undeclared(
        self, store: StoreBase, rng: np.random.Generator, capabilities: frozenset[StoreCapability]
    ) -> None:
        if StoreCapability.FILTERS in capabilities:
            pytest.skip("the store declares 'filters': test_filters checks them")
        _, vectors = self._filter_corpus(store, rng)
        where = Filter((condition("author", Op.EQ, ["nobody"]),))
        with pytest.raises(FilterError):
            filtering.search(store, vectors[0], 5, where=where)
        searcher: Any = store
        try:
            hits = searcher.search(vectors[0], 5, where=where)
        except Exception:
            return  # refusing a filter it cannot apply is right
        name = type(store).__name__
        assert hits, (
            f"{name} applies filters (search(where=...)) without declaring StoreCapability.FILTERS: declare it, "
            "so this kit tests it"
        )
        pytest.fail(f"{name}.search(where=...) ignored the filter and returned unfiltered hits: raise instead")
