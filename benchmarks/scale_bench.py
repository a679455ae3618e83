"""A tool over a million chunks, through the CLI a user runs (issue 22).

Builds, in a work folder, a source of ``--files`` markdown files and a ``--tool`` tool's
default sqlite index holding ``--per-file`` chunks of each (clustered random unit vectors
under the default model's id; ingesting a million chunks with the model would take about
three hours here, and the vectors' values do not change what is timed). The records and the
manifest are written through the tool's own store, exactly as an ingest leaves them (each
file's real size, mtime and hash), then the approximate index is built and the ingest marked
complete; for ``--tool hierarchical`` the chunks are Zipfian synthetic text with a heading
chain, section id and reference each (as ``hybrid_latency.py``'s), and the side indexes are
built and kept as a fresh ingest leaves them, through the tool's configured keyword strategy
(``auto``: tantivy on the sqlite store, whose documents also carry definitions, sections and locations).
``--ann-index ivf`` sets ``ann_index: ivf`` on the tool's sqlite store (k-means lists instead of
the default HNSW graph, built in minutes); ``--ann-precision b1`` sets the graph over sign bits.
Then, each in a new process:

1. ``deckhand --version`` and ``deckhand search`` (median of ``--repeats``): start-up is the
   difference; the search process's peak RSS (``VmHWM``);
2. (``--tool hierarchical``) semantic and hybrid p95 of 100 queries, in one process, the
   query vectors computed before timing (``startup_bench.py``'s protocol);
3. ``deckhand ingest`` with nothing changed (every file stat'ed, none read);
4. one file rewritten, ``deckhand ingest`` (it embeds that file with the real model), then
   ``deckhand search`` for a sentence of the new text: its chunk must come first. The model's
   own share (load and embed that file, in a fresh process) is timed apart.

    uv run python benchmarks/scale_bench.py --chunks 1000000 --per-file 10 [--tool hierarchical] [--ann-index ivf]
        [--ann-precision b1] [--workdir DIR] [--search-only] [--ann-mapped-mb N]

``--search-only`` measures steps 1 and 2 again on the index an earlier run left in ``--workdir``;
``--ann-mapped-mb`` sets that search-time option there first (0 removes it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup_bench import search_times
from synthetic_corpus import chunks, queries

AGENT = """name: scale
tools:
  - type: {kind}
    name: {name}
    source: docs/
"""
#: Appended to the tool's entry for ``--ann-index ivf`` or ``--ann-precision``: the store's options, one a line.
OPTIONS = """    database:
      provider: sqlite
      options:
"""
#: ``--tool`` → (tool type, tool name).
TOOLS = {"vectorstore": ("vectorstore", "flat"), "hierarchical": ("hierarchical_document", "acts")}
WORDS = ["harbour", "berth", "vessel", "cargo", "tide", "pilot", "anchor", "quay", "manifest", "crane", "ledger"]
#: Runs the CLI in this interpreter and prints the process's peak RSS to stderr at exit.
WRAPPER = (
    "import atexit, sys\n"
    "def hwm():\n"
    "    lines = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
    "    print('VmHWM_KB', lines[0].split()[1], file=sys.stderr)\n"
    "atexit.register(hwm)\n"
    "from deckhand.cli.main import main\n"
    "sys.argv = ['deckhand', *sys.argv[1:]]\n"
    "main()\n"
)


def text_of(i: int) -> str:
    rng = np.random.default_rng(i)
    return " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 40))


def texts_of(tool: str, files: int, per_file: int) -> list[list[str]]:
    """Each file's chunk texts: one sentence of harbour words (vectorstore), or ``per_file`` Zipfian chunks."""
    if tool == "vectorstore":
        return [[text_of(i)] * per_file for i in range(files)]
    flat = chunks(files * per_file, words_per_chunk=60)
    return [flat[i * per_file : (i + 1) * per_file] for i in range(files)]


def make_source(root: Path, tool: str, texts: list[list[str]], ann_index: str, ann_precision: str = "") -> None:
    docs = root / "docs"
    for i, parts in enumerate(texts):
        folder = docs / f"d{i // 1000:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        body = parts[0] if tool == "vectorstore" else "\n\n".join(parts)
        (folder / f"f{i:07d}.md").write_text(f"# File {i}\n\n{body}\n", encoding="utf-8")
    kind, name = TOOLS[tool]
    options = {"ann_index": ann_index if ann_index != "hnsw" else "", "ann_precision": ann_precision}
    lines = "".join(f"        {key}: {value}\n" for key, value in options.items() if value)
    agent = AGENT.format(kind=kind, name=name) + (OPTIONS + lines if lines else "")
    (root / "agent.yaml").write_text(agent, encoding="utf-8")


