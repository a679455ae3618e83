"""The files of a source an ingest reads and how, as plain settings: :class:`SourceFiles` (a tool maps its
configuration to it); it builds the :class:`~deckhand.ingest.pipeline.Ingestor` of an ingest into a store, and
tells what changed under the source since the ingest that store holds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from deckhand.ingest.freshness import SourceChanges, source_changes
from deckhand.ingest.pipeline import Ingestor, LoaderSet, Progress
from deckhand.ingest.selection import Selection
from deckhand.protocols import Chunker, Embedder, VectorStore
from deckhand.stores.tool_store import ingest_started
from deckhand.types import Chunk, Document


@dataclass(frozen=True)
class SourceFiles:
    """Source ``path`` (absolute), the files of it ``selection`` takes, read by ``loaders`` with ``encoding`` up to
    ``max_file_size`` bytes (None: no limit); display paths are relative to ``base_dir``."""

    path: Path
    base_dir: Path
    loaders: LoaderSet
    selection: Selection
    encoding: str | Mapping[str, str]
    max_file_size: int | None

    def ingestor(
        self,
        store: VectorStore,
        embedder: Embedder,
        chunker: Chunker,
        *,
        progress: Progress | None,
        prepare: Callable[[Document, list[Chunk]], list[Chunk]] | None,
    ) -> Ingestor:
        """The ingestor of these files into ``store``, with ``prepare`` between chunking and embedding."""
        return Ingestor(
            store=store,
            embedder=embedder,
            chunker=chunker,
            loaders=self.loaders,
            base_dir=self.base_dir,
            progress=progress,
            prepare=prepare,
            encoding=self.encoding,
            max_file_size=self.max_file_size,
            selection=self.selection,
        )

    def changes(self, store: VectorStore) -> SourceChanges:
        """Which files were added, edited or deleted since the ingest ``store`` holds (no file is read: a walk and
        one ``stat`` each, :func:`deckhand.ingest.freshness.source_changes`)."""
        return source_changes(
            self.path,
            self.loaders.extensions,
            store.manifest(),
            base=self.base_dir,
            selection=self.selection,
            max_file_size=self.max_file_size,
            ingested_at=ingest_started(store),
        )
