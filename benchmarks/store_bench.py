"""Vector store benchmark: bulk insert, search latency, concurrent throughput and recall.

Synthetic unit vectors (dimension 384 by default) drawn around cluster centres, so
nearest neighbours are meaningful and an approximate index's recall is a real number.
Servers are started by the test launchers (``deckhand.testing.*_server``) unless
``$REDIS_URL`` (etc.) points at one.

    uv run python benchmarks/store_bench.py --stores inmemory,redis --sizes 10000,100000

Adding a store is one entry in :data:`STORES`: a function that receives an ExitStack
(for servers it starts) and the index algorithm, and returns ``factory(collection) ->
StoreBase`` giving a new connection per call.
"""

from __future__ import annotations

import argparse
import os

# The 8 client threads already use every core; OpenBLAS threads on top of them oversubscribe
# the CPUs (measured on the 2-core machine under load: a 2,000 x 384 mat-vec took 30 ms with
# default threading, 0.15 ms single-threaded). Set it before NumPy loads; an explicit value wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import statistics
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass

import numpy as np
from deckhand.api import StoreBase
from deckhand.similarity import exact_scores
from deckhand.types import Algorithm, CollectionSpec, Metric, Record, record_id

StoreFactory = Callable[[str], StoreBase]
StoreSetup = Callable[[ExitStack, Algorithm], StoreFactory]


def inmemory_setup(stack: ExitStack, algorithm: Algorithm) -> StoreFactory:
    """One shared in-process store per collection (connections are the same object)."""
    from deckhand.stores.inmemory import InMemoryStore

    stores: dict[str, InMemoryStore] = {}
    return lambda collection: stores.setdefault(collection, InMemoryStore(collection))


def redis_setup(stack: ExitStack, algorithm: Algorithm) -> StoreFactory:
    """Redis with the search module: ``$REDIS_URL`` or a server started for the run."""
    from deckhand.config.models import DatabaseConfig
    from deckhand_redis import RedisStore
    from deckhand_redis.server import RedisServer

    url = os.environ.get("REDIS_URL") or stack.enter_context(RedisServer()).url
    config = DatabaseConfig(provider="redis", connection_string=url, index_name="bench", vector_algorithm=algorithm)
    return lambda collection: RedisStore.from_config(config, collection)


def postgres_setup(stack: ExitStack, algorithm: Algorithm) -> StoreFactory:
    """PostgreSQL + pgvector: ``$POSTGRES_URL`` or a server started for the run."""
    import json

    from deckhand.config.models import DatabaseConfig
    from deckhand_postgres import PostgresStore
    from deckhand_postgres.server import PostgresServer

    url = os.environ.get("POSTGRES_URL") or stack.enter_context(PostgresServer()).url
    # Each of the 8 clients is its own store (pool); $POSTGRES_OPTIONS adds database.options as JSON.
    options = {"pool_max_size": 2, **json.loads(os.environ.get("POSTGRES_OPTIONS") or "{}")}
    config = DatabaseConfig(
        provider="postgres", connection_string=url, index_name="bench", vector_algorithm=algorithm, options=options
    )
    return lambda collection: PostgresStore.from_config(config, collection)


def weaviate_setup(stack: ExitStack, algorithm: Algorithm) -> StoreFactory:
    """Weaviate at ``$WEAVIATE_URL`` (none can be started here); ``$WEAVIATE_OPTIONS`` adds database.options as JSON."""
    import json

    from deckhand.config.models import DatabaseConfig
    from deckhand_weaviate import WeaviateStore
    from deckhand_weaviate.testing import ENV_URL, SKIP_REASON, live_options

    url = os.environ.get(ENV_URL)
    if not url:
        raise SystemExit(SKIP_REASON)
    options = {**live_options(), **json.loads(os.environ.get("WEAVIATE_OPTIONS") or "{}")}
    config = DatabaseConfig(
        provider="weaviate", connection_string=url, index_name="bench", vector_algorithm=algorithm, options=options
    )
    return lambda collection: WeaviateStore.from_config(config, collection)


#: store name -> setup; other store plugins add themselves here.
STORES: dict[str, StoreSetup] = {
    "inmemory": inmemory_setup,
    "redis": redis_setup,
    "postgres": postgres_setup,
    "weaviate": weaviate_setup,
}


