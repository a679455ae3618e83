"""The ``ray`` executor: an ingest's files read, chunked, embedded and written on a Ray cluster.

The driver (the ``deckhand ingest`` process) decides what changed as every executor does
(:meth:`deckhand.ingest.pipeline.Ingestor.plan`), then streams the files to change through the
cluster with at most ``max_in_flight`` of them at once (read, chunked, embedded or being written;
``ray.wait`` for the next to finish; each new file goes to the actor with the fewest), so neither
the driver nor the object store ever holds a whole source:

    file ──► convert_file (a CPU task: load + chunk) ──► EmbedWriter (an actor: embed + write) ──► result

A task whose worker process dies is run again (``max_retries``), an actor is restarted and its
call retried (``max_restarts``, ``max_task_retries``): a file's write is all or nothing and
idempotent, so a retried file ends as written once. A killed driver leaves every file either
written whole or not at all; the next run finds the written ones in the manifest and the embedded
chunks in the embedding cache. The progress line, the report and the exit codes are the local ones.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from typing import Any

import ray
from deckhand.api import (
    ConfigError,
    ExecutorBase,
    IngestJob,
    IngestReport,
    Plan,
    StoreCapability,
    has_capability,
    log_level,
    pickled_components,
    printable,
    replay,
)
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from deckhand_ray.cluster import connected
from deckhand_ray.options import RayOptions
from deckhand_ray.remote import ActorSetup, EmbedWriterActor, FileResult, convert_file

log = logging.getLogger("deckhand.ingest")

#: The driver's environment variables its actors get too (where state, caches and models live, which plugins load).
PASSED_ON = "DECKHAND_"
#: Files in flight per CPU of the cluster when ``max_in_flight`` is not set.
IN_FLIGHT_PER_CPU = 4
#: Hex digits of a node id the run's summary shows (as Ray's own tools shorten them).
NODE_ID_SHOWN = 8


class RayExecutor(ExecutorBase):
    """Runs an :class:`IngestJob`'s work on Ray (see the module docstring)."""

    def __init__(self, options: RayOptions) -> None:
        self.options = options

    def run(self, job: IngestJob) -> IngestReport:
        started = time.perf_counter()
        ingestor = job.ingestor
        plan = ingestor.plan(job.source, force=job.force, shard=job.shard)
        if plan.todo:
            with connected(self.options):
                _Run(job, plan, self.options).run()
        ingestor.finish(plan)
        plan.report.wall_seconds = time.perf_counter() - started
        return plan.report


