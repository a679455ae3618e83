"""What a search's check for changed files costs (issue 43): ``SourceTool.source_changes`` at N files.

    flock /tmp/deckhand-bench.lock uv run python benchmarks/freshness_bench.py --files 1000 100000 [--repeat 3]

For each N: N small markdown files, one chunk each, written straight into a vectorstore tool's sqlite
index (8-dimensional random vectors under a stand-in model id: no model is loaded, the vectors play no
part in the check) with a manifest entry per file, marked as a complete ingest. Then, in the same
process, medians of ``--repeat`` runs of:

* ``open``: a new tool's ``open_sync`` (what ``deckhand search`` does before answering; it runs the check);
* ``check``: ``source_changes()`` with nothing changed (a walk, the manifest, one ``stat`` per file);
* ``refresh``: ``initialize_sync()`` with nothing changed (what ``--refresh`` and ``deckhand ingest`` do);

and the check again after 10 files were edited, 5 added and 3 deleted (its counts printed, to show it
sees them). The ratio check / refresh is the figure to compare across machines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from deckhand.config.models import VectorStoreToolConfig
from deckhand.index.opened_index import CHECK_CHUNKS
from deckhand.stores.sqlite import record_writes as writes
from deckhand.stores.tool_store import mark_complete
from deckhand.tools.vectorstore_tool import VectorStoreTool
from deckhand.types import FileState, Record

MODEL = "bench/random-8"


def tool_of(root: Path, source: Path) -> VectorStoreTool:
    config = VectorStoreToolConfig(
        type="vectorstore",
        name="bench",
        source=str(source),
        database={"provider": "sqlite"},
    )
    return VectorStoreTool(config, base_dir=root)


def build(root: Path, files: int) -> Path:
    source = root / "docs"
    for i in range(files):
        folder = source / f"d{i // 1000}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.md").write_text(f"# Doc {i}\n\nThis is document number {i} about topic {i % 17}.\n")
    tool = tool_of(root, source)
    store, embedder, _ = tool.index.open(False)
    rng = np.random.default_rng(0)
    paths = sorted(source.rglob("*.md"))
    for start in range(0, len(paths), 2000):
        batch = paths[start : start + 2000]
        records = []
        for path in batch:
            shown = path.relative_to(root).as_posix()
            vector = rng.standard_normal(embedder.dimension).astype(np.float32)
            records.append(Record(f"{shown}#0", shown, 0, path.read_text(), vector / np.linalg.norm(vector), {}))
        store.upsert(records)
        with store._write(records=False) as (conn, found):  # one transaction for the batch's manifest entries
            for path in batch:
                stat = path.stat()
                shown = path.relative_to(root).as_posix()
                state = FileState(shown, stat.st_mtime, stat.st_size, "0" * 64, embedder.model_id, 1)
                writes.set_state(conn, found, state)
    mark_complete(store, time.time())
    store.close()
    return source


def timed(run, repeat: int) -> float:
    took = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"check limit (CHECK_CHUNKS): {CHECK_CHUNKS} chunks")
    print("files     open      check     refresh   check/refresh  after changes")
    for n in args.files:
        measure(n, args.repeat)


def measure(n: int, repeat: int) -> None:
    """One row of the table: N files built, then timed."""
    root = Path(tempfile.mkdtemp(prefix="deckhand-fresh-"))
    os.environ["DECKHAND_HOME"] = str(root / "state")
    source = build(root, n)
    opened = timed(lambda: tool_of(root, source).open_sync(), repeat)
    tool = tool_of(root, source)
    tool.open_sync()
    check = timed(lambda: tool.source_changes(max_chunks=None), repeat)
    refresh = timed(lambda: tool.initialize_sync(), repeat)
    tool.close()
    paths = sorted(source.rglob("*.md"))
    for path in paths[:10]:
        path.write_text(path.read_text() + "edited\n")
    for i in range(5):
        (source / "d0" / f"new{i}.md").write_text(f"new file {i}\n")
    for path in paths[-3:]:
        path.unlink()
    tool = tool_of(root, source)
    tool.open_sync()
    changes = tool.source_changes(max_chunks=None)
    tool.close()
    seen = changes.counts() if changes is not None else "not checked"
    print(f"{n:<9} {opened:8.3f}s {check:8.3f}s {refresh:8.3f}s {check / refresh:10.2f}     {seen}", flush=True)


if __name__ == "__main__":
    main()
