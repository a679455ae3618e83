"""The ui tests' generated corpus and agent configs (a module of its own: conftest names clash across test folders)."""

from __future__ import annotations

import shutil
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
#: The address the test client asks as (a loopback server answers only to loopback names).
BASE = "http://127.0.0.1:8765"

ACTS = {
    "harbour.md": '# Harbour Act\n\n## 1. Definitions\n\n"Berth" means a place where a vessel moors.\n\n'
    "## 2. Mooring\n\nA vessel moors at a berth assigned by the harbour master. See section 1.\n\n"
    "## 3. Dues\n\nHarbour dues are paid monthly to the harbour master's office.\n",
    "pilots.md": "# Pilotage Act\n\n## 1. Scope\n\nPilots guide vessels through the channel.\n\n"
    "## 2. Fees\n\nPilotage fees are paid before departure.\n",
    "lights.md": "# Lights Act\n\n## 1. Beacons\n\nEvery beacon shows a white light at night.\n\n"
    "## 2. Fog\n\nIn fog the lighthouse sounds its horn every thirty seconds.\n",
}

AGENT = """name: workbench
tools:
  - type: hierarchical_document
    name: acts
    source: docs/
    top_k: 3
  - type: vectorstore
    name: flat
    source: docs/
    top_k: 3
memory:
  backend: memory
tests:
  - query: How often does the lighthouse horn sound in fog?
    expected_sources: [docs/lights.md]
  - query: When are pilotage fees paid?
    expected_sources: [docs/pilots.md]
  - query: What is a berth?
    expected_sources: [docs/harbour.md]
  - query: How do I rotate API keys?
    expected_sources: [docs/security.md]
  - query: Where do ships tie up?
    expected_sources: [docs/harbour.md]
  - query: Which charge is settled ahead of leaving port?
    expected_sources: [docs/pilots.md]
"""

OTHER = """name: other
tools:
  - type: hierarchical_document
    name: acts_keyword
    source: docs/
    top_k: 3
    search_mode: keyword
"""


def write_corpus(root: Path, extra_files: int = 0) -> Path:
    """The example docs and the three acts under ``root/docs`` (and ``extra_files`` generated notes)."""
    docs = root / "docs"
    shutil.copytree(EXAMPLES / "docs", docs)
    for name, text in ACTS.items():
        (docs / name).write_text(text, encoding="utf-8")
    for i in range(extra_files):
        (docs / f"note-{i:04d}.md").write_text(
            f"# Note {i}\n\n## Part A\n\nThe inspector visited quay {i} and logged {i * 7} crates.\n\n"
            f"## Part B\n\nCargo manifest {i} lists timber, grain and {i % 13} containers of salt.\n",
            encoding="utf-8",
        )
    return docs
