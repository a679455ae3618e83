"""Chunks per second of ``deckhand ingest``: the local executor against the ray executor with 1 and 2 embedding
actors, on one machine, into the default sqlite store, with a cold embedding cache each run; and, with
``--llamaindex N ...``, LlamaIndex's ``IngestionPipeline(num_workers=N)`` on the same corpus and model.

One local Ray (``--cpus`` CPUs, no dashboard) is started first and its start timed apart; each run then
builds the tool and ingests the whole corpus (``--force-ingest``), the Ray runs' actors loading the model
as part of the run, as the local run loads it. Each LlamaIndex run is a fresh process: ``SimpleDirectoryReader``
-> ``SentenceSplitter(512, 50)`` (deckhand's default chunks are 512 tokens, 50 shared) -> deckhand's own default
model behind LlamaIndex's embedding class (``llamaindex_minilm.py``: same weights, runtime and precision, loaded
in each worker, ``--cpus`` // N threads each) -> ``SimpleVectorStore`` (in memory; deckhand writes its sqlite file).
Prints one JSON line per run, with the ratio of each run's chunks/s to the local executor's and its peak memory
(``peak_rss_mb``: the most the RSS of this process and all its descendants, Ray's servers and workers included,
added up at any 0.1 s sample of the run). With ``--own-ray`` no Ray is started first: each run, local or Ray, is
a fresh process, and each Ray run starts and stops its own Ray, as a new user's ``deckhand ingest --executor ray``
does; its memory is sampled from outside (``peak_rss_mb`` and ``peak_pss_mb``, the proportional set size that
counts a page shared by several processes once in all) and split between ours (``ours_*``: the driver, the
embedding actors, the workers that read and chunk, the watcher) and Ray's own servers and agents (``ray_own_*``:
GCS, raylet, dashboard, monitors, agents). ``--orphans`` starts ``deckhand ingest --executor ray`` (a local Ray of
its own), kills it with ``kill -9`` once a third of the files are written, and counts the processes it had started
that are still running 1, 5, 10, 30 and 60 s later. ``--order`` runs ``local``, ``ray-N`` and ``llamaindex-N`` in the
order given (one Ray started first), each compared with the next local run (else the last one before). Usage::

    python benchmarks/ray_bench.py --chunks 2000 --files 200 --cpus 2
    python benchmarks/ray_bench.py --chunks 600 --files 60 --cpus 2 --actors 1 --own-ray
    python benchmarks/ray_bench.py --chunks 600 --files 60 --orphans
    python benchmarks/ray_bench.py --chunks 600 --files 60 --cpus 2 --order ray-2 ray-1 local llamaindex-1
    nox -s bench-llamaindex -- --chunks 2000 --files 200 --cpus 2 --llamaindex 1 2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_corpus import chunks as synthetic_chunks


def make_corpus(root: Path, chunks: int, files: int) -> None:
    """``files`` markdown files holding ``chunks`` texts of about 200 words between them."""
    texts = synthetic_chunks(chunks, words_per_chunk=200, seed=7)
    per_file = max(1, len(texts) // files)
    root.mkdir(parents=True, exist_ok=True)
    for n, start in enumerate(range(0, len(texts), per_file)):
        body = "\n\n".join(f"## Part {i}\n\n{t}" for i, t in enumerate(texts[start : start + per_file]))
        (root / f"doc-{n:05d}.md").write_text(f"# Document {n}\n\n{body}\n")


@contextmanager
def peak_rss() -> Iterator[dict[str, Any]]:
    """Inside the block, the most RSS (MB) this process and its descendants held together, sampled every 0.1 s, and
    how it was shared between them by process name at that moment."""
    import psutil

    me = psutil.Process()
    found: dict[str, Any] = {"peak_rss_mb": 0.0}
    stop = threading.Event()

    def sample() -> None:
        while True:
            total, parts = 0, Counter[str]()
            for process in [me, *me.children(recursive=True)]:
                try:
                    rss = process.memory_info().rss
                    name = "driver" if process.pid == me.pid else _named(process.cmdline() or [process.name()])
                except psutil.Error:
                    continue
                total += rss
                parts[name] += rss
            if total / 1e6 > found["peak_rss_mb"]:
                found["peak_rss_mb"] = total / 1e6
                found["at_peak_mb"] = {k: round(v / 1e6) for k, v in parts.most_common()}
            if stop.wait(0.1):
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield found
    finally:
        stop.set()
        sampler.join()
        found["peak_rss_mb"] = round(found["peak_rss_mb"], 1)


def _named(command: list[str]) -> str:
    """A process's name for the breakdown: Ray's title (``ray::EmbedWriter``), else its program and, for Python,
    its script or module."""
    program = Path(command[0].split()[0]).name
    arguments = [a for a in command[1:] if a not in ("-u", "-B", "-E", "-s")]
    if program.startswith("python") and arguments:
        script = arguments[1] if arguments[0] == "-m" and len(arguments) > 1 else arguments[0]
        return f"{program} {Path(script).name}"[:48]
    return program[:48]


#: Ray's own servers and agents, by the name :func:`_named` gives them (everything else in a Ray run is ours).
RAY_OWN = ("gcs_server", "raylet", "ray::DashboardAgent", "ray::RuntimeEnvAgent")
RAY_OWN_SCRIPTS = ("dashboard.py", "monitor.py", "log_monitor.py")


def _ray_own(name: str) -> bool:
    return name in RAY_OWN or (name.startswith("python") and name.split()[-1] in RAY_OWN_SCRIPTS)


def tree_memory(root: int, found: dict[str, Any], stop: threading.Event) -> None:
    """Sample, every 0.1 s until ``stop``, the RSS and PSS of ``root`` and its descendants; keep in ``found`` the
    peaks (MB), ours and Ray's own at the RSS peak, and the breakdown by process name there."""
    import psutil

    found.update(peak_rss_mb=0.0, peak_pss_mb=0.0)
    try:
        top = psutil.Process(root)
    except psutil.Error:
        return
    while not stop.wait(0.1):
        try:
            processes = [top, *top.children(recursive=True)]
        except psutil.Error:
            return
        rss = pss = own_rss = own_pss = 0
        parts: Counter[str] = Counter()
        for process in processes:
            try:
                memory = process.memory_full_info()
                name = "driver" if process.pid == root else _named(process.cmdline() or [process.name()])
            except psutil.Error:
                continue
            rss, pss = rss + memory.rss, pss + memory.pss
            parts[name] += memory.rss
            if _ray_own(name):
                own_rss, own_pss = own_rss + memory.rss, own_pss + memory.pss
        found["peak_pss_mb"] = max(found["peak_pss_mb"], round(pss / 1e6, 1))
        if rss / 1e6 > found["peak_rss_mb"]:
            found["peak_rss_mb"] = round(rss / 1e6, 1)
            found["ours_rss_mb"], found["ray_own_rss_mb"] = round((rss - own_rss) / 1e6), round(own_rss / 1e6)
            found["ours_pss_mb"], found["ray_own_pss_mb"] = round((pss - own_pss) / 1e6), round(own_pss / 1e6)
            found["at_peak_mb"] = {k: round(v / 1e6) for k, v in parts.most_common()}


