"""The executor kit: an executor's runs leave the index a ``local`` run leaves, and report what changed alike.

Each test ingests a few short files into a sqlite index (a file another process may open, as a worker of a
distributed executor does) with the executor under test, and the same files into a second index with the
builtin ``local`` executor; the stored records, the reports and a search must agree. A rerun ingests
nothing, an edited file is ingested again and a deleted one removed (the run begins with ``plan`` and ends
with ``finish``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deckhand.config.loading import load_agent_config
from deckhand.ingest.executor import ExecutorBase, LocalExecutor
from deckhand.tools import build_tool
from deckhand.tools.source_tool import SourceTool
from deckhand.types import IngestReport

FILES = {
    "tides.md": "# Tides\n\nHigh tide at the north pier comes at dawn.\n\nLow tide uncovers the rocks.\n",
    "gear.md": "# Gear\n\nRope, anchor and lantern are kept in the gear locker.\n",
    "birds.txt": "Gulls nest on the south breakwater every spring.\n",
}


class _Pair:
    """One source, two indexes: ``run`` ingests it with an executor into the named index."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.source = root / "notes"
        self.source.mkdir()
        for name, text in FILES.items():
            (self.source / name).write_text(text, encoding="utf-8")
        self.tools: dict[str, SourceTool] = {}

    def run(self, index: str, executor: ExecutorBase) -> IngestReport:
        if index not in self.tools:
            agent = self.root / f"{index}.yaml"
            agent.write_text(
                f"tools:\n  - type: vectorstore\n    name: notes\n    source: notes\n"
                f"    database: {{provider: sqlite, connection_string: {index}.sqlite}}\n",
                encoding="utf-8",
            )
            tool = build_tool(load_agent_config(agent).tools[0], base_dir=self.root)
            assert isinstance(tool, SourceTool)
            self.tools[index] = tool
        return self.tools[index].initialize_sync(executor=executor)

    def records(self, index: str) -> list[tuple[str, int, str]]:
        """``(source, chunk index, content)`` of every chunk the index holds (a search asking for all), sorted."""
        found = self.tools[index].search_results_sync("harbour", 1000)
        return sorted((r.source, r.chunk_index, r.content) for r in found)

    def close(self) -> None:
        for tool in self.tools.values():
            tool.close()


def _changed(report: IngestReport) -> tuple[list[str], list[str], int]:
    return sorted(report.ingested), sorted(report.removed), report.chunks_written


class ExecutorTests:
    """Subclass it and return your executor from the ``executor`` fixture (built as its factory builds it)."""

    @pytest.fixture
    def executor(self) -> ExecutorBase:
        """Override: the executor under test."""
        pytest.fail(f"{type(self).__name__}: override the executor fixture to return your executor")

    def test_subclasses_its_base(self, executor: ExecutorBase) -> None:
        """The base class is the contract: core refuses a component that does not subclass it."""
        assert isinstance(executor, ExecutorBase), (
            f"{type(executor).__name__} does not subclass deckhand.api.ExecutorBase: subclass it"
        )

    @pytest.fixture
    def pair(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[_Pair]:
        monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
        pair = _Pair(tmp_path)
        yield pair
        pair.close()

    def test_a_run_leaves_the_index_a_local_run_leaves(self, executor: ExecutorBase, pair: _Pair) -> None:
        mine, local = pair.run("mine", executor), pair.run("local", LocalExecutor())
        assert _changed(mine) == _changed(local), f"report {_changed(mine)}, local's {_changed(local)}"
        assert not mine.failed, f"files failed: {mine.failed}"
        found = pair.tools["mine"].search_results_sync("when is high tide?", 1)
        assert found and found[0].source == "notes/tides.md", f"a search after the run found {found}"
        assert pair.records("mine") == pair.records("local"), "the stored records differ from a local run's"

    def test_a_rerun_ingests_nothing(self, executor: ExecutorBase, pair: _Pair) -> None:
        pair.run("mine", executor)
        again = pair.run("mine", executor)
        assert again.ingested == [] and again.chunks_written == 0, f"a rerun ingested {again.ingested}"
        assert sorted(again.unchanged) == sorted(f"notes/{name}" for name in FILES)

    def test_an_edit_is_ingested_again_and_a_deletion_removed(self, executor: ExecutorBase, pair: _Pair) -> None:
        pair.run("mine", executor)
        pair.run("local", LocalExecutor())
        (pair.source / "gear.md").write_text("# Gear\n\nOars and a bailer are kept in the boathouse.\n")
        (pair.source / "birds.txt").unlink()
        mine, local = pair.run("mine", executor), pair.run("local", LocalExecutor())
        assert _changed(mine) == _changed(local) == (["notes/gear.md"], ["notes/birds.txt"], local.chunks_written), (
            f"report {_changed(mine)}, local's {_changed(local)}"
        )
        assert pair.records("mine") == pair.records("local"), "the stored records differ from a local run's"
