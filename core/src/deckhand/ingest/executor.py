"""Where an ingest's work runs: the executor extension point, and the builtin ``local`` executor.

Every executor runs one tool's ingest the same way at its two ends: :meth:`Ingestor.plan` decides
what changed (manifest, size and mtime, content hash, model) and :meth:`Ingestor.finish` removes
what is gone and maintains the store's indexes. In between, ``local`` loads, chunks, embeds and
writes in this process (:meth:`Ingestor.process`); a plugin's executor (``register.executor``) may
send each file elsewhere as a unit of work (a Ray cluster for ``deckhand-ai-ray``): converted there, then
embedded by a :class:`~deckhand.ingest.unit.FileWorker` built from the job's
:class:`~deckhand.ingest.unit.PipelineDescription` (plain data, never a tool), its records written all or
nothing by that worker or handed back to the one writer, :meth:`Ingestor.write`.

``deckhand ingest --executor NAME[:ADDRESS]`` picks one, else ``executor:`` in agent.yaml, else in the
global config, else ``local``; :func:`deckhand.building.executors.build_executor` builds the one chosen.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from deckhand.ingest.pipeline import Ingestor
from deckhand.ingest.sharding import Shard
from deckhand.ingest.unit import PipelineDescription
from deckhand.types import IngestReport

#: The executor used when none is configured (the in-process pipeline); agent.yaml's default names it
#: (:data:`deckhand.config.tool_fields.DEFAULT_EXECUTOR`, the same string).
LOCAL = "local"


@dataclass
class IngestJob:
    """One tool's ingest, as an executor receives it.

    ``ingestor`` is the driver's end, opened in this process: it plans the run (:meth:`Ingestor.plan`), is the
    one writer of the records workers hand back (:meth:`Ingestor.write`) and finishes the run
    (:meth:`Ingestor.finish`). ``pipeline`` describes the rest as plain data: a worker elsewhere builds its unit of
    work from it with :func:`deckhand.api.build_worker` (``PipelineDescription.to_dict``/``from_dict`` carry it).
    """

    ingestor: Ingestor
    source: Path
    force: bool
    shard: Shard | None
    pipeline: PipelineDescription


class ExecutorBase(ABC):
    """An executor (the kind's base class, in :mod:`deckhand.api`): runs the work of an :class:`IngestJob` between
    :meth:`Ingestor.plan` and :meth:`Ingestor.finish`, and returns the run's report (the same summary and exit codes
    whichever executor ran it). ``run`` is all it has, and all it must have.
    ``deckhand.testing.kits.ExecutorTests`` checks that its run ingests what ``local`` ingests."""

    @abstractmethod
    def run(self, job: IngestJob) -> IngestReport: ...


class LocalExecutor(ExecutorBase):
    """The builtin ``local`` executor: the in-process pipeline (reader thread, chunk worker processes)."""

    def run(self, job: IngestJob) -> IngestReport:
        return job.ingestor.run(job.source, force=job.force, shard=job.shard)

    @classmethod
    def from_options(cls, options: None) -> LocalExecutor:
        """The registered factory (``local`` takes no options)."""
        return cls()
