"""Another process for the store conformance kit: opens a store through its registered factory and reads or writes.

The kit runs ``python -m deckhand.testing.store_process`` with a JSON job on stdin, so a
check that data outlives the process (or that two processes can write at once) cannot be
passed by a store that only shares a module-level dict. The store is resolved exactly as
a tool resolves it: ``get_registry().resolve("store", provider)`` and
:func:`deckhand.stores.tool_store.create_store`. One JSON line per step goes to stdout.

A job::

    {"provider": "redis", "database": {...DatabaseConfig...}, "collection": "conf_1a2b",
     "base_dir": "/tmp/project", "spec": {...see deckhand.stores.serialization.spec_to_dict...},
     "steps": [{"op": "open"}, {"op": "read", "ids": [...], "probe": {...}}, ...]}

Steps: ``open`` (``previous`` spec, store type, capabilities), ``read`` (count, manifest,
records by id, a search, every record id), ``write`` (``replace_source`` of seeded records,
see :func:`seeded_records`), ``delete`` (``delete_source``), ``wait`` (print ``ready`` and
wait until a file exists, so several processes start writing together).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from deckhand.stores.serialization import spec_from_dict, spec_to_dict
from deckhand.types import FileState, Record, Vector, record_id

#: Seconds a ``wait`` step waits for its file before giving up.
WAIT_SECONDS = 60.0


def seeded_vectors(seed: int, n: int, dim: int) -> Vector:
    """``n`` unit vectors from ``seed``: both processes compute the same ones."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def seeded_records(source: str, seed: int, n: int, dim: int, *, tag: str = "") -> list[Record]:
    """``n`` records of ``source`` with vectors from ``seed`` and content ``"<tag> <source> <i>"``."""
    vectors = seeded_vectors(seed, n, dim)
    return [
        Record(record_id(source, i), source, i, f"{tag} {source} {i}".strip(), vectors[i], {"tag": tag})
        for i in range(n)
    ]


def seeded_state(source: str, n: int, *, tag: str = "", model: str = "conformance-model-v1") -> FileState:
    """The manifest entry written with :func:`seeded_records` (its hash names ``tag``)."""
    digest = f"{tag}:{source}".encode().hex()[:64].ljust(64, "0")
    return FileState(source, 1_700_000_000.25, 1000 + n, digest, model, n)


def state_to_json(state: FileState) -> list[Any]:
    return [state.source, state.mtime, state.size, state.sha256, state.model, state.chunk_count]


def _run(job: dict[str, Any]) -> None:
    from deckhand.capabilities import store_capabilities
    from deckhand.config.models import DatabaseConfig
    from deckhand.plugins import get_registry
    from deckhand.stores.tool_store import create_store

    config = DatabaseConfig.model_validate(job["database"])
    component = get_registry().resolve("store", job["provider"])
    store = create_store(component, config, job["collection"], base_dir=Path(job["base_dir"]))
    spec = spec_from_dict(job["spec"])
    assert spec is not None
    dim = spec.dimension
    try:
        for step in job["steps"]:
            op = step["op"]
            out: dict[str, Any] = {"op": op}
            if op == "open":
                previous = store.open(spec)
                out["previous"] = spec_to_dict(previous) if previous is not None else None
                out["type"] = f"{type(store).__module__}.{type(store).__qualname__}"
                out["capabilities"] = sorted(c.value for c in store_capabilities(store))
            elif op == "read":
                out["count"] = store.count()
                out["manifest"] = {source: state_to_json(s) for source, s in store.manifest().items()}
                out["got"] = [[r.id, r.content] for r in store.get(step.get("ids", []))]
                probe = step.get("probe")
                if probe is not None:
                    vector = seeded_vectors(probe["seed"], probe["n"], dim)[probe["row"]]
                    hits = store.search(vector, int(probe.get("k", 5)), sources=probe.get("sources"))
                    out["hits"] = [[h.record.id, h.record.content, h.score] for h in hits]
                out["ids"] = sorted(r.id for r in store.iter_records())
            elif op == "write":
                for _ in range(int(step.get("rounds", 1))):
                    for source in step["sources"]:
                        records = seeded_records(source, step["seed"], step["n"], dim, tag=step.get("tag", ""))
                        store.replace_source(source, records, seeded_state(source, step["n"], tag=step.get("tag", "")))
            elif op == "delete":
                for source in step["sources"]:
                    store.delete_source(source)
            elif op == "wait":
                print(json.dumps({"op": "ready"}), flush=True)
                path = Path(step["path"])
                deadline = time.monotonic() + WAIT_SECONDS
                while not path.exists():
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{path} did not appear within {WAIT_SECONDS:.0f}s")
                    time.sleep(0.005)
            else:
                raise ValueError(f"unknown step {op!r}")
            print(json.dumps(out), flush=True)
    finally:
        store.close()


def main() -> int:
    _run(json.load(sys.stdin))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
