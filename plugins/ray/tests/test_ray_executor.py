"""``deckhand ingest --executor ray`` against a real local Ray (2 CPUs) and real stores: the index it leaves
equals a local ingest's (records, manifest, what queries find) in sqlite, PostgreSQL and Redis; a worker
killed mid-run is retried; a killed driver's rerun writes and embeds nothing twice."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import deckhand_ray.executor as executor_module
import psutil
import pytest
from click.testing import CliRunner
from deckhand.bases import ProgressBase
from deckhand.building.lazy_embedders import forget_embedders, lazy_embedder, lazy_embedder_for
from deckhand.cli.main import cli
from deckhand.config.loading import load_agent_config
from deckhand.errors import ConfigError, StoreConnectionError
from deckhand.index.components import open_collection
from deckhand.ingest.executor import IngestJob
from deckhand.ingest.unit import PipelineDescription
from deckhand.plugins import get_registry
from deckhand.testing.kits import ExecutorTests
from deckhand.tools import build_tool
from deckhand.tools.source_tool import SourceTool
from deckhand.types import IngestReport
from deckhand_ray.executor import RayExecutor, embedding_threads
from deckhand_ray.options import RayOptions

from conftest import FILES

QUERIES = ["How often are keys rotated?", "billing in region 3", "audit the logs", "quotas of users", "export alerts"]
SUMMARY = re.compile(r"(\d+) ingested \((\d+) chunks, (\d+) embedded\)")


def _agent(root: Path, name: str, corpus: Path, database: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    config = root / "agent.yaml"
    config.write_text(
        f"tools:\n  - type: vectorstore\n    name: {name}\n    source: {corpus}\n    database: {database}\n"
    )
    return config


def _sqlite_pair(root: Path, corpus: Path) -> tuple[Path, Path]:
    """Two agents over ``corpus``, each with its own sqlite index: one ingested locally, one through Ray."""
    database = "{provider: sqlite, connection_string: kb.sqlite}"
    return _agent(root / "local", "kb", corpus, database), _agent(root / "ray", "kb", corpus, database)


def _ingest(config: Path, home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, int, int]:
    """``deckhand ingest`` in this process with its own state directory: (files ingested, chunks, embedded)."""
    monkeypatch.setenv("DECKHAND_HOME", str(home))
    forget_embedders()
    result = CliRunner().invoke(cli, ["-c", str(config), "ingest", *args])
    assert result.exit_code == 0, result.output
    found = SUMMARY.search(result.output)
    assert found is not None, result.output
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def _index(config: Path) -> tuple[int, dict[str, tuple[str, int]], dict[str, str], list[list[str]]]:
    """What the tool's index holds: its count, manifest (hash, chunk count), records and the top-10 sources
    of :data:`QUERIES`."""
    tool_config = load_agent_config(config).tools[0]
    registry = get_registry()
    embedder = lazy_embedder_for(registry, None, config.parent)
    store, _ = open_collection(
        registry, tool_config.name, tool_config.database, embedder, base_dir=config.parent, force_ingest=False
    )
    try:
        manifest = {k: (v.sha256, v.chunk_count) for k, v in store.manifest().items()}
        records = {r.id: r.content for r in store.iter_records()}
        tops = [[h.record.source for h in store.search(embedder.embed([q])[0], 10)] for q in QUERIES]
        return store.count(), manifest, records, tops
    finally:
        store.close()


def _same(local: Path, distributed: Path) -> None:
    count, manifest, records, tops = _index(local)
    assert len(manifest) == FILES and count == sum(c for _, c in manifest.values()) == len(records)
    assert _index(distributed) == (count, manifest, records, tops)


def test_sqlite_equals_local(tmp_path: Path, corpus: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    local, distributed = _sqlite_pair(tmp_path, corpus)
    files, chunks, embedded = _ingest(local, tmp_path / "home-local", monkeypatch)
    assert (files, embedded) == (FILES, chunks) and chunks > FILES  # some files have several chunks
    assert _ingest(distributed, tmp_path / "home-ray", monkeypatch, "--executor", "ray") == (files, chunks, chunks)
    # The driver chunked (its chunker pickled for the read tasks) on the tokenizer alone: it never loaded the model.
    assert lazy_embedder(get_registry(), None).loaded is False
    _same(local, distributed)
    again = _ingest(distributed, tmp_path / "home-ray", monkeypatch, "--executor", "ray")
    assert again == (0, 0, 0)  # decided by the manifest: nothing changed, Ray not even needed


@pytest.mark.parametrize("server", ["postgres", "redis"])
def test_server_stores_equal_local(
    server: str, tmp_path: Path, corpus: Path, ray_address: str, request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    url = request.getfixturevalue(f"{server}_url")
    database = f"{{provider: {server}, connection_string: '{url}'}}"
    local = _agent(tmp_path / "local", f"local_{os.getpid()}", corpus, database)
    distributed = _agent(tmp_path / "ray", f"ray_{os.getpid()}", corpus, database)
    files, chunks, _ = _ingest(local, tmp_path / "home-local", monkeypatch, "--force-ingest")
    assert _ingest(distributed, tmp_path / "home-ray", monkeypatch, "--executor", "ray", "--force-ingest") == (
        files,
        chunks,
        chunks,
    )
    _same(local, distributed)


class _KillOnce(ProgressBase):
    """A progress display that SIGKILLs one embedding actor's process when ``after`` files are done."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.killed: int | None = None

    def stage(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def status(self, status: Any) -> None:
        if self.killed is None and status.files_done >= self.after:
            actor = next(p for p in psutil.process_iter(["cmdline"]) if "ray::EmbedWriter" in " ".join(p.cmdline()))
            os.kill(actor.pid, signal.SIGKILL)
            self.killed = actor.pid


def test_a_killed_worker_is_retried(
    tmp_path: Path, corpus: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, distributed = _sqlite_pair(tmp_path, corpus)
    _ingest(local, tmp_path / "home", monkeypatch)
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home-ray"))
    killer = _KillOnce(after=FILES // 4)
    tool = build_tool(load_agent_config(distributed).tools[0], base_dir=distributed.parent, progress=killer)
    assert isinstance(tool, SourceTool)
    try:
        report = tool.initialize_sync(executor=RayExecutor(RayOptions(max_in_flight=8)))
    finally:
        tool.close()
    assert killer.killed is not None and not psutil.pid_exists(killer.killed)
    assert len(report.ingested) == FILES and not report.failed
    _same(local, distributed)


def _cache_rows(home: Path) -> int:
    with sqlite3.connect(home / "cache" / "embeddings.sqlite") as db:
        rows: int = db.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    return rows


def _embed_writers() -> list[int]:
    pids = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if "ray::EmbedWriter" in " ".join(process.info["cmdline"] or ()):
                pids.append(process.pid)
        except psutil.Error:
            continue
    return pids


def _wait_for_orphaned_actors(timeout: float = 60.0) -> None:
    """Wait until Ray has reaped the dead driver's actors: each unit they commit is whole, but the last may
    land after the kill, and the snapshot the test compares with must be taken once nothing writes."""
    deadline = time.monotonic() + timeout
    while _embed_writers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _embed_writers(), "Ray kept the killed driver's EmbedWriter actors alive for a minute"


def test_a_killed_driver_leaves_nothing_half_written(
    tmp_path: Path, corpus: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local, distributed = _sqlite_pair(tmp_path, corpus)
    _ingest(local, tmp_path / "home", monkeypatch)
    home = tmp_path / "home-ray"
    env = {**os.environ, "RAY_ADDRESS": ray_address, "DECKHAND_HOME": str(home), "DECKHAND_PROGRESS_INTERVAL": "0"}
    driver = subprocess.Popen(
        [str(Path(sys.executable).parent / "deckhand"), "-c", str(distributed), "ingest", "--executor", "ray"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    assert driver.stderr is not None
    deadline = time.monotonic() + 120
    for line in driver.stderr:
        done = re.search(r"(\d+)/\d+ files", line)
        if (done and int(done.group(1)) >= FILES // 3) or time.monotonic() > deadline:
            break
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    assert driver.returncode == -signal.SIGKILL
    _wait_for_orphaned_actors()  # a unit an actor was writing when its driver died may still commit
    _, written, _, _ = _index(distributed)
    assert 0 < len(written) < FILES
    cached = _cache_rows(home)

    files, chunks, embedded = _ingest(distributed, home, monkeypatch, "--executor", "ray")
    assert files == FILES - len(written)  # the files written before the kill are not read again
    assert _cache_rows(home) == cached + embedded  # every text embedded now was in no cache before
    assert embedded <= chunks
    _same(local, distributed)


def test_errors_are_one_line_with_their_exit_code(
    tmp_path: Path, corpus: Path, ray_address: str, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A setting the cluster cannot honour is a configuration error (exit 3); a store the actors cannot reach
    is the store's own connection error (exit 1), not Ray's traceback."""
    config = _agent(tmp_path, "kb", corpus, "{provider: sqlite, connection_string: kb.sqlite}")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    config.write_text("executor: {name: ray, embed_actors: 2}\n" + config.read_text())
    crowded = CliRunner().invoke(cli, ["-c", str(config), "ingest"])
    last = crowded.output.strip().splitlines()[-1]
    assert crowded.exit_code == 3 and crowded.output.count("error") == 1, crowded.output
    assert last.startswith("error: executor ray: 2 embedding actor(s) of 1 CPU leave no CPU of the cluster's 2 ")

    database = f"{{provider: postgres, connection_string: '{postgres_url}'}}"
    served = _agent(tmp_path / "pg", f"unreachable_{os.getpid()}", corpus, database)
    # The actors are given a server that does not answer (the driver's own store works).
    message = _refused(served, StoreConnectionError, database={"connection_string": "postgresql://x@127.0.0.1:1/x"})
    assert "Traceback" not in message and "\n" not in message, message


def _refused(config: Path, error: type[Exception], **changes: dict[str, Any]) -> str:
    """Ingest ``config`` through Ray with the actors given a job whose pipeline description has ``changes`` (its
    fields, ``database`` merged; the driver keeps its own); the message of the ``error`` the run raises."""

    class Changed(RayExecutor):
        def run(self, job: IngestJob) -> IngestReport:
            given = job.pipeline.to_dict()
            updated = {**given, **changes.get("pipeline", {})}
            updated["database"] = {**given["database"], **changes.get("database", {})}
            job.pipeline = PipelineDescription.from_dict(updated)
            return super().run(job)

    tool = build_tool(load_agent_config(config).tools[0], base_dir=config.parent)
    assert isinstance(tool, SourceTool)
    try:
        with pytest.raises(error) as caught:
            tool.initialize_sync(executor=Changed(RayOptions()))
    finally:
        tool.close()
    return str(caught.value)


def test_actors_embedding_with_another_model_are_refused(
    tmp_path: Path, corpus: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node whose default model differs from the driver's (fp32 where onnxruntime-gpu is installed, int8 on a
    CPU) would write vectors of another model into the index: the run stops in one line before any file is sent,
    and nothing is written."""
    config = _agent(tmp_path, "kb", corpus, "{provider: sqlite, connection_string: kb.sqlite}")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    # The actors build the model a GPU node's default gives (fp32); the driver keeps the CPU default.
    message = _refused(config, ConfigError, pipeline={"embedder": "minilm:float"})
    assert _index(config)[0] == 0
    assert "\n" not in message and "the embedding actors embed with model all-MiniLM-L6-v2-onnx-int8" in message
    assert '"minilm:float"' in message


def test_embedding_threads() -> None:
    """On one machine the actors share its cores (as the local executor embeds on all of them); on a cluster
    each embeds with the CPUs it reserves; the option wins."""
    assert embedding_threads(RayOptions(), cpus=16, nodes=1) == 16
    assert embedding_threads(RayOptions(embed_actors=3), cpus=16, nodes=1) == 5
    assert embedding_threads(RayOptions(embed_actors=2, cpus_per_actor=0.5), cpus=2, nodes=1) == 1
    assert embedding_threads(RayOptions(cpus_per_actor=4), cpus=64, nodes=4) == 4
    assert embedding_threads(RayOptions(threads_per_actor=3), cpus=64, nodes=1) == 3


def test_files_in_flight_stay_bounded(tmp_path: Path, ray_address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source of 2,000 files streams through the cluster with at most ``max_in_flight`` files submitted and not
    yet taken back at any moment (each ``ray.wait`` sees every file in flight): neither the driver nor the object
    store ever holds the whole source."""
    docs = tmp_path / "many"
    docs.mkdir()
    many = 2000
    for i in range(many):
        (docs / f"note-{i:04d}.md").write_text(f"# Note {i}\n\nBerth {i % 40} is free on day {i % 7}.\n")
    config = _agent(tmp_path, "many", docs, "{provider: sqlite, connection_string: many.sqlite}")
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    seen: list[int] = []
    wait = executor_module.ray.wait

    def counting_wait(refs: list[Any], **kwargs: Any) -> Any:
        seen.append(len(refs))
        return wait(refs, **kwargs)

    monkeypatch.setattr(executor_module.ray, "wait", counting_wait)
    tool = build_tool(load_agent_config(config).tools[0], base_dir=config.parent)
    assert isinstance(tool, SourceTool)
    try:
        report = tool.initialize_sync(executor=RayExecutor(RayOptions(max_in_flight=4)))
    finally:
        tool.close()
    assert len(report.ingested) == many and not report.failed
    assert len(seen) == many and max(seen) == 4  # the bound is reached and never passed


class TestRayExecutorKit(ExecutorTests):
    """The executor kit: a Ray run leaves the index a local run leaves, reruns nothing, follows edits and deletions."""

    @pytest.fixture
    def executor(self, ray_address: str) -> RayExecutor:
        return RayExecutor(RayOptions())
