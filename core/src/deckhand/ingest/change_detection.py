"""Which files an ingest must (re)process: size and mtime first, then the content hash."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from deckhand.bases import EmbedderBase, StoreBase
from deckhand.ingest.discovery import SourceFile
from deckhand.ingest.opening import open_source_file
from deckhand.ingest.report import format_size
from deckhand.types import FileState, IngestReport


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_source_file(path) as fh:  # (never through a link swapped in since the walk)
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def changed_states(
    files: Iterable[SourceFile],
    manifest: Mapping[str, FileState],
    *,
    force: bool,
    store: StoreBase,
    embedder: EmbedderBase,
    max_file_size: int | None,
    report: IngestReport,
) -> dict[str, FileState]:
    """The new manifest state of each of ``files`` that must be (re)ingested, by display path, in order."""

    states: dict[str, FileState] = {}
    model = embedder.model_id
    limit = max_file_size if max_file_size is not None else float("inf")
    unchanged = report.unchanged
    for file in files:
        known = manifest.get(file.display)
        try:
            stat = os.stat(file.location)  # (a string: no pathlib object for each unchanged file)
        except OSError as exc:
            report.fail(file.display, f"cannot stat ({exc.strerror or exc})")
            continue
        if (
            not force
            and known is not None
            and known.mtime == stat.st_mtime
            and known.size == stat.st_size
            and known.model == model
            and stat.st_size <= limit
        ):
            unchanged.append(file.display)
            continue
        state = _changed_state(
            file, known, stat, force=force, store=store, embedder=embedder, max_file_size=max_file_size, report=report
        )
        if state is not None:
            states[file.display] = state
    return states


def _changed_state(
    file: SourceFile,
    known: FileState | None,
    stat: os.stat_result,
    *,
    force: bool,
    store: StoreBase,
    embedder: EmbedderBase,
    max_file_size: int | None,
    report: IngestReport,
) -> FileState | None:
    """The new manifest state if ``file`` (``stat``: taken now) must be (re)ingested, else None: a file over
    ``max_file_size`` has its old chunks deleted, and a touched one whose hash is unchanged its entry refreshed."""
    if max_file_size is not None and stat.st_size > max_file_size:
        report.skip(
            file.display,
            f"{format_size(stat.st_size)} is over max_file_size ({format_size(max_file_size)}); "
            "raise the tool's max_file_size to ingest it",
            "over max_file_size",
        )
        if known is not None:
            store.delete_source(file.display)  # its old chunks no longer match the file
        return None
    model = embedder.model_id
    same_model = known is not None and known.model == model
    try:
        digest = file_sha256(file.path)
    except OSError as exc:
        report.fail(file.display, f"cannot read ({exc.strerror or exc})")
        return None
    if not force and same_model and known is not None and known.sha256 == digest:
        store.set_file_state(FileState(file.display, stat.st_mtime, stat.st_size, digest, model, known.chunk_count))
        report.unchanged.append(file.display)
        return None
    return FileState(file.display, stat.st_mtime, stat.st_size, digest, model, 0)
