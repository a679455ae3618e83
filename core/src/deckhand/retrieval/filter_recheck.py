"""The filter recheck: which ids of an in-process ranking (BM25, exact matches) pass a search filter."""

from __future__ import annotations

from collections.abc import Sequence

from deckhand.bases import StoreBase
from deckhand.filters.conditions import Filter
from deckhand.types import Record

#: Records whose metadata is read at once when filtering an in-process ranking.
JUDGE_BATCH = 256


class FilterRecheck:
    """Which record ids pass a filter, judged once per id on stored metadata read in batches into ``records``."""

    def __init__(self, store: StoreBase, where: Filter | None, records: dict[str, Record]) -> None:
        self.store = store
        self.where = where
        self.records = records
        self.verdicts: dict[str, bool] = {}

    def _judge(self, ids: Sequence[str]) -> None:
        unknown = [i for i in dict.fromkeys(ids) if i not in self.verdicts]
        if not unknown or self.where is None:
            return
        missing = [i for i in unknown if i not in self.records]
        self.records.update((r.id, r) for r in self.store.get(missing))
        for record_id in unknown:
            record = self.records.get(record_id)
            self.verdicts[record_id] = record is not None and self.where.matches(record.metadata)

    def allows(self, record_id: str) -> bool:
        if self.where is None:
            return True
        self._judge([record_id])
        return self.verdicts[record_id]

    def first(self, ranked: Sequence[tuple[str, float]], depth: int) -> list[tuple[str, float]]:
        """The best ``depth`` of ``ranked`` that pass, in order."""
        out: list[tuple[str, float]] = []
        for start in range(0, len(ranked), JUDGE_BATCH):
            part = ranked[start : start + JUDGE_BATCH]
            self._judge([i for i, _ in part])
            out.extend(entry for entry in part if self.verdicts.get(entry[0], self.where is None))
            if len(out) >= depth:
                break
        return out[:depth]
