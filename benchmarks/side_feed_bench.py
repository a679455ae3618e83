"""Where a first build of the hierarchical tool's side indexes spends its time, on the sqlite store (issue 30).

    uv run python benchmarks/side_feed_bench.py --chunks 200000 [--workdir DIR] [--phases] [--keeper]
        [--lookups 300]

Writes ``--chunks`` records (``hybrid_latency.py``'s Zipfian text, heading chain, section id and reference
per chunk, 50 chunks per file, and one defined term in every tenth chunk; 8-dimensional random vectors: the
vectors play no part here) into a sqlite store in ``--workdir`` (kept and reused), then:

``--phases``  the steps of a first build, each timed alone (wall and this process's CPU, all threads), as
              the code run does them: reading the records, the tantivy documents, adding them to a writer,
              its commit; on main before issue 30 (run with ``PYTHONPATH`` at an export of it) also the
              look-ups derived in memory and the side index file written;
``--keeper``  the whole first build as a fresh ingest does it (the tool's keeper; what it keeps beside the
              store removed first), what it keeps on disk, and a new process's open of it;
``--lookups`` definitions and section look-ups (``N`` each, p50 / p95 wall) through the side indexes a new
              process opens: as a query meets them, and with nothing read before (each table's cache
              emptied before each look-up): tantivy's fields here, the side index file on main.

Run it on main and on this branch one after the other for the before and after (docs/benchmarks.md, "Feeding
the side indexes").
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from deckhand.config.hierarchical import HierarchicalDocumentToolConfig
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.sqlite.options import SQLiteOptions
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.types import CollectionSpec, Record

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_corpus import chunks

DIM = 8
PER_FILE = 50
SPEC = CollectionSpec("bench", DIM, "random")


def open_store(where: Path) -> SQLiteStore:
    store = SQLiteStore(where / "index.sqlite", "bench", SQLiteOptions(search="exact"))
    store.open(SPEC)
    return store


def metadata(doc: int, i: int, n: int) -> dict[str, object]:
    section = f"{i // 5 + 1}.{i % 5 + 1}"
    defined = n % 10 == 0
    return {
        "title": f"Document {doc}",
        "parent_chain": [f"Document {doc}", f"Part {i // 5 + 1}", section],
        "section_id": section,
        "section_ids": [f"{i // 5 + 1}", section],
        "section_label": f"Section {section}",
        "chunk_type": "content",
        "defined_terms": [f"term {n}"] if defined else [],
        "definitions": [{"term": f"term {n}", "definition": f"the {n}th thing defined"}] if defined else [],
        "references": [f"{i // 5 + 2}.1"],
        "context": f"Document {doc} > Part {i // 5 + 1}",
    }


def source_of(doc: int) -> str:
    return f"docs/d{doc // 1000:04d}/doc{doc}.md"


def fill(where: Path, size: int) -> SQLiteStore:
    """The store in ``where`` holding ``size`` chunks (written once, then reused)."""
    where.mkdir(parents=True, exist_ok=True)
    store = open_store(where)
    if store.count() == size:
        return store
    texts = chunks(size, words_per_chunk=60)
    rng = np.random.default_rng(4)
    clock = time.perf_counter()
    for start in range(0, size, PER_FILE):
        doc = start // PER_FILE
        source = source_of(doc)
        vectors = rng.standard_normal((min(PER_FILE, size - start), DIM)).astype(np.float32)
        store.upsert(
            [
                Record(
                    f"{source}_chunk_{i - start}",
                    source,
                    i - start,
                    texts[i],
                    vectors[i - start],
                    metadata(doc, i - start, i),
                )
                for i in range(start, min(start + PER_FILE, size))
            ]
        )
    print(f"store written: {size:,} chunks in {time.perf_counter() - clock:.0f} s", flush=True)
    return store


def tool_over(where: Path) -> HierarchicalDocumentTool:
    config = HierarchicalDocumentToolConfig(type="hierarchical_document", name="bench", source=".")
    tool = HierarchicalDocumentTool(config, base_dir=where)
    tool.index.provider = "sqlite"
    return tool


def timed(label: str, work: Callable[[], object]) -> object:
    cpu, wall = time.process_time(), time.perf_counter()
    out = work()
    print(f"  {label:<44} {time.perf_counter() - wall:7.2f} s wall {time.process_time() - cpu:7.2f} s CPU", flush=True)
    return out


def side_files(where: Path) -> list[Path]:
    return sorted(where.glob("*side-*"))


def remove_side(where: Path) -> None:
    for path in side_files(where):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def phases(where: Path, store: SQLiteStore) -> None:
    """Each step of a first build alone, as the code run builds it: this branch (one tantivy document per record,
    look-ups in its fields, a writer thread per core), or main before issue 30's feed (``PYTHONPATH`` at an
    export of it: fields then a document, one writer thread, and the look-ups derived in memory and written to
    the side index file)."""
    import importlib.util

    from deckhand.retrieval import side_indexes, tantivy_keyword

    before = importlib.util.find_spec("deckhand.retrieval.side_index_file") is not None
    print(f"phases of a first build ({'main: tantivy and the side index file' if before else 'tantivy alone'}):")
    pairs = timed("records read (iter_rows)", lambda: list(store.iter_rows()))
    assert isinstance(pairs, list)
    docs = timed("tantivy documents built", lambda: (_documents_before if before else _documents)(pairs))
    assert isinstance(docs, list)
    scratch = where / "phase-tantivy"
    shutil.rmtree(scratch, ignore_errors=True)
    index = tantivy_keyword.TantivyIndex(location=lambda: scratch)._open()
    if before:
        writer = index.writer(tantivy_keyword._WRITER_HEAP, tantivy_keyword._WRITER_THREADS)
    else:
        writer = tantivy_keyword._writer(index, full=True)
    timed("writer.add_document (each)", lambda: [writer.add_document(d) for d in docs])
    timed("commit and merges", lambda: (writer.commit(), writer.wait_merging_threads()))
    print(f"  tantivy on disk: {disk(scratch) / 1e6:.1f} MB", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    if not before:
        return
    from deckhand.retrieval import side_index_file  # type: ignore[attr-defined]

    records = sorted((r for _, r in pairs), key=lambda r: (r.source, r.chunk_index))
    derived = timed("look-ups derived in memory (_derived)", lambda: side_indexes._derived(records))
    assert isinstance(derived, tuple)
    definitions, resolver, _, locations = derived
    rows = {r.id: row for row, r in pairs}
    target = where / "phase-side.sqlite"
    timed(
        "side index file written",
        lambda: side_index_file.write(target, 1, "tantivy", definitions, resolver, locations, rows, len(rows)),
    )
    print(f"  side index file on disk: {disk(target) / 1e6:.1f} MB", flush=True)
    target.unlink()


def _documents(pairs: list[tuple[int, Record]]) -> list[object]:
    from deckhand.retrieval import tantivy_keyword

    return [tantivy_keyword._document(record, row) for row, record in pairs]


def _documents_before(pairs: list[tuple[int, Record]]) -> list[object]:
    import tantivy
    from deckhand.retrieval import tantivy_keyword

    out = []
    for row, record in pairs:
        record_id, body, heading, path, file_type, content, _ = tantivy_keyword._fields(record, row)  # type: ignore[attr-defined]
        doc = tantivy.Document(id=record_id, body=body)
        for name, value in (("heading", heading), ("path", path), ("file_type", file_type)):
            if value:
                doc.add_text(name, value)
        doc.add_text("content", content)
        doc.add_integer("row", row)
        out.append(doc)
    return out


def keeper(where: Path, store: SQLiteStore) -> None:
    """The first build as an ingest does it, then a new process's open."""
    remove_side(where)
    tool = tool_over(where)
    timed("first build (the tool's keeper)", lambda: tool.refresh_indexes(store))
    for path in side_files(where):
        print(f"  on disk: {path.name} {disk(path) / 1e6:.1f} MB")
    again = open_store(where)
    fresh = tool_over(where)
    timed("a new process opens them", lambda: fresh.refresh_indexes(again))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def forget(indexes: object) -> None:
    """Empty what the side indexes kept of what they read (the side index file's tables on main, the tantivy
    look-ups' here)."""
    file = getattr(indexes, "file", None)
    for table in file.tables if file is not None else ():
        table.forget()
    for table in (indexes.definitions._by_term, indexes.resolver._by_id, indexes.locations):  # type: ignore[attr-defined]
        for name in ("_cache", "_firsts"):
            cache = getattr(table, name, None)
            if isinstance(cache, dict):
                cache.clear()
        if hasattr(table, "_keys"):
            table._keys = None  # type: ignore[union-attr]


