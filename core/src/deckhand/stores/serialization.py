"""JSON forms of a collection's spec and of manifest entries, the one shape server stores keep them in."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from deckhand.types import Algorithm, CollectionSpec, FileState, Metric


def file_state_to_json(state: FileState) -> str:
    """``state`` as a JSON object (text kept as written: ``ensure_ascii=False``)."""
    return json.dumps(dataclasses.asdict(state), ensure_ascii=False)


def file_state_from_json(raw: str) -> FileState:
    """The :class:`FileState` :func:`file_state_to_json` wrote."""
    data = json.loads(raw)
    return FileState(
        data["source"], float(data["mtime"]), int(data["size"]), data["sha256"], data["model"], int(data["chunk_count"])
    )


def spec_to_dict(spec: CollectionSpec) -> dict[str, Any]:
    """``spec``'s fields, enums as their values."""
    return {**dataclasses.asdict(spec), "metric": spec.metric.value, "algorithm": spec.algorithm.value}


def spec_from_json(raw: str) -> CollectionSpec:
    """The :class:`CollectionSpec` of a JSON object with :func:`spec_to_dict`'s keys (others ignored)."""
    return spec_from_dict(json.loads(raw))


def spec_from_dict(data: Mapping[str, Any]) -> CollectionSpec:
    """The :class:`CollectionSpec` of a mapping with :func:`spec_to_dict`'s keys (others are ignored)."""
    return CollectionSpec(
        name=data["name"],
        dimension=int(data["dimension"]),
        embedding_model=data["embedding_model"],
        metric=Metric(data["metric"]),
        algorithm=Algorithm(data["algorithm"]),
    )
