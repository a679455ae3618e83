"""The default store through the CLI: a damaged index is one line naming the file and the fix, and
the fix works; two `deckhand ingest` processes at once on the same tool leave every chunk once."""

from __future__ import annotations

import gc
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import EXIT_ERROR, cli
from deckhand.stores.sqlite import SQLiteStore
from deckhand.types import CollectionSpec

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DECKHAND = str(Path(sys.executable).parent / "deckhand")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    return tmp_path / "examples"


def _index() -> Path:
    return Path(os.environ["DECKHAND_HOME"]) / "index" / "deckhand_vectors.sqlite"


def test_damaged_index_is_one_line_and_force_ingest_rebuilds(project: Path, minilm: object) -> None:
    cfg = str(project / "agent.yaml")
    runner = CliRunner()
    assert runner.invoke(cli, ["-c", cfg, "ingest"]).exit_code == 0
    gc.collect()  # the tool is gone: its connection closes and checkpoints, as when a process exits
    index = _index()
    assert not Path(f"{index}-wal").exists()
    index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])

    broken = runner.invoke(cli, ["-c", cfg, "search", "rotate API keys"])
    assert broken.exit_code == EXIT_ERROR
    assert broken.stdout == ""
    assert broken.stderr.count("\n") == 1 and "Traceback" not in broken.stderr
    assert broken.stderr.startswith(f"error: index file {index} is damaged (")
    assert broken.stderr.endswith("; run again with --force-ingest to set it aside and rebuild the index\n")

    fixed = runner.invoke(cli, ["-c", cfg, "search", "--force-ingest", "rotate API keys"])
    assert fixed.exit_code == 0, fixed.stderr
    assert "| Source: docs/security.md" in fixed.stdout.splitlines()[2]
    assert "harbor_docs [sqlite]: 5 ingested" in fixed.stderr
    assert [p.name.startswith("deckhand_vectors.sqlite.damaged-") for p in index.parent.glob("*.damaged-*")] == [True]
    again = runner.invoke(cli, ["-c", cfg, "search", "rotate API keys"])
    assert again.exit_code == 0 and "harbor_docs [sqlite]: index opened (5 chunks;" in again.stderr
    checked = runner.invoke(cli, ["-c", cfg, "search", "--refresh", "rotate API keys"])
    assert checked.exit_code == 0 and "0 ingested (0 chunks, 0 embedded), 5 unchanged" in checked.stderr


def test_ingest_into_a_scribbled_index_fails_one_line_and_force_ingest_rebuilds(project: Path, minilm: object) -> None:
    """Random bytes over a page of vectors the next ingest does not read: the ingest checks the whole file
    before it writes, so it fails (one line, the file and the fix) instead of reporting success while
    every search fails."""
    for n in range(40):  # other files first, so that their vectors fill pages of their own
        (project / "docs" / f"a{n:02}.md").write_text(f"Berth {n} takes ships up to {n * 1000} tonnes.")
    cfg = str(project / "agent.yaml")
    runner = CliRunner()
    assert runner.invoke(cli, ["-c", cfg, "ingest"]).exit_code == 0
    gc.collect()  # the tool is gone: its connection closes and checkpoints, as when a process exits
    index = _index()
    with sqlite3.connect(index) as conn:
        leaves = [
            p for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'c1_vectors' AND pagetype = 'leaf'")
        ]
    conn.close()
    assert len(leaves) >= 3
    with open(index, "r+b") as fh:  # the second leaf: vectors of a0x.md, not of the file edited below
        fh.seek((sorted(leaves)[1] - 1) * 16384)
        fh.write(random.Random(19).randbytes(16384))
    (project / "docs" / "security.md").write_text((project / "docs" / "security.md").read_text() + "\nEdited.\n")
    assert runner.invoke(cli, ["-c", cfg, "search", "rotate API keys"]).exit_code == EXIT_ERROR

    damaged = runner.invoke(cli, ["-c", cfg, "ingest"])
    assert damaged.exit_code == EXIT_ERROR, damaged.stderr
    last = damaged.stderr.splitlines()[-1]
    assert "ingested" not in damaged.stderr and "Traceback" not in damaged.stderr
    assert last.startswith(f"error: index file {index} is damaged (") and "\n" not in last
    assert last.endswith("; run again with --force-ingest to set it aside and rebuild the index")

    fixed = runner.invoke(cli, ["-c", cfg, "ingest", "--force-ingest"])
    assert fixed.exit_code == 0 and "harbor_docs [sqlite]: 45 ingested" in fixed.stderr, fixed.stderr
    found = runner.invoke(cli, ["-c", cfg, "search", "rotate API keys"])
    assert found.exit_code == 0 and "| Source: docs/security.md" in found.stdout, found.stderr


def test_two_ingest_processes_at_once_store_every_chunk_once(project: Path) -> None:
    env = {**os.environ, "DECKHAND_THREADS": "1"}
    command = [DECKHAND, "-c", str(project / "agent.yaml"), "ingest"]
    both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)]
    both.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    for process in both:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert err.splitlines()[-1].startswith("harbor_docs [sqlite]: "), err

    store = SQLiteStore(_index(), "harbor_docs")
    previous = store.open(CollectionSpec("harbor_docs", 384, "unused"))
    assert previous is not None
    manifest = store.manifest()
    records = list(store.iter_records())
    assert len(manifest) == 5 and store.count() == len(records) == sum(s.chunk_count for s in manifest.values())
    assert len({r.id for r in records}) == len(records)
    assert sorted({r.source for r in records}) == sorted(manifest)
    store.close()

    third = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert third.returncode == 0
    assert "harbor_docs [sqlite]: 0 ingested (0 chunks, 0 embedded), 5 unchanged" in third.stderr


def test_search_and_list_tools_say_searches_are_exact_until_the_graph_is_built(
    project: Path, minilm: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deckhand.calls.call_models import SearchArguments
    from deckhand.calls.toolbox import Toolbox
    from deckhand.cli.tools import build_tools
    from deckhand.config.loading import load_agent_config
    from deckhand.stores.sqlite import ann as sqlite_ann

    cfg = project / "agent.yaml"
    options = "{search: ann, ann_threshold: 0, ann_background_rows: 1}"
    cfg.write_text(
        cfg.read_text().replace(
            "    results: focused\n", f"    results: focused\n    database: {{provider: sqlite, options: {options}}}\n"
        )
    )

    def stopped(*args: object, **kwargs: object) -> None:
        raise RuntimeError("stopped")  # as a build killed midway leaves it: the flat snapshot recorded

    monkeypatch.setattr(sqlite_ann, "_graph", stopped)
    runner = CliRunner()
    ingested = runner.invoke(cli, ["-c", str(cfg), "ingest"])
    assert ingested.exit_code == 0, ingested.stderr
    assert "harbor_docs: searches are exact (every vector compared)" in ingested.stderr
    searched = runner.invoke(cli, ["-c", str(cfg), "search", "rotate API keys"])
    assert searched.exit_code == 0, searched.stderr
    assert "Note: searches are exact (every vector compared) until the search graph of" in searched.stdout
    assert "| Source: docs/security.md" in searched.stdout

    box = Toolbox(build_tools(load_agent_config(cfg), cfg))
    try:
        box.search("harbor_docs", SearchArguments(query="keys"))
        text, listing = box.list_tools()
    finally:
        box.close()
    assert listing.tools[0].search_note is not None and "until the search graph of" in listing.tools[0].search_note
    assert "searches are exact" in text