def lookups(where: Path, store: SQLiteStore, n: int) -> None:
    """Definitions and section look-ups through the side indexes a new process opens."""
    tool = tool_over(where)
    tool.refresh_indexes(store)
    indexes = tool.index.keeper.indexes
    assert indexes is not None
    size = store.count()
    rng = np.random.default_rng(7)
    terms = [f"term {int(t) * 10}" for t in rng.integers(0, size // 10, n)]
    sources = [source_of(int(d)) for d in rng.integers(0, size // PER_FILE, n)]
    parts, subs = rng.integers(1, 11, n), rng.integers(1, 6, n)
    sections = [(f"{a}.{b}", source) for a, b, source in zip(parts, subs, sources, strict=True)]
    texts = [f"as {t} says, and {terms[(i + 1) % n]} too" for i, t in enumerate(terms)]

    def run(label: str, call: Callable[[int], object], check: Callable[[object], bool]) -> None:
        for cold in (False, True):
            times = []
            for i in range(n):
                if cold:  # nothing read before: a new process's first look-up
                    forget(indexes)
                clock = time.perf_counter()
                out = call(i)
                times.append((time.perf_counter() - clock) * 1000)
                assert check(out), (label, i, out)
            label_ = f"{label}{', nothing cached' if cold else ''}"
            print(f"  {label_:<58} p50 {statistics.median(times):7.3f} ms  p95 {pct(times, 0.95):7.3f} ms", flush=True)

    print(f"look-ups ({n} each, {tool.index_origin}):", flush=True)
    run("definition of a term (every)", lambda i: indexes.definitions.every(terms[i], 5), lambda out: bool(out))
    run(
        "section's first chunk in a source (first)",
        lambda i: indexes.resolver.first(sections[i][0], source=sections[i][1]),
        lambda out: out is not None,
    )
    run("section's chunks (resolve)", lambda i: indexes.resolver.resolve(sections[i][0]), lambda out: bool(out))
    run(
        "location of a record",
        lambda i: indexes.locations.get(f"{sections[i][1]}_chunk_{i % PER_FILE}"),
        lambda out: out is not None,
    )
    run("definitions a text uses (relevant)", lambda i: indexes.definitions.relevant(texts[i], 5), bool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/side-feed-bench"))
    parser.add_argument("--phases", action="store_true")
    parser.add_argument("--keeper", action="store_true")
    parser.add_argument("--lookups", type=int, default=0)
    args = parser.parse_args()
    store = fill(args.workdir, args.chunks)
    if args.phases:
        phases(args.workdir, store)
    if args.keeper:
        keeper(args.workdir, store)
    if args.lookups:
        lookups(args.workdir, store, args.lookups)


if __name__ == "__main__":
    main()
