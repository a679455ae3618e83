"""Benchmark the vector memory against the contract's performance table, at 1k and 10k decisions.

    uv run python benchmarks/memory_bench.py                 # git backend (fsync on), 1k and 10k
    uv run python benchmarks/memory_bench.py --no-fsync      # git backend without fsync
    uv run python benchmarks/memory_bench.py --backend memory --sizes 1000,10000
    uv run python benchmarks/memory_bench.py --semantic      # also time semantic search (MiniLM, 1k only)

Each size starts from an empty temporary git repository. Decisions are synthetic (20-60 words
from a 2,000-word vocabulary) spread over x 1-1000, y 1-5, z 1-4. Latencies are wall-clock
per call; the table shows p99 (or the single run for sync/load) against the contract's
target and the project's goal of ten times better.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from deckhand.memory import VectorCoordinate, VectorMemoryManager

# operation -> (contract target in seconds, what the target covers)
TARGETS: dict[str, tuple[float, str]] = {
    "store p99": (0.050, "per call"),
    "get p99": (0.050, "per call"),
    "exists p99": (0.010, "per call"),
    "exists max": (0.010, "per call"),
    "query_range p99": (0.100, "n < 100 results"),
    "query_partial_order p99": (0.100, "m = all coordinates"),
    "search_content p99": (0.200, "k = all decisions"),
    "search_content first after load": (0.200, "k = all decisions"),
    "sync 1,000 new": (5.0, "d = 1,000"),
    "load_from_git": (10.0, "d = all decisions"),
}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


class Samples:
    """Wall-clock and CPU time (this process plus waited-for children such as git) of each call."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __call__(self, call: Callable[[], Any]) -> Any:
        t, c = time.perf_counter(), cpu_now()
        result = call()
        self.cpu.append(cpu_now() - c)
        self.wall.append(time.perf_counter() - t)
        return result

    def record(self, results: dict[str, float | str], name: str, q: float | None = 0.99) -> None:
        pick = max if q is None else (lambda xs: percentile(xs, q))
        results[name] = pick(self.wall)
        results[f"{name} CPU"] = pick(self.cpu)