def isolated(work: Path, corpus: Path, label: str, actors: int, cpus: int) -> dict[str, Any]:
    """One run (``local`` or ``ray-N``) in a fresh process, its memory sampled from outside (see the docstring)."""
    command = [sys.executable, __file__, "--one-run", label, "--work", str(work), "--corpus", str(corpus)]
    child = subprocess.Popen(
        [*command, "--actors", str(actors), "--cpus", str(cpus)], stdout=subprocess.PIPE, text=True
    )
    found: dict[str, Any] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=tree_memory, args=(child.pid, found, stop), daemon=True)
    sampler.start()
    out, _ = child.communicate(timeout=3600)
    stop.set()
    sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"run {label} failed (exit {child.returncode})")
    run: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    run.pop("at_peak_mb", None)
    return {**run, **found}


def one_run(work: Path, corpus: Path, label: str, actors: int, cpus: int) -> dict[str, Any]:
    """The run :func:`isolated` asked this fresh process for."""
    from deckhand.ingest.executor import LocalExecutor

    if label == "local":
        return ingest(work, corpus, label, LocalExecutor())
    from deckhand_ray.executor import RayExecutor
    from deckhand_ray.options import RayOptions

    per_actor = min(1.0, (cpus - 1) / actors)
    options = RayOptions(embed_actors=actors, cpus_per_actor=per_actor, num_cpus=cpus)
    return ingest(work, corpus, label, RayExecutor(options))