@dataclass
class Result:
    store: str
    algorithm: str
    size: int
    insert_s: float
    p50_ms: float
    p95_ms: float
    qps: float
    recall: float

    def row(self) -> str:
        return (
            f"| {self.store} | {self.algorithm} | {self.size:,} | {self.insert_s:.1f} "
            f"| {self.size / self.insert_s:,.0f} | {self.p50_ms:.2f} | {self.p95_ms:.2f} "
            f"| {self.qps:,.0f} | {self.recall:.3f} |"
        )


HEADER = (
    "| store | index | records | bulk insert (s) | records/s | search p50 (ms) | search p95 (ms) "
    "| QPS, 8 clients | recall@10 |\n|---|---|---|---|---|---|---|---|---|"
)


def clustered_vectors(rng: np.random.Generator, n: int, dim: int, centres: np.ndarray) -> np.ndarray:
    """Unit vectors near randomly chosen ``centres`` (noise comparable to the spread of a topic)."""
    labels = rng.integers(0, len(centres), size=n)
    vectors = centres[labels] + rng.normal(scale=1.0 / np.sqrt(dim), size=(n, dim)).astype(np.float32) * 0.8
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def run(name: str, setup: StoreSetup, size: int, args: argparse.Namespace) -> Result:
    rng = np.random.default_rng(size)
    dim = args.dim
    centres = rng.normal(size=(max(16, size // 500), dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors = clustered_vectors(rng, size, dim, centres)
    queries = clustered_vectors(rng, args.queries, dim, centres)
    text = "lorem ipsum dolor sit amet " * 20
    algorithm = Algorithm(args.algorithm)
    with ExitStack() as stack:
        factory = setup(stack, algorithm)
        collection = f"bench_{size}"
        spec = CollectionSpec(collection, dim, "bench-model", Metric.COSINE, algorithm)
        store = factory(collection)
        store.drop()
        store.open(spec)
        started = time.perf_counter()
        for start in range(0, size, args.batch):
            batch = [
                Record(record_id(f"doc{i // 50}.md", i), f"doc{i // 50}.md", i, text, vectors[i])
                for i in range(start, min(size, start + args.batch))
            ]
            store.upsert(batch)
        insert_s = time.perf_counter() - started

        latencies, found = [], 0
        for query in queries:
            t0 = time.perf_counter()
            hits = store.search(query, args.k)
            latencies.append((time.perf_counter() - t0) * 1000)
            keys, _ = exact_scores(Metric.COSINE, vectors, query)
            kth = np.partition(keys, -args.k)[-args.k]
            found += sum(1 for hit in hits if keys[hit.record.chunk_index] >= kth - 1e-6)
        latencies.sort()
        p50 = statistics.median(latencies)
        p95 = latencies[int(0.95 * (len(latencies) - 1))]

        clients = [factory(collection) for _ in range(args.clients)]
        for client in clients:
            client.open(spec)
        per_client = max(1, args.concurrent_queries // args.clients)
        barrier = threading.Barrier(args.clients + 1)

        def worker(client: StoreBase, offset: int) -> None:
            barrier.wait()
            for i in range(per_client):
                client.search(queries[(offset + i) % len(queries)], args.k)

        threads = [threading.Thread(target=worker, args=(c, i * 7)) for i, c in enumerate(clients)]
        for thread in threads:
            thread.start()
        barrier.wait()
        t0 = time.perf_counter()
        for thread in threads:
            thread.join()
        qps = per_client * args.clients / (time.perf_counter() - t0)
        for client in clients:
            if client is not store:
                client.close()
        store.drop()
        store.close()
    return Result(name, algorithm.value, size, insert_s, p50, p95, qps, found / (args.k * len(queries)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="inmemory,redis", help=f"comma-separated: {', '.join(STORES)}")
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated record counts")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--algorithm", default="HNSW", choices=[a.value for a in Algorithm])
    parser.add_argument("--queries", type=int, default=200, help="sequential queries for latency and recall")
    parser.add_argument("--concurrent-queries", type=int, default=1600, help="queries shared by the clients")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients, each with its own connection")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1000, help="records per upsert call")
    args = parser.parse_args(argv)
    names = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = [n for n in names if n not in STORES]
    if unknown:
        parser.error(f"unknown store(s) {', '.join(unknown)}; known: {', '.join(STORES)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    blas = os.environ.get("OPENBLAS_NUM_THREADS")
    print(
        f"dim {args.dim}, k {args.k}, {args.queries} queries, {args.clients} clients, COSINE; "
        f"{os.cpu_count()} CPUs, load average {load:.1f}, OPENBLAS_NUM_THREADS={blas}",
        flush=True,
    )
    print(HEADER, flush=True)
    for size in sizes:
        for name in names:
            print(run(name, STORES[name], size, args).row(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
