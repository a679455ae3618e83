"""What the integrity check an ingest runs on the default store's index file costs.

    uv run python benchmarks/index_check_bench.py [--chunks 100000] [--dir /tmp]

Builds an index of ``--chunks`` records (384-dimension vectors, 150-word texts, 100 per file)
with the sqlite store, then times ``SQLiteStore.verify_integrity()`` (``PRAGMA quick_check``,
which reads every page) on a fresh connection three times, the stamp of the last passing check
removed before each: the first run after building, when the file is in the page cache, as on a
machine that just ingested or searched it. A fourth run finds the file as the third left it
(stamped) and reads no page, as an ingest after deckhand's own ingest does. Wall seconds
(the check waits for reads) and CPU seconds of this process are printed with the file's size.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite import file as sqlite_file
from deckhand.types import Algorithm, CollectionSpec, FileState, Metric, Record

PER_FILE = 100
DIMENSION = 384


def build(path: Path, chunks: int) -> None:
    store = SQLiteStore(path, "kb")
    store.open(CollectionSpec("kb", DIMENSION, "bench", Metric.COSINE, Algorithm.FLAT))
    rng = np.random.default_rng(0)
    for f in range(chunks // PER_FILE):
        source = f"docs/file{f:06}.md"
        vectors = rng.standard_normal((PER_FILE, DIMENSION)).astype(np.float32)
        records = [
            Record(f"{source}_chunk_{i}", source, i, "word " * 150, vectors[i], {"path": source})
            for i in range(PER_FILE)
        ]
        store.replace_source(source, records, FileState(source, 1.0, 1, "0" * 64, "bench", PER_FILE))
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "index.sqlite"
        started = time.perf_counter()
        build(path, args.chunks)
        print(
            f"built {args.chunks:,} chunks in {time.perf_counter() - started:.1f} s: {path.stat().st_size / 1e6:.1f} MB"
        )
        for run in range(4):
            stamped = run == 3  # the last run finds the stamp the third left: no page is read
            if not stamped:
                sqlite_file.unstamp(path)
            store = SQLiteStore(path, "kb")
            wall, cpu = time.perf_counter(), time.process_time()
            store.verify_integrity()
            label = "stamped file" if stamped else f"check {run + 1}"
            print(f"{label}: {time.perf_counter() - wall:.3f} s wall, {time.process_time() - cpu:.3f} s CPU")
            store.close()


if __name__ == "__main__":
    main()