def orphans(work: Path, corpus: Path) -> dict[str, Any]:
    """``kill -9`` of a ``deckhand ingest --executor ray`` a third of the way through; its processes left after."""
    import psutil

    root = work / "orphans"
    root.mkdir()
    config = root / "agent.yaml"
    config.write_text(
        f"tools:\n  - type: vectorstore\n    name: kb\n    source: {corpus}\n"
        "    database: {provider: sqlite, connection_string: kb.sqlite}\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS",)}
    env.update(DECKHAND_HOME=str(root / "home"), DECKHAND_PROGRESS_INTERVAL="0")
    deckhand = str(Path(sys.executable).parent / "deckhand")
    driver = subprocess.Popen(
        [deckhand, "-c", str(config), "ingest", "--executor", "ray", "--force-ingest"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    assert driver.stderr is not None
    files = len(list(corpus.iterdir()))
    for line in driver.stderr:
        done = re.search(r"(\d+)/\d+ files", line)
        if done and int(done.group(1)) >= files // 3:
            break
    started = psutil.Process(driver.pid).children(recursive=True)
    names = {p.pid: _named(p.cmdline() or [p.name()]) for p in started}
    driver.kill()
    killed = time.monotonic()
    driver.wait(30)
    left: dict[str, list[str]] = {}
    for after in (1, 5, 10, 30, 60):
        time.sleep(max(0.0, killed + after - time.monotonic()))
        alive = [p for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        left[f"{after}s"] = sorted(names[p.pid] for p in alive)
    for process in started:  # leave nothing to the next run
        if process.is_running():
            process.kill()
    return {"orphans": "kill -9 of the driver", "files": files, "started": sorted(names.values()), "left": left}


def ingest(work: Path, corpus: Path, label: str, executor: Any) -> dict[str, Any]:
    """Ingest ``corpus`` into a new sqlite index with a cold embedding cache; the run's figures."""
    from deckhand.building.lazy_embedders import forget_embedders
    from deckhand.config.loading import load_agent_config
    from deckhand.tools import build_tool

    root = work / label
    root.mkdir()
    config = root / "agent.yaml"
    config.write_text(
        f"tools:\n  - type: vectorstore\n    name: kb\n    source: {corpus}\n"
        "    database: {provider: sqlite, connection_string: kb.sqlite}\n"
    )
    os.environ["DECKHAND_HOME"] = str(root / "home")
    forget_embedders()
    tool = build_tool(load_agent_config(config).tools[0], base_dir=root)
    clock = time.perf_counter()
    with peak_rss() as memory:
        try:
            report = tool.initialize_sync(True, executor=executor)  # type: ignore[call-arg]
        finally:
            tool.close()
    seconds = time.perf_counter() - clock
    return {
        "executor": label,
        "files": len(report.ingested),
        "chunks": report.chunks_written,
        "embedded": report.texts_embedded,
        "seconds": round(seconds, 2),
        "chunks_per_s": round(report.chunks_written / seconds, 1),
        "load_1min": round(os.getloadavg()[0], 1),
        **memory,
        "stage_seconds": {stage: round(t, 1) for stage, t in report.seconds.items()},
    }


def llamaindex(corpus: Path, workers: int, cpus: int) -> dict[str, Any]:
    """One LlamaIndex ingest of ``corpus`` with ``num_workers=workers`` (in this process: a fresh one)."""
    from llama_index.core import SimpleDirectoryReader
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.vector_stores import SimpleVectorStore
    from llamaindex_minilm import DeckhandMiniLM

    os.environ["DECKHAND_THREADS"] = str(max(1, cpus // workers))  # spawned workers inherit it
    # The splitter's tokenizer is rebuilt in each spawned worker, where LlamaIndex does not point tiktoken at the
    # encodings it ships (it does so only around its own first load): without this a worker asks the network for
    # them, fails, and the pool waits forever for the lost batch.
    import llama_index.core

    bundled = Path(llama_index.core.__file__).parent / "_static" / "tiktoken_cache"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))
    clock = time.perf_counter()
    documents = SimpleDirectoryReader(str(corpus)).load_data()
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=512, chunk_overlap=50), DeckhandMiniLM()],
        vector_store=SimpleVectorStore(),
    )
    nodes = pipeline.run(documents=documents, num_workers=workers)
    seconds = time.perf_counter() - clock
    assert all(n.embedding is not None for n in nodes)
    return {
        "executor": f"llamaindex-{workers}",
        "files": len(documents),
        "chunks": len(nodes),
        "seconds": round(seconds, 2),
        "chunks_per_s": round(len(nodes) / seconds, 1),
        "load_1min": round(os.getloadavg()[0], 1),
    }


