"""benchmarks/ui_bench.py as docs/benchmarks.md prints it, at a tiny size: it builds, serves and reports each figure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "ui_bench.py"


@pytest.mark.slow
def test_ui_bench_reports_every_figure(tmp_path: Path) -> None:
    env = {**os.environ, "DECKHAND_HOME": str(tmp_path / "home")}
    work = str(tmp_path / "work")
    built = subprocess.run(
        [sys.executable, str(BENCH), "--chunks", "300", "--workdir", work, "--build-only"],
        capture_output=True, text=True, env=env, timeout=280,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    assert "index written: 30 files, 300 chunks" in built.stdout
    done = subprocess.run(
        [sys.executable, str(BENCH), "--workdir", work, "--queries", "3"],
        capture_output=True, text=True, env=env, timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for figure in ("first search page (opens the index)", "search: TTFB median", "documents list, page 500: TTFB",
                   "document view: TTFB", "index: TTFB", "baseline Toolbox.search", "search page TTFB / Toolbox.search",
                   "rendered"):  # fmt: skip
        assert figure in out, figure
    assert "10.0 results a page" in out or "5.0 results a page" in out  # real answers, not empty pages
