"""How long a new process takes to open the hierarchical tool's side indexes on the sqlite store.

    uv run python benchmarks/side_index_bench.py [--sizes 10000,100000] [--dir /tmp/side-bench]

For each size: synthetic chunks (``synthetic_corpus``: Zipfian text, a heading chain, a section
id, a reference and every tenth chunk defining a term; random 8-dim vectors, no embedding model)
are written to a sqlite store and the side indexes (the tantivy keyword index, whose chunk documents
also carry the definitions, sections and locations) are built and saved. Then a *new process* opens the
store, brings the side indexes up to date (``IndexKeeper.refresh``: what ``deckhand search`` does at
start-up) and
answers one keyword, one exact-phrase and one definition query; it reports the wall time of each
step, its peak RSS, and the keyword query latency (p50/p95 over 50 queries) afterwards.
Sizes: the keyword index's directory beside the store.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

DIM = 8


def _records(size: int) -> list:
    import numpy as np
    from deckhand.types import Record
    from synthetic_corpus import chunks

    texts = chunks(size)
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((size, DIM)).astype(np.float32)
    per_doc = 50
    out = []
    for i in range(size):
        doc, pos = divmod(i, per_doc)
        source = f"docs/doc{doc}.md"
        section = f"{pos // 5 + 1}.{pos % 5 + 1}"
        term = f"Term{i}"
        defining = i % 10 == 0
        meta = {
            "title": f"Document {doc}",
            "parent_chain": [f"Document {doc}", f"Part {pos // 5 + 1}", section],
            "section_id": section,
            "section_ids": [str(pos // 5 + 1), section],
            "section_label": f"Section {section}",
            "chunk_type": "content",
            "defined_terms": [term] if defining else [],
            "definitions": [{"term": term, "definition": f"{term} means {texts[i][:40]}"}] if defining else [],
            "references": [f"{pos // 5 + 2}.1"],
            "context": f"Document {doc} > Part {pos // 5 + 1}",
        }
        text = texts[i] + (f" {term} means something." if defining else f" See Term{i - i % 10}.")
        out.append(Record(f"{source}_chunk_{pos}", source, pos, text, vectors[i], meta))
    return out


def _keeper():
    from deckhand.retrieval.keeper import IndexKeeper
    from deckhand.retrieval.tantivy_keyword import TantivyIndex, TantivyOptions

    def tantivy(store):  # type: ignore[no-untyped-def]
        return TantivyIndex.from_options(store, None, TantivyOptions()), "tantivy"

    return IndexKeeper(tantivy, name="bench")


def _engine(indexes):
    from deckhand.retrieval.engine import QueryEngine

    return QueryEngine(lambda q: None, name="bench", indexes=indexes)  # type: ignore[arg-type,return-value]


def _peak_mb() -> float:
    """Peak RSS of this process (VmHWM: unlike ru_maxrss, not inherited from the parent across fork/exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(path: Path, size: int) -> None:
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.types import CollectionSpec

    if path.parent.exists():
        shutil.rmtree(path.parent)
    path.parent.mkdir(parents=True)
    store = SQLiteStore(path, "bench")
    store.open(CollectionSpec("bench", DIM, "random"))
    records = _records(size)
    for start in range(0, size, 5000):
        store.upsert(records[start : start + 5000])
    del records
    clock = time.perf_counter()
    _keeper().refresh(store)
    built = time.perf_counter() - clock
    found = store.load_side_index("hierarchical/indexes")
    blob = len(found[1]) if found else 0
    side = [p for p in path.parent.iterdir() if p.name != path.name and not p.name.endswith(("-wal", "-shm"))]
    files = sum(f.stat().st_size for p in side for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
    store.close()
    print(
        json.dumps(
            {
                "size": size,
                "build_s": round(built, 2),
                "blob_mb": round(blob / 2**20, 1),
                "side_files_mb": round(files / 2**20, 1),
                "db_mb": round(path.stat().st_size / 2**20, 1),
            }
        )
    )


def open_and_query(path: Path) -> None:
    from synthetic_corpus import queries

    qs = queries(51)  # before the clock: generating the vocabulary takes seconds
    clock = time.perf_counter()
    from deckhand.stores.sqlite import SQLiteStore

    imported = time.perf_counter()
    store = SQLiteStore(path, "bench")
    keeper = _keeper()
    engine = _engine(keeper.refresh(store))
    opened = time.perf_counter()
    rss_open = _peak_mb()
    assert keeper.origin == "loaded", keeper.origin
    assert engine.keyword is not None and engine.exact is not None and engine.definitions is not None
    first = engine.keyword.search(qs[0], 100)
    keyword = time.perf_counter()
    exact = engine.exact.search('"Term20 means"', 100)
    phrase = time.perf_counter()
    definition = engine.definitions.lookup("term30")
    relevant = engine.definitions.relevant("see Term40 and Term50", 5)
    resolved = engine.resolve_references(["2.1"])
    defined = time.perf_counter()
    lat, results = [], []
    for q in qs[1:]:
        t = time.perf_counter()
        results.append(engine.keyword.search(q, 100))
        lat.append(time.perf_counter() - t)
    lat.sort()
    phrases = ['"term20 means"', '"ba be"', '"means something" "see term"']
    plat = []
    for q in phrases:
        t = time.perf_counter()
        results.append(engine.exact.search(q, 100))
        plat.append(round((time.perf_counter() - t) * 1000, 1))
    results.append([engine.definitions.relevant(f"see Term{i}0 and Term{i + 1}0", 5) for i in range(20)])
    peak = _peak_mb()
    print(
        json.dumps(
            {
                "import_s": round(imported - clock, 3),
                "open_indexes_s": round(opened - imported, 3),
                "first_keyword_s": round(keyword - opened, 3),
                "exact_phrase_s": round(phrase - keyword, 3),
                "definition_and_refs_s": round(defined - phrase, 3),
                "total_s": round(defined - clock, 3),
                "rss_after_open_mb": round(rss_open),
                "peak_rss_mb": round(peak),
                "keyword_p50_ms": round(statistics.median(lat) * 1000, 2),
                "keyword_p95_ms": round(lat[int(len(lat) * 0.95)] * 1000, 2),
                "phrase_ms": plat,
                "results_digest": hashlib.sha256(repr(results).encode()).hexdigest()[:16],
                "hits": [len(first), len(exact), definition is not None, len(relevant), resolved[0].resolved],
                "top": first[:3],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dir", default="/tmp/side-bench")
    parser.add_argument("--open-only", action="store_true", help="reuse the stores built by an earlier run")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        open_and_query(Path(args.child))
        return
    print("load average:", os.getloadavg())
    for size in (int(s) for s in args.sizes.split(",")):
        path = Path(args.dir) / str(size) / "index.sqlite"
        if not args.open_only:
            build(path, size)
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])
        )
        for _ in range(2):
            subprocess.run([sys.executable, __file__, "--child", str(path)], check=True, env=env)


if __name__ == "__main__":
    main()
