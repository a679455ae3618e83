""":class:`RankedTool`, a source tool whose queries go through its index's query engine in one pass."""

from __future__ import annotations

from typing import Any

from deckhand.filters.conditions import Filter
from deckhand.filters.spec import FilterInput
from deckhand.retrieval.engine import Ranking, SearchSettings
from deckhand.similarity import off_topic_below, unrelated_below
from deckhand.tools import NO_OPTIONS
from deckhand.tools.answers import Answer, Empty, SearchOptions
from deckhand.tools.contextual import ContextualChunks
from deckhand.types import SearchHit, SearchResult


class RankedTool(ContextualChunks):
    """A tool that answers from its index's query engine: a subclass maps its configuration to
    :class:`~deckhand.retrieval.engine.SearchSettings` and may shape its results (:meth:`result_of`)."""

    #: What the score threshold is called in the line saying that every candidate was under it.
    threshold_name = "score"

    def search_settings(self, top_k: int | None = None, **overrides: Any) -> SearchSettings:
        """The query engine's settings for one query (``overrides``: a query's ``mode`` and ``min_score``)."""
        raise NotImplementedError

    def answer(self, query: str, options: SearchOptions = NO_OPTIONS) -> Answer:
        """The results for ``query``, their text, and why there are none, from one pass of the engine."""
        index = self.index
        index.ready(query)
        where = index.filter_for(options.filter)
        overrides = {k: v for k, v in (("mode", options.mode), ("min_score", options.min_score)) if v is not None}
        settings = self.search_settings(options.top_k, **overrides)
        ranking = index.search(query, settings, where)
        results = [self.result_of(rank, hit) for rank, hit in enumerate(ranking.hits, start=1)]
        answer = Answer(results, "", None, ranking.candidates, ranking.under_threshold, ranking.best)
        if results:
            answer.text = self.format_results(results)
        else:
            answer.empty, answer.text = self.explain(query, ranking, settings, where)
        return answer

    def search_results_sync(
        self, query: str, top_k: int | None = None, *, filter: FilterInput = None
    ) -> list[SearchResult]:
        """The ``top_k`` best results for ``query`` that pass ``filter``: :meth:`answer`'s."""
        return self.answer(query, SearchOptions(top_k, filter)).results

    def result_of(self, rank: int, hit: SearchHit) -> SearchResult:
        """The result ``hit`` makes at ``rank``."""
        record = hit.record
        return SearchResult(
            rank=rank,
            score=hit.result_score,
            source=record.source,
            chunk_index=record.chunk_index,
            content=record.content,
            metadata=record.metadata,
        )

    def explain(
        self, query: str, ranking: Ranking, settings: SearchSettings, where: Filter | None
    ) -> tuple[Empty, str]:
        """Why ``ranking`` (of ``settings``, with filter ``where``) holds no result, and the line that says so."""
        floor = self.relevance_floor()
        best = ranking.best
        if floor is not None and not ranking.dense:  # a mode without the dense search: one look at it
            hits = self.index.engine.dense(self.index.ready(query), query, 1, where=where)
            best = hits[0].score if hits else None
        exact = self.index.engine.exact
        # A query holding an identifier or quoted phrase the index holds verbatim and rarely is never off-topic.
        if floor is not None and best is not None and best < floor and not (exact is not None and exact.anchors(query)):
            return Empty.OFF_TOPIC, (
                f"No relevant results: nothing indexed is about this query (best similarity {best:.2f}, "
                f"under the embedding model's off-topic level {round(floor, 3):g})"
            )
        if ranking.under_threshold and settings.min_score is not None:
            return Empty.UNDER_THRESHOLD, f"No results above {self.threshold_name} threshold {self.shown(settings)}"
        if where is not None:
            return Empty.FILTERED_OUT, f"No relevant results found for query: {query} (with the filter given)"
        return Empty.NOTHING, f"No relevant results found for query: {query}"

    def shown(self, settings: SearchSettings) -> str:
        """The score threshold as the empty answer's line shows it."""
        return str(settings.min_score)

    def similarity_floor(self) -> float | None:
        """``min_similarity_score`` when set (0: none); else, with ``results: focused``, the similarity under which the
        embedding model's results are noise, where measured (:data:`deckhand.similarity.UNRELATED_COSINE`)."""
        shape = self.config.result_shape()
        if shape.min_similarity is not None:
            return shape.min_similarity or None
        embedder = self.index.embedder
        if not shape.noise_floor or embedder is None:
            return None
        return unrelated_below(embedder.model_id, self.index.metric)

    def relevance_floor(self) -> float | None:
        """The similarity a query's best match needs for any result: with ``results: focused`` and no
        ``min_similarity_score``, the model's measured off-topic level (:data:`deckhand.similarity.OFF_TOPIC_COSINE`);
        else none."""
        shape = self.config.result_shape()
        embedder = self.index.embedder
        if shape.min_similarity is not None or not shape.noise_floor or embedder is None:
            return None
        return off_topic_below(embedder.model_id, self.index.metric)
