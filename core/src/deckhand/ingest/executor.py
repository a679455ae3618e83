"""Where an ingest's work runs: the executor extension point (``register.executor``), and the builtin ``local``
executor, which loads, chunks, embeds and writes in this process between the ingestor's plan and finish."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from deckhand.ingest.pipeline import Ingestor
from deckhand.ingest.sharding import Shard
from deckhand.ingest.unit import PipelineDescription
from deckhand.types import IngestReport

#: The executor used when none is configured (:data:`deckhand.config.tool_fields.DEFAULT_EXECUTOR`, the same string).
LOCAL = "local"


@dataclass
class IngestJob:
    """One tool's ingest, as an executor receives it: ``ingestor``, the driver's end in this process (it plans,
    is the one writer of records workers hand back, and finishes), and ``pipeline``, the rest as plain data a
    worker elsewhere builds its unit of work from (:func:`deckhand.api.build_worker`)."""

    ingestor: Ingestor
    source: Path
    force: bool
    shard: Shard | None
    pipeline: PipelineDescription


class ExecutorBase(ABC):
    """An executor (the kind's base class): ``run`` does an :class:`IngestJob`'s work and returns the run's report
    (``deckhand.testing.kits.ExecutorTests`` checks it ingests what ``local`` does)."""

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
