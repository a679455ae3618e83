"""Semantic Kernel store bridge benchmark: Chroma (embedded) and Qdrant (local mode) through the bridge.

The same measurements as ``store_bench.py`` (bulk insert rate, search p50/p95 and recall@10 over
200 sequential queries, queries per second from 8 client threads), on the bridged providers
whose engines run in this process: synthetic clustered unit vectors, dimension 384, COSINE,
k = 10. Each store is built through deckhand's plugin registry, as ``provider: chromadb`` and
``provider: qdrant`` are; the engine directory goes under ``--dir`` (default: a temporary
directory on the disk of ``$TMPDIR``).

Needs the plugin with both engines (not in the workspace environment)::

    nox -s "tests(package='semantic-kernel')" -- --co -q   # builds .nox/tests-package-semantic-kernel once
    .nox/tests-package-semantic-kernel/bin/python benchmarks/sk_bridge_bench.py --sizes 10000
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as store_bench.py: 8 client threads on 2 cores
import argparse
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from deckhand.config.models import DatabaseConfig
from deckhand.plugins import get_registry
from deckhand.stores.tool_store import create_store
from deckhand.types import Algorithm
from store_bench import HEADER, StoreFactory, StoreSetup, run


def bridged(provider: str, root: Path) -> StoreSetup:
    """A setup building ``provider``'s bridged store, its directory under ``root``."""

    def setup(stack: ExitStack, algorithm: Algorithm) -> StoreFactory:
        base = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=root, prefix=f"{provider}-")))
        component = get_registry().resolve("store", provider)
        config = DatabaseConfig(provider=provider, index_name="bench", vector_algorithm=algorithm)
        return lambda collection: create_store(component, config, collection, base_dir=base)

    return setup


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="chromadb,qdrant", help="comma-separated: chromadb, qdrant")
    parser.add_argument("--sizes", default="10000", help="comma-separated record counts")
    parser.add_argument("--dir", default=None, help="where the engines' directories go (default: $TMPDIR)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--concurrent-queries", type=int, default=800)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1000, help="records per upsert call")
    args = parser.parse_args(argv)
    args.algorithm = "HNSW"
    root = Path(args.dir or tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    print(
        f"dim {args.dim}, k {args.k}, {args.queries} queries, {args.clients} clients, COSINE, directories in {root}; "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at start",
        flush=True,
    )
    print(HEADER, flush=True)
    for size in [int(s) for s in args.sizes.split(",")]:
        for name in [s.strip() for s in args.stores.split(",") if s.strip()]:
            started = time.perf_counter()
            result = run(name, bridged(name, root), size, args)
            print(result.row(), f"(load {os.getloadavg()[0]:.1f}, {time.perf_counter() - started:.0f}s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