class _Run:
    """One run's files streamed through the cluster."""

    def __init__(self, job: IngestJob, plan: Plan, options: RayOptions) -> None:
        self.job = job
        self.plan = plan
        self.options = options
        self.ingestor = job.ingestor
        #: The store takes writes from many processes: the actors write; else the driver does.
        self.workers_write = has_capability(self.ingestor.store, StoreCapability.CONCURRENT_PROCESSES)
        #: Files read and chunked, and files embedded, per node (told at the end with ``-v``).
        self.read_on: Counter[str] = Counter()
        self.embedded_on: Counter[str] = Counter()

    def run(self) -> None:
        try:
            payload = ray.put(pickled_components(self.ingestor.loaders, self.ingestor.chunker))
        except Exception as exc:
            raise ConfigError(
                f"tool {self.job.pipeline.tool!r}: its loaders or chunker cannot be sent to Ray workers ({exc}); "
                "ingest it with --executor local"
            ) from None
        actors = self._actors()
        reader = self.ingestor.reader()
        level = log_level()
        keep_text = self.job.pipeline.context is not None  # the actors run the context step on the text
        status = self.ingestor.status
        limit = self.options.max_in_flight or IN_FLIGHT_PER_CPU * max(int(ray.cluster_resources().get("CPU", 1)), 1)
        #: Each file in flight, and the actor embedding it.
        pending: dict[ray.ObjectRef[FileResult], int] = {}
        load = [0] * len(actors)
        files = iter(self.plan.todo)
        clock = time.perf_counter()
        self.ingestor.progress.stage("embedding", status.files_total)
        while True:
            while len(pending) < limit and (file := next(files, None)) is not None:
                state = self.plan.states[file.display]
                converted = convert_file.options(max_retries=self.options.max_retries).remote(
                    payload, level, file.path, file.display, reader.encoding_of(file), keep_text, self.plan.root
                )
                idlest = load.index(min(load))  # a large file keeps its actor busy: the next goes to another
                pending[actors[idlest].embed_file.remote(converted, file, state)] = idlest
                load[idlest] += 1
            if not pending:
                self._tell_nodes()
                return
            done, _ = ray.wait(list(pending), num_returns=1, timeout=self.options.file_timeout_s)
            if not done:
                raise TimeoutError(
                    f"executor ray: no file finished in {self.options.file_timeout_s:.0f}s "
                    "(raise file_timeout_s for very large files, or check the cluster)"
                )
            load[pending.pop(done[0])] -= 1
            result = self._result(done[0])
            self._take(result)
            status.embed_seconds = time.perf_counter() - clock  # the cluster's rate, all actors together
            self.ingestor.report_status()

    def _tell_nodes(self) -> None:
        """Log (at info, ``deckhand -v ingest``) the nodes the files were read and embedded on."""
        nodes = len(self.read_on | self.embedded_on)

        def each(counted: Counter[str]) -> str:
            return ", ".join(f"{node[:NODE_ID_SHOWN]} ({files})" for node, files in counted.most_common())

        log.info(
            "%s: ray: files ran on %d node(s): read and chunked on %s; embedded on %s",
            self.job.pipeline.tool, nodes, each(self.read_on), each(self.embedded_on),
        )  # fmt: skip

    def _actors(self) -> list[Any]:
        """The embedding actors, each reserving its CPUs (and a GPU where the cluster has one per actor)."""
        options = self.options
        gpus = options.num_gpus_per_actor
        if gpus is None:
            gpus = 1.0 if ray.cluster_resources().get("GPU", 0) >= options.embed_actors else 0.0
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus - options.embed_actors * options.cpus_per_actor < 1:
            raise ConfigError(
                f"executor ray: {options.embed_actors} embedding actor(s) of {options.cpus_per_actor:g} CPU leave "
                f"no CPU of the cluster's {cpus:g} to read and chunk files; lower embed_actors or cpus_per_actor"
            )
        environment = {k: v for k, v in os.environ.items() if k.startswith(PASSED_ON)}
        environment.setdefault("DECKHAND_THREADS", str(embedding_threads(options, cpus, len(ray.nodes()))))
        job = self.job
        setup = ActorSetup(job.pipeline.to_dict(), environment, self.workers_write)
        actors: list[Any] = [
            EmbedWriterActor.options(
                num_cpus=options.cpus_per_actor,
                num_gpus=gpus,
                max_restarts=options.max_retries,
                max_task_retries=options.max_retries,
            ).remote(setup)
            for _ in range(options.embed_actors)
        ]
        models: list[str] = self._get([a.ready.remote() for a in actors])
        ours = self.ingestor.embedder.model_id
        other = next((m for m in models if m != ours), None)
        if other is not None:
            # The default model runs int8 on a CPU and fp32 where onnxruntime-gpu is installed: a GPU node's
            # vectors would not be this index's.
            raise ConfigError(
                f"executor ray: tool {job.pipeline.tool!r}: the embedding actors embed with model {other}, this index "
                f'with {ours}; give the tool an embedding_model every node runs alike ("minilm:float", the '
                "default on a GPU, runs on CPUs too), or install the same onnxruntime package on every node"
            )
        return actors

    def _result(self, ref: ray.ObjectRef[FileResult]) -> FileResult:
        result: FileResult = self._get(ref)
        return result

    def _get(self, refs: Any) -> Any:
        """``ray.get`` with the deadline of one file; an error raised on the cluster is raised here as itself
        (a store outage stays a connection error: exit 1, the next run resumes)."""
        try:
            return ray.get(refs, timeout=self.options.file_timeout_s)
        except RayTaskError as exc:
            cause = exc.cause
            raise (cause if isinstance(cause, Exception) else exc.as_instanceof_cause()) from None
        except RayActorError:
            raise RuntimeError(
                f"executor ray: an embedding actor died more than max_retries ({self.options.max_retries}) times; "
                "the files written so far are kept: run the ingest again (raise max_retries, or check the "
                "cluster's memory and logs)"
            ) from None
        except GetTimeoutError:
            raise TimeoutError(
                f"executor ray: the cluster did not answer in {self.options.file_timeout_s:.0f}s "
                "(raise file_timeout_s, or check the cluster)"
            ) from None

    def _take(self, result: FileResult) -> None:
        """Log, count and (when the driver writes) store what the cluster made of one file."""
        report, display = self.plan.report, result.display
        converted = result.converted
        replay(converted.logged)
        for notice in converted.notices:
            log.warning("%s: %s", printable(display), notice)
        report.add_seconds("convert", converted.convert_seconds)
        report.add_seconds("chunk", converted.chunk_seconds)
        if result.failed is not None:
            report.fail(display, result.failed)
        elif result.empty:
            report.skip(display, "empty file")
            self.ingestor.store.delete_source(display)  # it was emptied: its old chunks are stale
        merge(report, result.report)
        if result.records is not None:
            self.ingestor.write(display, self.plan.states[display], result.records, report)
        status = self.ingestor.status
        status.chunks += result.chunks
        status.embedded += result.chunks
        self.read_on[result.read_on] += 1
        self.embedded_on[result.embedded_on] += 1
        self.ingestor.file_done(self.plan.states[display].size)


def embedding_threads(options: RayOptions, cpus: float, nodes: int) -> int:
    """Threads each actor embeds with: ``threads_per_actor``; else, on one machine, its cores shared between the
    actors (reading and chunking take little beside them: the local executor embeds on every core too);
    on a cluster, the CPUs the actor reserves."""
    if options.threads_per_actor is not None:
        return options.threads_per_actor
    if nodes == 1:
        return max(1, int(cpus // options.embed_actors))
    return max(1, int(options.cpus_per_actor))


def merge(into: IngestReport, part: IngestReport) -> None:
    """Add what a worker reported about its files to the run's report."""
    into.ingested.extend(part.ingested)
    into.failed.extend(part.failed)
    into.skipped.extend(part.skipped)
    into.chunks_written += part.chunks_written
    into.texts_embedded += part.texts_embedded
    if part.tokens_used is not None:
        into.tokens_used = (into.tokens_used or 0) + part.tokens_used
    for stage, seconds in part.seconds.items():
        into.add_seconds(stage, seconds)
