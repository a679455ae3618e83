"""Where the benchmarks find their datasets: an environment variable, else a folder beside the repository.

SciFact (BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``) is read from
``$DECKHAND_SCIFACT``, else from ``../shared/datasets/scifact`` relative to the repository root
(docs/benchmarks.md, "Datasets", says how to get it). A missing dataset stops the benchmark with
one line naming the path tried and the variable to set, never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The repository's root (this file is ``benchmarks/bench_datasets.py``).
ROOT = Path(__file__).resolve().parents[1]
SCIFACT_ENV = "DECKHAND_SCIFACT"
#: Beside the repository: ``<parent of the clone>/shared/datasets/scifact``.
SCIFACT_DEFAULT = ROOT.parent / "shared" / "datasets" / "scifact"


class DatasetMissing(SystemExit):
    """A benchmark's dataset is not where it was looked for: exit 1 with one line (on stderr, as SystemExit
    prints its message) saying how to point at it."""

    def __init__(self, name: str, path: Path, env: str, needed: str) -> None:
        super().__init__(
            f"{name} not found: {path} has no {needed}; set {env}=/path/to/{name.lower()} "
            f'(docs/benchmarks.md, "Datasets", says how to get it)'
        )


def scifact(given: str | Path | None = None, *, needed: str = "corpus.jsonl") -> Path:
    """SciFact's directory: ``given`` (``--beir``), else ``$DECKHAND_SCIFACT``, else beside the repository."""
    path = Path(given or os.environ.get(SCIFACT_ENV) or SCIFACT_DEFAULT).expanduser()
    if not (path / needed).is_file():
        raise DatasetMissing("SciFact", path, SCIFACT_ENV, needed)
    return path
