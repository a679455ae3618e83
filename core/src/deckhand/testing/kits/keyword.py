"""The keyword strategy kit: a ranking of the built records only, best first, at most ``k``, that finds
the record holding a rare term; a rebuild replaces what was built."""

from __future__ import annotations

import pytest

from deckhand.bases import KeywordIndexBase

DOCS = (
    ("harbour_chunk_0", "The harbour opens at dawn and boats moor at the north quay."),
    ("harbour_chunk_1", "High tide comes twice a day; check the almanac before leaving the harbour."),
    ("gear_chunk_0", "Rope, anchor and lantern are kept in the gear locker."),
    ("birds_chunk_0", "Gulls nest on the south breakwater every spring."),
)


class KeywordKit:
    """What the keyword mixins share: the fixture a plugin overrides."""

    @pytest.fixture
    def keyword_index(self) -> KeywordIndexBase:
        """Override: an empty index of your strategy (``factory(store, cache_path, options)``)."""
        pytest.fail(f"{type(self).__name__}: override the keyword_index fixture to return your index")

    def test_subclasses_its_base(self, keyword_index: KeywordIndexBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(keyword_index, KeywordIndexBase), (
            f"{type(keyword_index).__name__} does not subclass deckhand.api.KeywordIndexBase: subclass it"
        )

    @pytest.fixture
    def built(self, keyword_index: KeywordIndexBase) -> KeywordIndexBase:
        keyword_index.build(DOCS)
        return keyword_index


class KeywordRankingTests(KeywordKit):
    """Searches answer built ids only, best first, at most ``k``; a rare term finds its record first."""

    def test_a_rare_term_ranks_its_record_first(self, built: KeywordIndexBase) -> None:
        found = built.search("almanac", 3)
        assert found and found[0][0] == "harbour_chunk_1", f"'almanac' is only in harbour_chunk_1, got {found}"
        assert built.search("lantern", 1)[0][0] == "gear_chunk_0"

    def test_results_are_built_ids_best_first_at_most_k(self, built: KeywordIndexBase) -> None:
        known = {doc_id for doc_id, _ in DOCS}
        for k in (1, 2, 10):
            found = built.search("high tide harbour", k)
            assert len(found) <= k, f"k={k} gave {len(found)} results"
            assert {doc_id for doc_id, _ in found} <= known, f"ids that were never built: {found}"
            scores = [score for _, score in found]
            assert scores == sorted(scores, reverse=True), f"not best first: {found}"
            assert len({doc_id for doc_id, _ in found}) == len(found), "an id twice"

    def test_no_match_and_a_blank_query_give_nothing(self, built: KeywordIndexBase) -> None:
        assert built.search("zeppelin", 5) == []
        assert built.search("   ", 5) == []


class KeywordRebuildTests(KeywordKit):
    """``build`` replaces the index: records of the previous build are gone."""

    def test_a_rebuild_replaces_the_records(self, built: KeywordIndexBase) -> None:
        built.build([("new_chunk_0", "A lighthouse guards the harbour entrance.")])
        assert built.search("almanac", 5) == [], "a record of the previous build is still found"
        assert [doc_id for doc_id, _ in built.search("lighthouse", 5)] == ["new_chunk_0"]


class KeywordStrategyTests(KeywordRankingTests, KeywordRebuildTests):
    """Every keyword strategy mixin."""