def set_mapped_mb(root: Path, mapped_mb: int) -> None:
    """Set (or, for 0, remove) ``ann_mapped_mb`` in the work folder's ``agent.yaml``: a search-time option, so it
    applies to an index already built (a line-level edit of the file :func:`make_source` wrote)."""
    path = root / "agent.yaml"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if "ann_mapped_mb:" not in line]
    if mapped_mb:
        if OPTIONS.splitlines()[-1] not in lines:
            lines += OPTIONS.splitlines()
        lines.append(f"        ann_mapped_mb: {mapped_mb}")
    elif lines[-1] == OPTIONS.splitlines()[-1]:
        lines = lines[: -len(OPTIONS.splitlines())]  # no option left: no options block
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def metadata(tool: str, n: int, i: int) -> dict[str, object]:
    """What the hierarchical chunker gives a chunk of file ``n`` (a heading chain, section id, reference)."""
    if tool == "vectorstore":
        return {}
    section = f"{i // 5 + 1}.{i % 5 + 1}"
    return {
        "title": f"File {n}",
        "parent_chain": [f"File {n}", f"Part {i // 5 + 1}", section],
        "section_id": section,
        "section_label": f"Section {section}",
        "chunk_type": "content",
        "defined_terms": [],
        "definitions": [],
        "references": [f"{i // 5 + 2}.1"],
        "context": f"File {n} > Part {i // 5 + 1}",
    }


