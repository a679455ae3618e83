"""Re-ingest with nothing changed: 1,000 small files, one tool initialised three times.

Prints the first ingestion, the second one (nothing changed) and a third after touching 10
files (mtime changed, content the same: hashed, not re-embedded). Run:
``uv run python benchmarks/reingest_bench.py [--files N]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from deckhand.config.models import VectorStoreToolConfig
from deckhand.tools.vectorstore_tool import VectorStoreTool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="deckhand-reingest-"))
    source = root / "docs"
    source.mkdir()
    for i in range(args.files):
        (source / f"f{i}.md").write_text(f"# Doc {i}\n\nThis is document number {i} about topic {i % 17}.\n")
    os.environ["DECKHAND_HOME"] = str(root / "state")
    tool = VectorStoreTool(VectorStoreToolConfig(type="vectorstore", name="t", source=str(source)), base_dir=root)
    for label in ("first ingestion", "nothing changed", "10 files touched"):
        if label == "10 files touched":
            for path in sorted(source.iterdir())[:10]:
                os.utime(path)
        start = time.perf_counter()
        report = tool.initialize_sync()
        print(f"{label:<18} {time.perf_counter() - start:8.3f} s   {report.summary()}")


if __name__ == "__main__":
    main()
