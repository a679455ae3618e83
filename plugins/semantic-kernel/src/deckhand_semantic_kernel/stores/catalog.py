"""What a bridged collection knows about itself: its spec, the ingestion manifest and every record id.

Semantic Kernel's collections can get records by key everywhere, but listing them (``get``
without keys, or with a filter) is not implemented on several connectors (Qdrant raises
``NotImplementedError``), and none counts records. The bridge therefore keeps one catalog
record, by key, in a side collection next to the data: the spec the collection was created
with, the manifest, and the ids of each source's records. ``count()``, ``manifest()`` and
``iter_records()`` read it; ids of the common form ``<source>_chunk_<n>`` are kept as ranges
of chunk numbers, so the catalog of a 10 000-chunk source is a few bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from deckhand.api import Algorithm, CollectionSpec, FileState, Metric, record_id

#: The catalog record's key in the side collection.
CATALOG_KEY = "00000000-0000-5000-8000-00000000ca7a"
FORMAT = 1


@dataclass
class SourceIds:
    """The ids of one source's records: chunk-number ranges plus any id of another form."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    other: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, source: str, ids: Iterable[str]) -> SourceIds:
        numbers: list[int] = []
        other: set[str] = set()
        prefix = f"{source}_chunk_"
        for rid in ids:
            tail = rid[len(prefix) :] if rid.startswith(prefix) else ""
            if tail.isdigit() and record_id(source, int(tail)) == rid:
                numbers.append(int(tail))
            else:
                other.add(rid)
        return cls(_ranges(numbers), other)

    def ids(self, source: str) -> Iterator[str]:
        for start, end in self.ranges:
            for n in range(start, end):
                yield record_id(source, n)
        yield from sorted(self.other)

    def __len__(self) -> int:
        return sum(end - start for start, end in self.ranges) + len(self.other)

    def union(self, source: str, other: SourceIds) -> SourceIds:
        return SourceIds.of(source, [*self.ids(source), *other.ids(source)])

    def to_json(self) -> dict[str, Any]:
        return {"ranges": [list(r) for r in self.ranges], "other": sorted(self.other)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SourceIds:
        return cls([(int(a), int(b)) for a, b in data.get("ranges", [])], set(data.get("other", [])))


def _ranges(numbers: Iterable[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if out and out[-1][1] == n:
            out[-1] = (out[-1][0], n + 1)
        else:
            out.append((n, n + 1))
    return out


@dataclass
class Catalog:
    """The side record's content (see the module docstring)."""

    spec: CollectionSpec
    manifest: dict[str, FileState] = field(default_factory=dict)
    ids: dict[str, SourceIds] = field(default_factory=dict)

    def count(self) -> int:
        return sum(len(ids) for ids in self.ids.values())

    def ids_of(self, source: str) -> list[str]:
        entry = self.ids.get(source)
        return list(entry.ids(source)) if entry else []

    def all_ids(self) -> Iterator[str]:
        for source, entry in sorted(self.ids.items()):
            yield from entry.ids(source)

    def add(self, source: str, ids: Iterable[str]) -> None:
        new = SourceIds.of(source, ids)
        current = self.ids.get(source)
        self.ids[source] = current.union(source, new) if current else new

    def set(self, source: str, ids: Iterable[str]) -> None:
        entry = SourceIds.of(source, ids)
        if len(entry):
            self.ids[source] = entry
        else:
            self.ids.pop(source, None)

    def dumps(self) -> str:
        spec = asdict(self.spec)
        spec["metric"], spec["algorithm"] = self.spec.metric.value, self.spec.algorithm.value
        return json.dumps(
            {
                "format": FORMAT,
                "spec": spec,
                "manifest": {source: asdict(state) for source, state in self.manifest.items()},
                "ids": {source: entry.to_json() for source, entry in self.ids.items()},
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, text: str) -> Catalog:
        data = json.loads(text)
        spec = dict(data["spec"])
        spec["metric"], spec["algorithm"] = Metric(spec["metric"]), Algorithm(spec["algorithm"])
        return cls(
            CollectionSpec(**spec),
            {source: FileState(**state) for source, state in data.get("manifest", {}).items()},
            {source: SourceIds.from_json(entry) for source, entry in data.get("ids", {}).items()},
        )