def in_order(work: Path, corpus: Path, order: list[str], cpus: int) -> list[dict[str, Any]]:
    """Runs ``local``, ``ray-N`` and ``llamaindex-N`` in ``order`` (one Ray of ``cpus`` started first where a ``ray-N``
    is among them), each with ``ratio_to_local``: its chunks/s over the next local run's, else the last one's before."""
    import ray
    from deckhand.ingest.executor import LocalExecutor
    from deckhand_ray.executor import RayExecutor
    from deckhand_ray.options import RayOptions

    if any(name.startswith("ray-") for name in order):
        ray.init(
            address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False,
            logging_level=logging.WARNING, _node_ip_address="127.0.0.1",
        )  # fmt: skip
    runs: list[dict[str, Any]] = []
    try:
        for n, name in enumerate(order, 1):
            kind, _, count = name.partition("-")
            if kind == "llamaindex":
                command = [sys.executable, __file__, "--llamaindex-run", str(corpus), "--llamaindex", count]
                out = subprocess.run(
                    [*command, "--cpus", str(cpus)], capture_output=True, text=True, check=True, timeout=3600
                )
                run = json.loads(out.stdout.strip().splitlines()[-1])
            elif kind == "ray":
                per_actor = min(1.0, (cpus - 1) / int(count))
                options = RayOptions(embed_actors=int(count), cpus_per_actor=per_actor)
                run = ingest(work, corpus, f"{n}-{name}", RayExecutor(options))
            elif name == "local":
                run = ingest(work, corpus, f"{n}-{name}", LocalExecutor())
            else:
                raise SystemExit(f"--order: {name!r} is not local, ray-N or llamaindex-N")
            runs.append({"order": n, **run, "executor": name})
    finally:
        if ray.is_initialized():
            ray.shutdown()
    locals_ = [run for run in runs if run["executor"] == "local"]
    for run in runs:
        after = [r for r in locals_ if r["order"] > run["order"]]
        before = [r for r in locals_ if r["order"] < run["order"]]
        base = run if run["executor"] == "local" else (after[:1] or before[-1:] or [None])[0]
        if base is not None:
            run["ratio_to_local"] = round(run["chunks_per_s"] / base["chunks_per_s"], 2)
            run["local_of"] = base["order"]
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2], help="embedding actors of each Ray run")
    parser.add_argument("--llamaindex", type=int, nargs="*", default=[], help="num_workers of each LlamaIndex run")
    parser.add_argument("--own-ray", action="store_true", help="each Ray run starts its own Ray (memory of all Ray)")
    parser.add_argument("--orphans", action="store_true", help="processes left after kill -9 of a Ray ingest")
    parser.add_argument("--order", nargs="+", help="these runs in this order: local, ray-N, llamaindex-N")
    parser.add_argument("--llamaindex-run", type=Path, help=argparse.SUPPRESS)  # one run, in a fresh process
    parser.add_argument("--one-run", help=argparse.SUPPRESS)  # one --own-ray run, in a fresh process
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.llamaindex_run is not None:
        print(json.dumps(llamaindex(args.llamaindex_run, args.llamaindex[0], args.cpus)), flush=True)
        return
    if args.one_run is not None:
        print(json.dumps(one_run(args.work, args.corpus, args.one_run, args.actors[0], args.cpus)), flush=True)
        return

    import ray
    from deckhand.ingest.executor import LocalExecutor
    from deckhand_ray.executor import RayExecutor
    from deckhand_ray.options import RayOptions

    with tempfile.TemporaryDirectory(prefix="deckhand-ray-bench-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        make_corpus(corpus, args.chunks, args.files)
        if args.orphans:
            print(json.dumps(orphans(work, corpus)), flush=True)
            return
        if args.order:
            for run in in_order(work, corpus, args.order, args.cpus):
                print(json.dumps(run), flush=True)
            return
        if args.own_ray:
            local = isolated(work, corpus, "local", 1, args.cpus)
        else:
            local = ingest(work, corpus, "local", LocalExecutor())
        print(json.dumps(local), flush=True)

        def show(run: dict[str, Any]) -> None:
            run["ratio_to_local"] = round(run["chunks_per_s"] / local["chunks_per_s"], 2)
            if "peak_rss_mb" in run:
                run["memory_to_local"] = round(run["peak_rss_mb"] / local["peak_rss_mb"], 2)
            print(json.dumps(run), flush=True)

        for workers in args.llamaindex:
            command = [sys.executable, __file__, "--llamaindex-run", str(corpus), "--llamaindex", str(workers)]
            out = subprocess.run(
                [*command, "--cpus", str(args.cpus)], capture_output=True, text=True, check=True, timeout=3600
            )
            show(json.loads(out.stdout.strip().splitlines()[-1]))
        clock = time.perf_counter()
        if args.own_ray:
            for actors in args.actors:
                run = isolated(work, corpus, f"ray-{actors}", actors, args.cpus)
                run["pss_to_local"] = round(run["peak_pss_mb"] / local["peak_pss_mb"], 2)
                run["ours_pss_to_local"] = round(run["ours_pss_mb"] / local["peak_pss_mb"], 2)
                show(run)
            return
        ray.init(
            address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
            logging_level=logging.WARNING, _node_ip_address="127.0.0.1",
        )  # fmt: skip
        print(json.dumps({"ray_start_seconds": round(time.perf_counter() - clock, 2), "cpus": args.cpus}), flush=True)
        try:
            for actors in args.actors:
                # Each actor embeds with the CPUs it reserves; at least one CPU is left to read and chunk.
                per_actor = min(1.0, (args.cpus - 1) / actors)
                options = RayOptions(embed_actors=actors, cpus_per_actor=per_actor)
                show(ingest(work, corpus, f"ray-{actors}", RayExecutor(options)))
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