def write_index(root: Path, tool_kind: str, texts: list[list[str]]) -> dict[str, float]:
    """Records and manifest as a complete ingest leaves them, through the tool's own store."""
    from deckhand.config.loading import load_agent_config
    from deckhand.ingest.discovery import discover
    from deckhand.stores.tool_store import mark_complete
    from deckhand.tools import build_tool
    from deckhand.types import FileState, Record

    per_file = len(texts[0])
    config = load_agent_config(root / "agent.yaml")
    tool = build_tool(config.tools[0], base_dir=root)
    store, embedder, _ = tool.index.open(False)
    model = embedder.model_id
    files = discover(root / "docs", {".md"}, base=root).files
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((max(8, len(files) * per_file // 100), 384)).astype(np.float32)
    clock = time.perf_counter()
    for file in files:
        raw = file.path.read_bytes()
        stat = file.path.stat()
        points = centres[rng.integers(0, len(centres), per_file)]
        points += 0.5 * rng.standard_normal(points.shape).astype(np.float32)
        points /= np.linalg.norm(points, axis=1, keepdims=True)
        number = int(file.path.stem[1:])
        records = [
            Record(
                f"{file.display}_chunk_{i}",
                file.display,
                i,
                texts[number][i],
                points[i],
                metadata(tool_kind, number, i),
            )
            for i in range(per_file)
        ]
        state = FileState(file.display, stat.st_mtime, stat.st_size, hashlib.sha256(raw).hexdigest(), model, per_file)
        store.replace_source(file.display, records, state)
    written = time.perf_counter() - clock
    clock = time.perf_counter()
    built = store.maintain()
    indexed = time.perf_counter() - clock
    mark_complete(store)
    print(
        f"index written: {len(files):,} files, {len(files) * per_file:,} chunks in {written:.0f} s; {built} in "
        f"{indexed:.1f} s; time to the first answer {written + indexed:.0f} s",
        flush=True,
    )
    if not store.wait_for_index(0):  # the graph builds in a thread: time searches meanwhile, then wait for it
        exact_while_building(root, store, centres, tool_kind)
        store.wait_for_index()
        graph = time.perf_counter() - clock
        print(
            f"graph built after the report in {graph:.0f} s: first ingest all in {written + graph:.0f} s "
            f"(records {written:.0f} s + flat snapshot and graph {graph:.0f} s)",
            flush=True,
        )
        indexed = graph
    side = 0.0
    if tool_kind == "hierarchical":
        clock = time.perf_counter()
        tool.refresh_indexes(store)  # type: ignore[attr-defined]
        side = time.perf_counter() - clock
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"side indexes built and kept in {side:.0f} s (peak RSS of this process {peak:.0f} MB)", flush=True)
    store.close()
    return {"write_s": written, "index_s": indexed, "side_s": side}


def exact_while_building(root: Path, store: object, centres: np.ndarray, tool_kind: str) -> None:
    """Top-10 latency (ms) of 20 store searches in this process while the graph builds beside them (exact, through
    the flat snapshot), and for ``vectorstore`` one ``deckhand search`` in a new process: wall time and peak RSS."""
    from deckhand.stores.sqlite import SQLiteStore

    own = typing.cast(SQLiteStore, store)
    reader = SQLiteStore(own.path, own.collection, own.options)
    reader.open(own.spec)
    rng = np.random.default_rng(1)
    queries = centres[rng.integers(0, len(centres), 20)] + 0.5 * rng.standard_normal((20, centres.shape[1]))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    times = []
    for query in queries:
        clock = time.perf_counter()
        reader.search(query, 10)
        times.append(1000 * (time.perf_counter() - clock))
    p50, p95 = np.percentile(times, [50, 95])
    print(
        f"while the graph builds ({reader.search_note()}): exact search, top 10, 20 queries in-process: "
        f"p50 {p50:.0f} ms, p95 {p95:.0f} ms",
        flush=True,
    )
    reader.close()
    if tool_kind == "vectorstore":
        took, _, peak = cli(root, "search", "--tool", TOOLS[tool_kind][1], "harbour pilot at the quay")
        print(
            f"while the graph builds: deckhand search in a new process {took:.2f} s, peak RSS {peak:.0f} MB", flush=True
        )


def latency(root: Path, name: str, n_queries: int, chunks: int) -> None:
    """Semantic and hybrid p50 / p95 (ms) of ``n_queries`` searches in a new process, query vectors computed first;
    two passes, the first warming the page cache (``startup_bench.search_times``); that process's peak RSS after
    them (a warm searcher's); then recall@10 of the store's search against exact search (:func:`recall`)."""
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); import scale_bench as s; "
    code += f"s.latency_here(s.Path({str(root)!r}), {name!r}, {n_queries}, {chunks})"
    done = subprocess.run([sys.executable, "-c", code], text=True)
    if done.returncode != 0:
        raise SystemExit("the in-process latency run failed (its error is above)")


def latency_here(root: Path, name: str, n_queries: int, chunks: int) -> None:
    """:func:`latency`'s work, in the process it runs in."""
    for mode, times in search_times(root, name, n_queries, passes=2):
        p50, p95 = np.percentile(times, [50, 95])
        print(f"{mode} search, top 10, {n_queries} queries: p50 {p50:.1f} ms, p95 {p95:.1f} ms", flush=True)
    status = memory_mb()
    print(
        f"peak RSS of that (warm) process after {4 * n_queries} searches: {status['VmHWM']:.0f} MB "
        f"(now RssAnon {status['RssAnon']:.0f} MB, RssFile {status['RssFile']:.0f} MB)",
        flush=True,
    )
    recall(root, name, n_queries, chunks)


def memory_mb() -> dict[str, float]:
    """This process's peak resident set (``VmHWM``) and its resident anonymous and file-backed memory, MB."""
    fields = {"VmHWM", "RssAnon", "RssFile"}
    pairs = (line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {key: int(value.split()[0]) / 1024 for key, value in pairs if key in fields}


def recall(root: Path, name: str, n_queries: int, chunks: int) -> None:
    """Recall@10 of the tool's store (graph and rescoring, as searches use it) against an exact scan of the same
    file (``search: exact``), for the timed queries' vectors and for ``n_queries`` vectors drawn as the stored ones
    are (a cluster centre plus noise: :func:`write_index`'s ``chunks // 100`` centres)."""
    from deckhand.config.loading import load_agent_config
    from deckhand.stores.sqlite import SQLiteStore
    from deckhand.tools import build_tool

    config = load_agent_config(root / "agent.yaml")
    tool: typing.Any = build_tool(next(t for t in config.tools if t.name == name), base_dir=root)
    tool.open_sync()
    own = typing.cast(SQLiteStore, tool.index.store)
    exact = SQLiteStore(own.path, own.collection, own.options.model_copy(update={"search": "exact"}))
    exact.open(own.spec)
    asked = np.asarray([tool.index.embed_query(q) for q in queries(n_queries)], dtype=np.float32)
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((max(8, chunks // 100), asked.shape[1])).astype(np.float32)
    drawn = centres[np.random.default_rng(2).integers(0, len(centres), n_queries)]
    drawn = drawn + 0.5 * np.random.default_rng(3).standard_normal(drawn.shape).astype(np.float32)
    drawn /= np.linalg.norm(drawn, axis=1, keepdims=True)
    for label, vectors in (("the timed queries' vectors", asked), ("vectors drawn as the stored ones", drawn)):
        found = 0
        for vector in vectors:
            want = {hit.record.id for hit in exact.search(vector, 10)}
            found += len(want & {hit.record.id for hit in own.search(vector, 10)})
        print(f"recall@10 against exact search, {len(vectors)} {label}: {found / (10 * len(vectors)):.3f}", flush=True)
    exact.close()
    tool.close()


def cli(root: Path, *args: str) -> tuple[float, str, float]:
    """Wall seconds, stdout and peak RSS (MB) of one ``deckhand`` command in a new process."""
    clock = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, "-c", str(root / "agent.yaml"), *args], capture_output=True, text=True
    )
    took = time.perf_counter() - clock
    if done.returncode != 0:
        raise SystemExit(f"deckhand {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    peak = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("VmHWM_KB")]
    return took, done.stdout, int(peak[-1]) / 1024 if peak else float("nan")


def median(root: Path, repeats: int, *args: str) -> tuple[float, float]:
    runs = [cli(root, *args) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), max(r[2] for r in runs)


MODEL_SHARE = r"""
import sys, time
clock = time.perf_counter()
from deckhand.embedding.minilm_onnx import MiniLMOnnxEmbedder
text = open(sys.argv[1], encoding="utf-8").read()
embedder = MiniLMOnnxEmbedder(None)
embedder.embed([text])
print(time.perf_counter() - clock)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tool", choices=sorted(TOOLS), default="vectorstore")
    parser.add_argument("--queries", type=int, default=100, help="queries timed in-process (--tool hierarchical)")
    parser.add_argument("--ann-index", choices=("hnsw", "ivf"), default="hnsw", help="the sqlite store's ann_index")
    parser.add_argument(
        "--ann-precision", choices=("i8", "b1", "f16", "f32"), help="the sqlite store's ann_precision (default: i8)"
    )
    parser.add_argument(
        "--ann-mapped-mb",
        type=int,
        help="the sqlite store's ann_mapped_mb (a search-time option: set in --workdir's agent.yaml, 0 removes it)",
    )
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--search-only",
        action="store_true",
        help="with --workdir holding a built index: steps 1 and 2 only (start-up, peak RSS, latency), nothing written",
    )
    args = parser.parse_args()
    if args.search_only and not (args.workdir and (args.workdir / "agent.yaml").is_file()):
        parser.error("--search-only needs --workdir of an earlier run (its agent.yaml and index)")
    root = args.workdir or Path(tempfile.mkdtemp(prefix="deckhand-scale-"))
    os.environ["DECKHAND_HOME"] = str(root / "state")
    files = args.chunks // args.per_file
    print(f"load average at start: {os.getloadavg()[0]:.1f}; work folder {root}", flush=True)
    if not (root / "agent.yaml").is_file():
        clock = time.perf_counter()
        texts = texts_of(args.tool, files, args.per_file)
        make_source(root, args.tool, texts, args.ann_index, args.ann_precision or "")
        print(f"source written: {files:,} files in {time.perf_counter() - clock:.0f} s", flush=True)
        write_index(root, args.tool, texts)
        del texts
    if args.ann_mapped_mb is not None:
        set_mapped_mb(root, args.ann_mapped_mb)
    name = TOOLS[args.tool][1]
    disk = sum(p.stat().st_size for p in (root / "state").rglob("*") if p.is_file())
    print(f"index on disk: {disk / 1e9:.2f} GB", flush=True)
    version, _ = median(root, args.repeats, "--version")
    search, peak = median(root, args.repeats, "search", "--tool", name, "harbour pilot at the quay")
    print(
        f"deckhand --version {version:.2f} s; deckhand search {search:.2f} s: start-up {search - version:.2f} s "
        f"above --version (medians of {args.repeats}); search peak RSS {peak:.0f} MB",
        flush=True,
    )
    if args.tool == "hierarchical":
        latency(root, name, args.queries, files * args.per_file)
    if args.search_only:
        print(f"load average at end: {os.getloadavg()[0]:.1f}", flush=True)
        return
    unchanged, _, _ = cli(root, "ingest")
    print(f"deckhand ingest, nothing changed: {unchanged:.2f} s", flush=True)
    changed = root / "docs" / "d0000" / "f0000007.md"
    sentence = "The lighthouse keeper logs every departing schooner in a green leather book."
    changed.write_text(f"# File 7, rewritten\n\n{sentence}\n\n{text_of(time.time_ns() % 10**9)}\n", encoding="utf-8")
    ingest, out, _ = cli(root, "ingest")
    model = subprocess.run([sys.executable, "-c", MODEL_SHARE, str(changed)], capture_output=True, text=True)
    share = float(model.stdout.strip().splitlines()[-1]) if model.returncode == 0 else float("nan")
    took, found, _ = cli(root, "search", "--tool", name, "--json", "lighthouse keeper schooner book")
    results = json.loads(found)[name]
    seen = bool(results) and results[0]["source"].endswith("f0000007.md") and "lighthouse" in results[0]["content"]
    print(
        f"one file changed: deckhand ingest {ingest:.2f} s, of which the model's share (load + embed the file, "
        f"measured apart) {share:.2f} s: {ingest - share:.2f} s above embedding; the next search ({took:.2f} s) "
        f"finds the new text: {seen}",
        flush=True,
    )
    print(out.strip().splitlines()[-3:] if out.strip() else "", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
