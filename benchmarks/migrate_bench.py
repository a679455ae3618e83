"""Moving an index to another store: ``deckhand migrate`` against re-ingesting from the embedding cache.

Builds ``--files`` small generated files (one chunk each, English-like text from
:mod:`synthetic_corpus`), ingests them once into a sqlite file with the default model (which
fills the embedding cache), then moves the index two ways and times each as a user runs it,
one ``deckhand`` process per command (start-up included):

* ``deckhand -c old.yaml migrate --to new.yaml``: copies records, vectors and manifest;
* ``deckhand -c other.yaml ingest``: reads and chunks every file again, every vector from the cache.

Targets: sqlite -> sqlite, and sqlite -> PostgreSQL with ``--postgres`` (a server started
here by ``deckhand_postgres.server``, or ``$POSTGRES_URL``). Run:
``uv run python benchmarks/migrate_bench.py [--files 2000] [--postgres]``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_corpus import chunks


def _write_corpus(source: Path, files: int) -> None:
    source.mkdir(parents=True)
    for i, text in enumerate(chunks(files, words_per_chunk=40)):
        (source / f"f{i:05d}.md").write_text(f"# Note {i}\n\n{text}\n")


def _config(root: Path, name: str, database: str) -> Path:
    path = root / f"{name}.yaml"
    path.write_text(f"tools:\n  - type: vectorstore\n    name: kb\n    source: docs/\n    database: {database}\n")
    return path


def _deckhand(*args: str) -> tuple[float, str]:
    """Run ``deckhand ARGS`` in its own process; (wall seconds, its output). A failure stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(["deckhand", *args], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise SystemExit(f"deckhand {' '.join(args)} failed ({done.returncode}):\n{output}")
    return seconds, output


def _summary(output: str) -> str:
    """The command's result line (migrate's ``migrated ...``, ingest's ``N ingested ...``)."""
    lines = [line for line in output.splitlines() if re.search(r"migrated \d|\d+ ingested", line)]
    return lines[-1] if lines else output.splitlines()[-1]


@contextlib.contextmanager
def _postgres(wanted: bool) -> Iterator[str | None]:
    """A PostgreSQL URL: ``$POSTGRES_URL``, else a server started for the run; None without ``--postgres``."""
    if not wanted:
        yield None
        return
    if os.environ.get("POSTGRES_URL"):
        yield os.environ["POSTGRES_URL"]
        return
    from deckhand_postgres.server import PostgresServer

    with PostgresServer() as server:
        yield server.url


def _move(root: Path, label: str, database_of: dict[str, str]) -> None:
    """Time migrate and cached re-ingest into two fresh collections of one kind of store."""
    old = root / "old.yaml"
    migrated = _config(root, f"{label}-migrated", database_of["migrated"])
    reingested = _config(root, f"{label}-reingested", database_of["reingested"])
    seconds, output = _deckhand("-c", str(old), "migrate", "--to", str(migrated))
    print(f"{'sqlite -> ' + label:<20} migrate          {seconds:7.2f} s   {_summary(output)}")
    seconds, output = _deckhand("-c", str(reingested), "ingest")
    if " 0 embedded)" not in output:
        raise SystemExit(f"the re-ingest embedded again (the cache should serve it): {output}")
    print(f"{'sqlite -> ' + label:<20} ingest (cache)   {seconds:7.2f} s   {_summary(output)}")
    seconds, output = _deckhand("-c", str(migrated), "ingest")
    print(f"{'':<20} then ingest      {seconds:7.2f} s   {_summary(output)}  (through the migrated index)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--postgres", action="store_true", help="Also sqlite -> PostgreSQL (starts a server).")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="deckhand-migrate-"))
    _write_corpus(root / "docs", args.files)
    os.environ["DECKHAND_HOME"] = str(root / "state")
    old = _config(root, "old", "{provider: sqlite, connection_string: old.sqlite}")
    seconds, output = _deckhand("-c", str(old), "ingest")
    print(f"{args.files:,} files; first ingest (embeds, fills the cache) {seconds:.2f} s   {_summary(output)}")
    _move(
        root,
        "sqlite",
        {
            "migrated": "{provider: sqlite, connection_string: migrated.sqlite}",
            "reingested": "{provider: sqlite, connection_string: reingested.sqlite}",
        },
    )
    with _postgres(args.postgres) as url:
        if url is not None:
            stamp = f"{os.getpid()}_{int(time.time())}"
            _move(
                root,
                "postgres",
                {
                    kind: f"{{provider: postgres, connection_string: '{url}', index_name: bench_{kind}_{stamp}}}"
                    for kind in ("migrated", "reingested")
                },
            )


if __name__ == "__main__":
    main()
