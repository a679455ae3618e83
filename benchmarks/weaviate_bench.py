"""Weaviate store benchmark: bulk insert rate, search p50/p95 at 10,000 chunks, 8-client QPS, recall@10.

The same measurement as ``store_bench.py`` (its ``weaviate`` entry), against the server at
``$WEAVIATE_URL`` (gRPC on port 50051, or ``$WEAVIATE_GRPC_PORT``; ``$WEAVIATE_API_KEY`` when the
server wants a key). No Weaviate server can be started on these machines (no registry ships its
binary), so without ``WEAVIATE_URL`` this prints why and exits 0, and ``nox -s bench`` goes on.

    WEAVIATE_URL=http://localhost:8080 uv run python benchmarks/weaviate_bench.py
    WEAVIATE_URL=http://localhost:8080 uv run python benchmarks/weaviate_bench.py --algorithm FLAT --sizes 10000
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store_bench
from deckhand_weaviate.testing import ENV_URL, SKIP_REASON


def main(argv: list[str] | None = None) -> int:
    if not os.environ.get(ENV_URL):
        print(f"weaviate_bench skipped: {SKIP_REASON}")
        return 0
    args = list(sys.argv[1:] if argv is None else argv)
    if not any(a == "--sizes" or a.startswith("--sizes=") for a in args):
        args += ["--sizes", "10000"]
    return store_bench.main(["--stores", "weaviate", *args])


if __name__ == "__main__":
    sys.exit(main())
