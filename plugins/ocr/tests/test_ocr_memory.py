"""Bounded memory: recognising a page of page-wide lines keeps a fresh process's peak within a bound (the
recogniser's per-character scores of RapidOCR's default six lines at a time added about 500 MB to it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: The most a page may add to the process's peak resident memory (detector and recogniser included).
BOUND_MB = 300

PROBE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from deckhand_ocr.engine import Engine
from ocr_samples import page_image

def peak() -> float:
    lines = Path("/proc/self/status").read_text().splitlines()
    return next(int(x.split()[1]) for x in lines if x.startswith("VmHWM:")) / 1024

line = "The quick brown fox jumps over the lazy dog while the harbour board counts its fees"
image = page_image([line] * 7, width=2550, size=40)
engine = Engine()
engine.recognise(page_image(["warm up"]))
before = peak()
found = engine.recognise(image)
print(len(found.lines), round(peak() - before))
"""


def test_a_page_of_wide_lines_adds_a_bounded_peak() -> None:
    if not Path("/proc/self/status").is_file():
        import pytest

        pytest.skip("VmHWM is read from /proc (Linux)")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(Path(__file__).parent)], capture_output=True, text=True, check=True
    )
    lines, added = (int(x) for x in done.stdout.split())
    assert lines == 7
    assert added < BOUND_MB, f"one page added {added} MB to the peak (bound {BOUND_MB} MB)"
