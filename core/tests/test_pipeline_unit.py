"""Ingestion as units of work: the pipeline description travels as plain data, and a worker built from it alone
(no tool) embeds and hands back records that give the index a local ingest gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deckhand.config.loading import load_agent_config
from deckhand.errors import ConfigError
from deckhand.ingest.executor import ExecutorBase, IngestJob, LocalExecutor
from deckhand.ingest.unit import ComponentSpec, PipelineDescription
from deckhand.ingest.workers import convert, ensure_worker, log_level, pickled_components
from deckhand.tools import build_tool, build_worker
from deckhand.tools.source_tool import SourceTool
from deckhand.types import Chunk, Document, IngestReport


class UnitExecutor(ExecutorBase):
    """Runs each planned file as a unit of work: converted, then embedded by a worker built from the job's
    description sent through JSON (as another process receives it); the driver is the one writer."""

    def __init__(self) -> None:
        self.descriptions: list[dict[str, Any]] = []

    def run(self, job: IngestJob) -> IngestReport:
        ingestor = job.ingestor
        plan = ingestor.plan(job.source, force=job.force, shard=job.shard)
        sent = json.dumps(job.pipeline.to_dict())
        self.descriptions.append(json.loads(sent))
        worker = build_worker(PipelineDescription.from_dict(json.loads(sent)), writes=False)
        ensure_worker(pickled_components(ingestor.loaders, ingestor.chunker), log_level())
        reader = ingestor.reader()
        for file in plan.todo:
            state = plan.states[file.display]
            converted = convert(file.path, file.display, reader.encoding_of(file), True, plan.root)
            assert converted.failed is None and not converted.empty
            records = worker.embed(file, state, converted, plan.report)
            assert records is not None
            ingestor.write(file.display, state, records, plan.report)
            ingestor.file_done(state.size)
        ingestor.finish(plan)
        return plan.report


def _agent(root: Path, corpus: Path) -> Path:
    root.mkdir(parents=True)
    config = root / "agent.yaml"
    config.write_text(
        f"tools:\n  - type: vectorstore\n    name: kb\n    source: {corpus}\n    contextual_embeddings: true\n"
        "    database: {provider: sqlite, connection_string: kb.sqlite}\n"
    )
    return config


def _ingest(config: Path, executor: Any) -> dict[str, tuple[str, str | None, tuple[float, ...]]]:
    """Ingest with ``executor``; the index's records: id -> (content, context, rounded vector)."""
    tool = build_tool(load_agent_config(config).tools[0], base_dir=config.parent)
    assert isinstance(tool, SourceTool)
    try:
        report = tool.initialize_sync(executor=executor)
        assert report.ingested and not report.failed
        store = tool.index.ready("records")
        return {
            r.id: (r.content, r.metadata.get("context"), tuple(round(float(x), 5) for x in r.vector))  # type: ignore[misc]
            for r in store.iter_records()
        }
    finally:
        tool.close()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for n in range(3):
        parts = (f"## Part {i}\n\n" + f"word{n}{i} text about harbours and ships. " * 40 for i in range(3))
        sections = "\n\n".join(parts)
        (root / f"doc{n}.md").write_text(f"# Guide {n}\n\n{sections}\n")
    return root


def test_a_worker_built_from_the_description_gives_the_local_index(
    tmp_path: Path, corpus: Path, minilm: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DECKHAND_CHUNK_WORKERS", "0")
    local = _ingest(_agent(tmp_path / "local", corpus), LocalExecutor())
    units = UnitExecutor()
    unit = _ingest(_agent(tmp_path / "unit", corpus), units)
    assert len(local) > 3 and all(context for _, context, _ in local.values())  # the context step ran
    assert unit == local
    (description,) = units.descriptions
    assert description["context"] == {"name": "structural", "options": {}}
    assert description["database"]["provider"] == "sqlite" and description["tool"] == "kb"


def test_the_description_round_trips_and_names_a_bad_field() -> None:
    description = PipelineDescription(
        "kb", "/agents/a", {"name": "minilm", "options": {}}, ComponentSpec("llm", {"model": "m"}), {"provider": "x"}
    )
    assert PipelineDescription.from_dict(json.loads(json.dumps(description.to_dict()))) == description
    with pytest.raises(ConfigError, match="missing database"):
        PipelineDescription.from_dict({"tool": "kb", "base_dir": ".", "embedder": None})
    with pytest.raises(ConfigError, match="context needs a name"):
        PipelineDescription.from_dict({**description.to_dict(), "context": {"options": {}}})


def test_a_tool_with_its_own_prepare_step_is_refused_a_description(tmp_path: Path, corpus: Path) -> None:
    """A step no description names would be skipped by every worker elsewhere: refused in one line instead."""

    class Custom(SourceTool):
        def prepare(self, document: Document, chunks: list[Chunk]) -> list[Chunk]:
            return chunks

    config = load_agent_config(_agent(tmp_path / "own", corpus)).tools[0]
    tool = Custom(config, base_dir=tmp_path / "own")
    with pytest.raises(ConfigError, match=r"runs its own prepare step.*--executor local"):
        tool.pipeline_description()
