"""The executor extension point: ``register.executor``, the builtin ``local``, and how an ingest picks one
(``--executor NAME[:ADDRESS]`` > agent.yaml's ``executor:`` > the global config's > ``local``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner
from deckhand.cli.main import cli
from deckhand.config.tool_fields import DEFAULT_EXECUTOR
from deckhand.hookspecs import hookimpl
from deckhand.ingest.executor import LOCAL, ExecutorBase, IngestJob, LocalExecutor
from deckhand.plugins import get_registry
from deckhand.registration import Registrar
from deckhand.types import IngestReport
from pydantic import BaseModel, ConfigDict


class CountingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: str = "none"
    label: str = "counting"


class CountingExecutor(ExecutorBase):
    """Runs the local pipeline and records each job it was given (and the options it was built with)."""

    jobs: ClassVar[list[tuple[str, IngestJob]]] = []

    def __init__(self, options: CountingOptions) -> None:
        self.options = options

    def run(self, job: IngestJob) -> IngestReport:
        CountingExecutor.jobs.append((self.options.address, job))
        plan = job.ingestor.plan(job.source, force=job.force, shard=job.shard)
        job.ingestor.process(plan)
        job.ingestor.finish(plan)
        return plan.report


class CountingPlugin:
    @hookimpl
    def deckhand_register(self, register: Registrar) -> None:
        register.executor("counting", CountingExecutor, options=CountingOptions, description="test executor")


@pytest.fixture
def counting(fresh_registry: None) -> Iterator[None]:
    CountingExecutor.jobs = []
    get_registry().register_plugin(CountingPlugin(), "counting")
    yield


def _project(root: Path, executor: str = "") -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for topic in ("keys", "ports", "billing"):
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\nHow {topic} work in Harbor.\n")
    config = root / "agent.yaml"
    config.write_text(f"{executor}tools:\n  - type: vectorstore\n    name: kb\n    source: docs/\n")
    return config


def test_local_is_builtin_and_listed() -> None:
    component = get_registry().resolve("executor", "local")
    assert component.builtin and isinstance(component.create(options={}), LocalExecutor)
    listing = CliRunner().invoke(cli, ["plugins"])
    assert "executor" in listing.output and " local " in listing.output


def test_the_ingest_layer_names_the_default_agent_yaml_configures() -> None:
    """``ingest.executor`` takes no agent.yaml model (import-linter's plain-settings contract), so it spells
    ``local`` itself: the same name config's default choice resolves to."""
    assert LOCAL == DEFAULT_EXECUTOR
    assert get_registry().resolve("executor", LOCAL).builtin


def test_flag_picks_a_plugin_executor_with_its_address(tmp_path: Path, counting: None, minilm: object) -> None:
    config = _project(tmp_path)
    result = CliRunner().invoke(cli, ["-c", str(config), "ingest", "--executor", "counting:host:6379"])
    assert result.exit_code == 0, result.output
    assert "3 ingested" in result.output
    [(address, job)] = CountingExecutor.jobs
    assert address == "host:6379" and job.pipeline.tool == "kb" and job.pipeline.database["provider"] == "sqlite"
    assert job.source == (tmp_path / "docs").resolve() and not job.force


def test_agent_yaml_then_global_config_pick_one(tmp_path: Path, counting: None, minilm: object) -> None:
    runner = CliRunner()
    config = _project(tmp_path, "executor: {name: counting, address: from-agent}\n")
    assert runner.invoke(cli, ["-c", str(config), "ingest"]).exit_code == 0
    (tmp_path / ".deckhand").mkdir()
    (tmp_path / ".deckhand" / "config.yaml").write_text("executor: {name: counting, address: from-global}\n")
    assert runner.invoke(cli, ["-c", str(config), "ingest", "--force-ingest"]).exit_code == 0
    _project(tmp_path)  # agent.yaml without executor: the global config's
    assert runner.invoke(cli, ["-c", str(config), "ingest", "--force-ingest"]).exit_code == 0
    assert runner.invoke(cli, ["-c", str(config), "ingest", "--executor", "local", "--force-ingest"]).exit_code == 0
    assert [address for address, _ in CountingExecutor.jobs] == ["from-agent", "from-agent", "from-global"]


def test_bad_choices_are_one_line_errors(tmp_path: Path, counting: None) -> None:
    runner = CliRunner()
    config = _project(tmp_path, "executor: {name: counting, adress: x}\n")
    bad = runner.invoke(cli, ["-c", str(config), "ingest"])
    assert bad.exit_code == 3
    assert "executor.adress: unknown option (did you mean 'address'?" in bad.output
    config = _project(tmp_path)
    missing = runner.invoke(cli, ["-c", str(config), "ingest", "--executor", "dask"])
    assert missing.exit_code == 3 and len(missing.output.strip().splitlines()) == 1
    assert "--executor: no executor plugin provides 'dask'" in missing.output and "local" in missing.output
    empty = runner.invoke(cli, ["-c", str(config), "ingest", "--executor", ":x"])
    assert empty.exit_code == 3 and "--executor ':x': name an executor" in empty.output
    local = runner.invoke(cli, ["-c", str(config), "ingest", "--executor", "local:somewhere"])
    assert local.exit_code == 3 and "local" in local.output and "takes no options" in local.output
    assert CountingExecutor.jobs == []


def test_schema_lists_executor_options(counting: None) -> None:
    from deckhand.config.schema import agent_schema, global_schema

    for schema in (agent_schema(), global_schema()):
        choices = {c.get("title") for c in schema["properties"]["executor"]["anyOf"]}
        assert {"executor 'local'", "executor 'counting'"} <= choices
