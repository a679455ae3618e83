"""Where a first build of the hierarchical tool's side indexes spends its time, on the sqlite store (issue 30).

    uv run python benchmarks/side_feed_bench.py --chunks 200000 [--workdir DIR] [--phases] [--keeper]
        [--lookups 300]

Writes ``--chunks`` records (``hybrid_latency.py``'s Zipfian text, heading chain, section id and reference
per chunk, 50 chunks per file, and one defined term in every tenth chunk; 8-dimensional random vectors: the
vectors play no part here) into a sqlite store in ``--workdir`` (kept and reused), then:

``--phases``  the steps of a first build, each timed alone (wall and this process's CPU, all threads):
              reading the records, the tantivy fields of each, the ``tantivy.Document`` objects, adding
              them to a writer, its commit, the look-ups derived in memory and the side index file written;
``--keeper``  the whole first build as a fresh ingest does it (the tool's keeper: tantivy and the side
              index file, both removed first), and a new process's open of what it kept;
``--lookups`` definitions and section look-ups (``N`` each, p50 / p95 wall) through the tool's side
              indexes as they are opened in a new process;
``--in-tantivy`` the same look-ups answered by tantivy instead (issue 30: "definitions and section look-ups in
              tantivy or where they are now, whichever measures better"): the chunk index built again with
              extra fields (defined terms, section ids and source untokenised; definitions, location and
              source stored; the document order a fast field), its extra build time and disk against the
              side index file's, and the look-ups as the side index file's adapters would make them.
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
from deckhand.tools.hierarchical import HierarchicalDocumentTool
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
    tool.provider = "sqlite"
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
    """Each step of a first build alone (the writer's settings as the tantivy strategy has them)."""
    import tantivy
    from deckhand.retrieval import side_index_file, side_indexes, tantivy_keyword

    print("phases of a first build:", flush=True)
    pairs = timed("records read (iter_rows)", lambda: list(store.iter_rows()))
    assert isinstance(pairs, list)
    fields = timed("tantivy fields per record (_fields)", lambda: [tantivy_keyword._fields(r, row) for row, r in pairs])
    assert isinstance(fields, list)

    def documents() -> list[tantivy.Document]:
        out = []
        for record_id, body, heading, path, file_type, content, row in fields:
            doc = tantivy.Document(id=record_id, body=body)
            for name, value in (("heading", heading), ("path", path), ("file_type", file_type)):
                if value:
                    doc.add_text(name, value)
            doc.add_text("content", content)
            doc.add_integer("row", row)
            out.append(doc)
        return out

    docs = timed("tantivy.Document objects", documents)
    assert isinstance(docs, list)
    scratch = where / "phase-tantivy"
    shutil.rmtree(scratch, ignore_errors=True)
    keyword = tantivy_keyword.TantivyIndex(location=lambda: scratch)
    index = keyword._open()
    if hasattr(tantivy_keyword, "_writer"):  # this branch: a thread per core for a rebuild
        writer = tantivy_keyword._writer(index, full=True)
    else:  # main before issue 30's feed: one thread, 64 MB
        writer = index.writer(tantivy_keyword._WRITER_HEAP, tantivy_keyword._WRITER_THREADS)
    timed("writer.add_document (each)", lambda: [writer.add_document(d) for d in docs])
    timed("commit and merges", lambda: (writer.commit(), writer.wait_merging_threads()))
    shutil.rmtree(scratch, ignore_errors=True)
    records = [r for _, r in pairs]
    records.sort(key=lambda r: (r.source, r.chunk_index))
    derived = timed("look-ups derived in memory (_derived)", lambda: side_indexes._derived(records))
    assert isinstance(derived, tuple)
    definitions, resolver, _, locations = derived
    rows = {r.id: row for row, r in pairs}
    target = where / "phase-side.sqlite"
    timed(
        "side index file written",
        lambda: side_index_file.write(target, 1, "tantivy", definitions, resolver, locations, rows, len(rows)),
    )
    target.unlink()


def keeper(where: Path, store: SQLiteStore) -> None:
    """The first build as an ingest does it, then a new process's open."""
    remove_side(where)
    tool = tool_over(where)
    timed("first build (keeper: tantivy and side index file)", lambda: tool.refresh_indexes(store))
    for path in side_files(where):
        print(f"  on disk: {path.name} {disk(path) / 1e6:.1f} MB")
    again = open_store(where)
    fresh = tool_over(where)
    timed("a new process opens them", lambda: fresh.refresh_indexes(again))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def lookups(where: Path, store: SQLiteStore, n: int) -> None:
    """Definitions and section look-ups through the side indexes a new process opens."""
    tool = tool_over(where)
    tool.refresh_indexes(store)
    indexes = tool.keeper.indexes
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
                if cold and indexes.file is not None:  # nothing read before: a new process's first look-up
                    for table in indexes.file.tables:
                        table.forget()
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


def lookup_schema(with_lookups: bool) -> object:
    """The tantivy strategy's schema, with (or without) the fields the look-ups would need."""
    import tantivy
    from deckhand.retrieval import tantivy_keyword

    builder = tantivy.SchemaBuilder()
    for name in ("body", "heading"):
        builder.add_text_field(name, tokenizer_name=tantivy_keyword._TOKENIZER, index_option="position")
    builder.add_text_field("path", tokenizer_name=tantivy_keyword._PATH_TOKENIZER, index_option="freq")
    builder.add_text_field("content", tokenizer_name=tantivy_keyword._EXACT_TOKENIZER, index_option="position")
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("file_type", tokenizer_name="raw")
    builder.add_integer_field("row", indexed=True, fast=True)
    if with_lookups:
        for name in ("def_key", "section"):
            builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("source", stored=True, tokenizer_name="raw", index_option="basic")
        builder.add_bytes_field("place", stored=True)  # JSON: location, definitions
        builder.add_integer_field("order", fast=True)
        # "source \x1f chunk index \x1f record id", a fast field: a section's chunks read without their documents
        builder.add_text_field("entry", fast=True, tokenizer_name="raw", index_option="basic")
    return builder.build()


def in_tantivy(where: Path, store: SQLiteStore, n: int) -> None:
    """Definitions, sections and locations answered by tantivy: build cost, disk and look-up latency."""
    import json

    import tantivy
    from deckhand.chunking.definitions import Definition
    from deckhand.retrieval import side_index_file, side_indexes, tantivy_keyword

    pairs = list(store.iter_rows())
    records = sorted((r for _, r in pairs), key=lambda r: (r.source, r.chunk_index))
    rows = {r.id: row for row, r in pairs}
    order = {r.id: i for i, r in enumerate(records)}

    def open_index(path: Path, with_lookups: bool) -> tantivy.Index:
        index = tantivy.Index(lookup_schema(with_lookups), path=str(path))
        index.register_tokenizer(tantivy_keyword._TOKENIZER, tantivy_keyword._analyzer())
        index.register_tokenizer(tantivy_keyword._PATH_TOKENIZER, tantivy_keyword._analyzer(tantivy_keyword._PATH_WORD))
        index.register_tokenizer(tantivy_keyword._EXACT_TOKENIZER, tantivy_keyword._analyzer(exact=True))
        return index

    def document(record: Record, with_lookups: bool) -> tantivy.Document:
        record_id, body, heading, path, file_type, content, row = tantivy_keyword._fields(record, rows[record.id])
        fields: dict[str, object] = dict(
            id=record_id, body=body, heading=heading, path=path, file_type=file_type or [], content=content, row=row
        )
        if with_lookups:
            meta = record.metadata
            found = [
                [" ".join(str(d["term"]).split()).lower(), str(d["term"]).strip(), str(d["definition"]).strip()]
                for d in meta.get("definitions") or []
                if str(d.get("term", "")).strip() and str(d.get("definition", "")).strip()
            ]
            ids = meta.get("section_ids") or ([meta["section_id"]] if meta.get("section_id") else [])
            place = [side_indexes.location_of(meta), meta.get("section_id"), found]
            fields.update(
                def_key=[key for key, _, _ in found],
                section=list(dict.fromkeys(str(i) for i in ids)),
                source=record.source,
                place=json.dumps(place).encode(),
                order=order[record.id],
                entry=f"{record.source}\x1f{record.chunk_index:09d}\x1f{record.id}",
            )
        return tantivy.Document(**fields)

    built: dict[bool, tantivy.Index] = {}
    for with_lookups in (False, True):
        path = where / f"lookups-{int(with_lookups)}"
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()
        index = open_index(path, with_lookups)

        def build(index: tantivy.Index = index, with_lookups: bool = with_lookups) -> None:
            writer = index.writer(tantivy_keyword._WRITER_HEAP * 2, 2)
            for record in records:
                writer.add_document(document(record, with_lookups))
            writer.commit()
            writer.wait_merging_threads()

        timed(f"tantivy, {'with' if with_lookups else 'without'} the look-up fields", build)
        index.reload()
        built[with_lookups] = index
        print(f"    {disk(path) / 1e6:.1f} MB on disk", flush=True)
    target = where / "lookups-side.sqlite"

    def side_file() -> None:
        definitions, resolver, _, locations = side_indexes._derived(records)
        side_index_file.write(target, 1, "tantivy", definitions, resolver, locations, rows, len(rows))

    timed("the side index file (derived and written)", side_file)
    print(f"    {disk(target) / 1e6:.1f} MB on disk", flush=True)
    target.unlink()

    index = built[True]
    schema = index.schema
    searcher = index.searcher()
    everything = max(searcher.num_docs, 1)

    def ordered(query: tantivy.Query, limit: int) -> list[tantivy.Document]:
        hits = searcher.search(query, limit, count=False, order_by_field="order", order=tantivy.Order.Asc).hits
        return [searcher.doc(address) for _, address in hits]

    def term(field: str, value: str) -> tantivy.Query:
        return tantivy.Query.term_query(schema, field, value)

    def every(key: str, limit: int) -> list[Definition]:
        out = []
        for doc in ordered(term("def_key", key), limit):
            _, section_id, found = json.loads(doc.get_first("place"))
            source, record_id = str(doc.get_first("source")), str(doc.get_first("id"))
            out += [Definition(t, d, source, section_id, record_id) for k, t, d in found if k == key]
        return out[:limit]

    def first(ident: str, source: str) -> str | None:
        both = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, term("section", ident)), (tantivy.Occur.Must, term("source", source))]
        )
        found = ordered(both, 1)
        return str(found[0].get_first("id")) if found else None

    def resolve(ident: str) -> list[str]:
        return [str(doc.get_first("id")) for doc in ordered(term("section", ident), everything)]

    def resolve_fast(ident: str) -> list[str]:
        query = term("section", ident)
        limit = max(searcher.doc_freq("section", ident), 1)
        hits = searcher.search(query, limit, count=False, order_by_field="entry", order=tantivy.Order.Asc).hits
        return [str(key).rsplit("\x1f", 1)[1] for key, _ in hits]

    def location(record_id: str) -> tuple[str, str] | None:
        found = ordered(term("id", record_id), 1)
        if not found:
            return None
        return str(found[0].get_first("source")), str(json.loads(found[0].get_first("place"))[0])

    def keys() -> list[str]:
        return [str(t) for t, _ in searcher.terms_with_prefix("def_key", "")]

    size = len(records)
    rng = np.random.default_rng(7)
    terms = [f"term {int(t) * 10}" for t in rng.integers(0, size // 10, n)]
    sources = [source_of(int(d)) for d in rng.integers(0, size // PER_FILE, n)]
    parts, subs = rng.integers(1, 11, n), rng.integers(1, 6, n)
    sections = [(f"{a}.{b}", source) for a, b, source in zip(parts, subs, sources, strict=True)]

    def run(label: str, call: Callable[[int], object], check: Callable[[object], bool], count: int = n) -> None:
        times = []
        for i in range(count):
            clock = time.perf_counter()
            out = call(i)
            times.append((time.perf_counter() - clock) * 1000)
            assert check(out), (label, i, out)
        print(f"  {label:<58} p50 {statistics.median(times):7.3f} ms  p95 {pct(times, 0.95):7.3f} ms", flush=True)

    print(f"look-ups in tantivy ({n} each):", flush=True)
    run("definition of a term (every)", lambda i: every(terms[i], 5), bool)
    run("section's first chunk in a source (first)", lambda i: first(*sections[i]), lambda out: out is not None)
    run("section's chunks (resolve)", lambda i: resolve(sections[i][0]), bool, min(n, 20))
    run("section's chunks (resolve, the entry fast field)", lambda i: resolve_fast(sections[i][0]), bool)
    run("location of a record", lambda i: location(f"{sources[i]}_chunk_{i % PER_FILE}"), lambda out: out is not None)
    run("every defined term (the relevant() start)", lambda i: keys(), bool, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=200_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/side-feed-bench"))
    parser.add_argument("--phases", action="store_true")
    parser.add_argument("--keeper", action="store_true")
    parser.add_argument("--lookups", type=int, default=0)
    parser.add_argument("--in-tantivy", type=int, default=0, metavar="N")
    args = parser.parse_args()
    store = fill(args.workdir, args.chunks)
    if args.phases:
        phases(args.workdir, store)
    if args.keeper:
        keeper(args.workdir, store)
    if args.lookups:
        lookups(args.workdir, store, args.lookups)
    if args.in_tantivy:
        in_tantivy(args.workdir, store, args.in_tantivy)


if __name__ == "__main__":
    main()