def cpu_now() -> float:
    """CPU seconds used so far by this process and its finished children (git)."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def make_repo(path: Path) -> Path:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["config", "user.name", "bench"], ["config", "user.email", "bench@example.invalid"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, env=env)
    return path


def coordinates(n: int, rng: random.Random) -> list[VectorCoordinate]:
    every = [VectorCoordinate(x, y, z) for x in range(1, 1001) for y in range(1, 6) for z in range(1, 5)]
    return sorted(rng.sample(every, n))


def vocabulary(rng: random.Random, size: int = 2000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 10))))
    return sorted(words)


def open_manager(repo: Path, backend: str, fsync: bool, agent: str = "bench") -> VectorMemoryManager:
    options = {"fsync": fsync} if backend == "git" else None
    return VectorMemoryManager(repo, agent, backend=backend, backend_options=options, embedding_cache=None)


def run_size(
    n: int, backend: str, fsync: bool, semantic: bool, seed: int = 1, tmpdir: str | None = None
) -> dict[str, float | str]:
    rng = random.Random(seed + n)
    words = vocabulary(rng)
    results: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory(prefix="memory-bench-", dir=tmpdir) as tmp:
        repo = make_repo(Path(tmp))
        manager = open_manager(repo, backend, fsync)
        coords = coordinates(n, rng)
        texts = [" ".join(rng.choices(words, k=rng.randint(20, 60))) for _ in coords]
        store = Samples()
        for c, text in zip(coords, texts, strict=True):
            store(partial(manager.store, c, text))
        results["store p50"] = percentile(store.wall, 0.50)
        store.record(results, "store p99")

        probes = [rng.choice(coords) for _ in range(5000)] + [VectorCoordinate(1000, 5, 4)] * 10
        get, exists = Samples(), Samples()
        for c in probes:
            get(partial(manager.get, c))
            exists(partial(manager.exists, c))
        get.record(results, "get p99")
        exists.record(results, "exists p99")
        exists.record(results, "exists max", None)

        qr = Samples()
        sizes: list[int] = []
        for _ in range(300):
            x0 = rng.randint(1, 991)
            found = qr(partial(manager.query_range, x_range=(x0, x0 + 9)))
            sizes.append(len(found))
        qr.record(results, "query_range p99")
        results["query_range results"] = f"mean {sum(sizes) / len(sizes):.0f}"

        po = Samples()
        po_sizes: list[int] = []
        for _ in range(300):
            xt, yt = rng.randint(1, 1001), rng.randint(1, 6)
            zf = rng.choice([None, 1, 2, 3, 4])
            po_sizes.append(len(po(partial(manager.query_partial_order, xt, yt, zf))))
        po.record(results, "query_partial_order p99")
        results["query_partial_order results"] = f"mean {sum(po_sizes) / len(po_sizes):.0f}"

        sc = Samples()
        hits: list[int] = []
        for i in range(300):
            terms = rng.sample(words, rng.randint(1, 3))
            if i % 3 == 0:
                terms = [t[1:4] for t in terms]  # substring terms hit many vocabulary words
            hits.append(len(sc(partial(manager.search_content, terms, match_all=i % 2 == 0))))
        sc.record(results, "search_content p99")
        results["search_content results"] = f"mean {sum(hits) / len(hits):.0f}"

        # sync: the first commit of everything, then 1,000 new decisions on top of it
        everything = Samples()
        first = everything(partial(manager.sync, "benchmark: everything"))
        everything.record(results, f"sync all {n:,}", None)
        assert backend != "git" or first.commit, "sync made no commit"
        taken = {c.to_tuple() for c in coords}
        fresh = [
            c
            for c in (VectorCoordinate(x, y, z) for x in range(1, 1001) for y in range(1, 6) for z in range(2, 5))
            if c.to_tuple() not in taken
        ][:1000]
        for c in fresh:
            manager.store(c, "a later decision " + " ".join(rng.choices(words, k=20)))
        later = Samples()
        result = later(manager.sync)
        later.record(results, "sync 1,000 new", None)
        assert result.count == len(fresh)
        total = n + len(fresh)

        if backend == "git":
            t = time.perf_counter()
            reopened = open_manager(repo, backend, fsync, "reloaded")
            results["open (loads)"] = time.perf_counter() - t
            load = Samples()
            loaded = load(reopened.load_from_git)
            load.record(results, "load_from_git", None)
            first = Samples()  # a search right after a load: the indexes must be ready
            first(partial(reopened.search_content, rng.sample(words, 2)))
            first.record(results, "search_content first after load", None)
            assert loaded == total, (loaded, total)
            results["loaded"] = f"{loaded:,} decisions"

        if semantic:
            t = time.perf_counter()
            manager.search_semantic("a later decision about the schema", k=5)
            results["semantic first (embeds all)"] = time.perf_counter() - t
            sem = Samples()
            for _ in range(50):
                q = " ".join(rng.choices(words, k=5))
                sem(partial(manager.search_semantic, q, k=5))
            sem.record(results, "semantic p99 (warm)")
        manager.close()
    return results


def fmt(value: float | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.2f} ms"
    return f"{value:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated decision counts")
    parser.add_argument("--backend", default="git", help="memory backend name (git, memory, ...)")
    parser.add_argument("--no-fsync", action="store_true", help="git backend: do not fsync writes")
    parser.add_argument("--semantic", action="store_true", help="also time semantic search (sizes <= 1000)")
    parser.add_argument("--tmpdir", help="where the temporary repositories go (e.g. /dev/shm to leave the disk out)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    fsync = not args.no_fsync
    print(f"vector memory benchmark: backend={args.backend}{'' if args.backend != 'git' else f' fsync={fsync}'}")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
        f" {platform.system()} {platform.release()}"
    )
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"load average before: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(f"repositories in: {args.tmpdir or tempfile.gettempdir()}")
    runs = {n: run_size(n, args.backend, fsync, args.semantic and n <= 1000, tmpdir=args.tmpdir) for n in sizes}
    print(f"load average after: {' '.join(f'{v:.1f}' for v in os.getloadavg())}\n")
    keys: list[str] = []
    for r in runs.values():
        keys += [k for k in r if k not in keys]
    header = f"| {'operation':<28} | {'target':>8} | {'goal':>9} | " + " | ".join(f"{n:>10,}" for n in sizes) + " |"
    print(header)
    print("|" + "|".join("-" * (len(part)) for part in header.split("|")[1:-1]) + "|")
    for key in keys:
        target = TARGETS.get(key.removesuffix(" CPU"))
        cells = []
        for n in sizes:
            value = runs[n].get(key)
            mark = ""
            if target and isinstance(value, float):
                mark = " ✓" if value <= target[0] / 10 else (" ~" if value <= target[0] else " ✗")
            cells.append(f"{fmt(value) + mark:>10}")
        t = fmt(target[0]) if target else ""
        g = fmt(target[0] / 10) if target else ""
        print(f"| {key:<28} | {t:>8} | {g:>9} | " + " | ".join(cells) + " |")
    print("\n✓ meets the goal (10x better than the contract), ~ meets the contract only, ✗ misses it;")
    print("CPU rows: CPU time of this process and of the git commands it waited for (wall rows include waiting)")


if __name__ == "__main__":
    main()
