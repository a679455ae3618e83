"""Copying a tool's index to another store without embedding anything again (``deckhand migrate``): records and
manifest through the :class:`~deckhand.bases.StoreBase` methods; side indexes are rebuilt by the target."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from deckhand.bases import EmbedderBase, StoreBase
from deckhand.capabilities import StoreCapability, index_maintenance, store_capabilities
from deckhand.errors import ConfigError, ModelMismatchError, StoreAuthenticationError, StoreConnectionError, StoreError
from deckhand.redaction import redact_url
from deckhand.stores.sqlite import SQLiteStore
from deckhand.stores.tool_store import ingest_started, is_complete, mark_complete
from deckhand.types import Algorithm, CollectionSpec, FileState, Metric, Record, record_id

log = logging.getLogger("deckhand")

#: Records read and written per step unless the caller says otherwise.
DEFAULT_BATCH = 1000


@dataclass(frozen=True)
class MigrationEnd:
    """One end of a migration, as plain settings: tool ``name``'s index of the files under ``source``, in the store
    ``build`` builds (not opened) for ``provider`` with its resolved database's settings."""

    name: str
    #: The tool's source, absolute; and the directory its configuration is in (file names are relative to it).
    source: Path
    base_dir: Path
    #: Where the tool is configured, for messages (the configuration file).
    label: str
    #: The tool's embedder, only described (model id and dimension): the collection is created for it.
    embedder: EmbedderBase
    provider: str
    build: Callable[[], StoreBase]
    metric: Metric
    algorithm: Algorithm
    index_name: str | None = None
    connection_string: str | None = None


@dataclass
class MigrationStatus:
    """How far a migration is: passed to the progress callback after every batch."""

    sources_total: int
    sources_done: int = 0
    records: int = 0


@dataclass
class MigrationReport:
    """What a migration did."""

    tool: str
    target_tool: str
    source_provider: str
    target_provider: str
    #: Records and files written by this run.
    records: int = 0
    sources: int = 0
    #: Files the target already had exactly as the source has them (a migration run again).
    already: int = 0
    #: Records the target holds at the end.
    target_count: int = 0
    #: Whether the target collection was dropped first (``--replace``).
    replaced: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """The final line: what was copied, how fast, and that nothing was embedded."""
        line = (
            f"migrated {self.records:,} records from {self.sources:,} sources in {self.seconds:.1f} s "
            "(no embeddings computed)"
        )
        if self.already:
            line += f"; {self.already:,} sources were already there"
        return line

    def as_json(self) -> dict[str, object]:
        return {
            "tool": self.tool,
            "target_tool": self.target_tool,
            "from": self.source_provider,
            "to": self.target_provider,
            "records": self.records,
            "sources": self.sources,
            "already": self.already,
            "target_count": self.target_count,
            "replaced": self.replaced,
            "seconds": round(self.seconds, 3),
            "embeddings_computed": 0,
        }


@dataclass
class _Side:
    """A store built for one end (not yet opened)."""

    store: StoreBase
    end: MigrationEnd

    def where(self) -> str:
        """The store as messages name it: the provider, and its redacted URL or file when it has one."""
        path = _file_of(self.store)
        location = str(path) if path is not None else redact_url(self.end.connection_string)
        return f"{self.end.provider} ({location})" if location else self.end.provider


def migrate(
    source: MigrationEnd,
    target: MigrationEnd,
    *,
    batch_size: int = DEFAULT_BATCH,
    replace: bool = False,
    progress: Callable[[MigrationStatus], None] | None = None,
) -> MigrationReport:
    """Copy ``source``'s index into ``target``'s store, a file at a time (records and manifest entry in one
    ``replace_source``, so an interrupted run never claims a file it lacks), skipping files the target holds alike.

    Refused with one line: different files at the two ends, the same collection, an in-memory target, no source
    index, another model or dimension, an unreachable store, and, without ``replace`` (which drops the target
    collection first), a target holding other files or built for another model or layout.
    """
    if batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1 (got {batch_size})")
    _check_same_files(source, target)
    clock = time.perf_counter()
    src = _build(source)
    dst = _build(target)
    if _same_collection(src, source, dst, target):
        raise ConfigError(
            f"tool {source.name!r} of {source.label} and tool {target.name!r} of {target.label} use the "
            f"same collection in {dst.where()}: nothing to migrate; point the target tool's database: at another store"
        )
    if StoreCapability.PERSISTENT not in store_capabilities(dst.store):
        raise ConfigError(
            f"tool {target.name!r} of {target.label}: the {target.provider} store keeps nothing after the command "
            "ends; migrate to a persistent store (sqlite, postgres, redis, weaviate, ...)"
        )
    report = MigrationReport(source.name, target.name, source.provider, target.provider)
    with _closing(src.store), _closing(dst.store):
        built = _open_source(src, source)
        spec = _spec(target)
        if (built.embedding_model, built.dimension) != (spec.embedding_model, spec.dimension):
            raise ModelMismatchError(
                f"cannot migrate tool {source.name!r}: its index holds vectors of embedding model "
                f"{built.embedding_model!r} ({built.dimension} dims) but tool {target.name!r} of {target.label} "
                f"embeds with {spec.embedding_model!r} ({spec.dimension} dims); give it the same embedding_model "
                "(or ingest into the new store with `deckhand ingest`, which embeds again)"
            )
        report.replaced = _open_target(dst, target, spec, replace=replace)
        manifest = src.store.manifest()
        if not replace:
            _check_target_holds_only(dst, target, manifest, src.store.count())
        _copy(src.store, dst.store, manifest, batch_size, report, progress)
        if is_complete(src.store):  # a source ingestion that was cut short stays marked unfinished
            mark_complete(dst.store, ingest_started(src.store))
        maintained = index_maintenance(dst.store)
        if maintained is not None:
            done = maintained.maintain()
            if done:
                log.info("%s", done)
        report.target_count = dst.store.count()
        expected = src.store.count()
        if report.target_count != expected:
            raise StoreError(
                f"tool {target.name!r}: the target holds {report.target_count:,} records after the copy but the "
                f"source {expected:,} (was the source ingested into meanwhile?); run `deckhand migrate` again"
            )
    report.seconds = time.perf_counter() - clock
    return report


# -- checks -------------------------------------------------------------------------------


def _check_same_files(source: MigrationEnd, target: MigrationEnd) -> None:
    """Both tools index the same files under the same names, else the copied manifest would not describe the
    target tool's files (a later ingest through it would remove every file and ingest them all again)."""
    if source.base_dir.resolve() != target.base_dir.resolve():
        raise ConfigError(
            f"{target.label} is in {target.base_dir} but {source.label} in {source.base_dir}: an index names its "
            "files relative to its configuration's directory; put the new configuration beside the old one"
        )
    old, new = source.source, target.source
    if old != new:
        raise ConfigError(
            f"tool {target.name!r} of {target.label} indexes {new} but tool {source.name!r} of "
            f"{source.label} indexes {old}: the index describes those files; give both the same source:"
        )


def _same_collection(src: _Side, source: MigrationEnd, dst: _Side, target: MigrationEnd) -> bool:
    """Whether both ends name one collection: the same file (stores keeping one) or the same server settings."""
    if source.name != target.name or source.provider != target.provider:
        return False
    if source.index_name != target.index_name:
        return False
    paths = _file_of(src.store), _file_of(dst.store)
    if paths[0] is not None and paths[1] is not None:
        return Path(paths[0]).resolve() == Path(paths[1]).resolve()
    return source.connection_string == target.connection_string


def _check_target_holds_only(
    dst: _Side, target: MigrationEnd, manifest: dict[str, FileState], source_count: int
) -> None:
    """Without ``--replace``, the target may hold only what an earlier run of this migration wrote."""
    held = dst.store.manifest()
    foreign = sorted(set(held) - set(manifest))
    extra = dst.store.count() - sum(state.chunk_count for state in held.values())
    allowed = max(0, source_count - sum(state.chunk_count for state in manifest.values()))
    if foreign or extra > allowed:
        what = f"{len(foreign):,} files the source does not have (e.g. {foreign[0]})" if foreign else "other records"
        raise ConfigError(
            f"tool {target.name!r} of {target.label}: the target collection in {dst.where()} already holds "
            f"{what}; pass --replace to drop it first"
        )


# -- opening ----------------------------------------------------------------------------------


def _file_of(store: StoreBase) -> Path | None:
    """The file a store keeps its collection in (the sqlite store's), for messages and the same-index check."""
    return store.path if isinstance(store, SQLiteStore) else None


def _build(end: MigrationEnd) -> _Side:
    """``end``'s store built (not opened)."""
    where = f"{end.provider} ({redact_url(end.connection_string)})" if end.connection_string else end.provider
    with _reaching(end, where):  # a server store may connect when it is built
        return _Side(end.build(), end)


def _spec(end: MigrationEnd) -> CollectionSpec:
    """The collection ``end``'s tool opens: its embedder described, its database's metric and algorithm."""
    embedder = end.embedder
    return CollectionSpec(
        name=end.name,
        dimension=embedder.dimension,
        embedding_model=embedder.model_id,
        metric=end.metric,
        algorithm=end.algorithm,
    )


def _open_source(src: _Side, source: MigrationEnd) -> CollectionSpec:
    """Open the source collection; the spec it was built with (it may differ from what the config says now)."""
    nothing = ConfigError(
        f"tool {source.name!r} of {source.label} has no index in {src.where()}: nothing to migrate "
        "(`deckhand ingest` builds it)"
    )
    path = _file_of(src.store)
    if path is not None and not Path(path).exists():
        raise nothing  # a store keeping a file: checked without creating it
    previous = _open(src, source, _spec(source))
    if previous is None:
        with contextlib.suppress(Exception):  # opening created it: leave the store as it was
            src.store.drop()
        raise nothing
    if src.store.count() == 0 and not src.store.manifest():
        raise nothing
    return previous


def _open_target(dst: _Side, target: MigrationEnd, spec: CollectionSpec, *, replace: bool) -> bool:
    """Open (create) the target collection; True if ``replace`` dropped one (another model or layout is refused)."""
    previous = _open(dst, target, spec)
    if previous is None:
        return False
    if replace:
        dst.store.drop()
        dst.store.open(spec)
        return True
    changed = [
        f"{label} {old} (the configuration says {new})"
        for label, old, new in (
            ("embedding model", previous.embedding_model, spec.embedding_model),
            ("dimension", previous.dimension, spec.dimension),
            ("distance_metric", previous.metric.value, spec.metric.value),
            ("vector_algorithm", previous.algorithm.value, spec.algorithm.value),
        )
        if old != new
    ]
    if changed:
        raise ModelMismatchError(
            f"tool {target.name!r} of {target.label}: the target collection in {dst.where()} was created with "
            f"{'; '.join(changed)}; pass --replace to drop it first"
        )
    return False


def _open(side: _Side, end: MigrationEnd, spec: CollectionSpec) -> CollectionSpec | None:
    """``side.store.open(spec)``, an unreachable server turned into one line naming the store (URL redacted)."""
    with _reaching(end, side.where()):
        return side.store.open(spec)


@contextlib.contextmanager
def _reaching(end: MigrationEnd, where: str) -> Iterator[None]:
    """An unreachable server (or refused credentials) inside the block as one line naming ``end``'s tool and
    configuration and the store ``where`` (URLs redacted): never a fallback to another store."""
    try:
        yield
    except StoreAuthenticationError as exc:
        raise StoreAuthenticationError(f"tool {end.name!r} of {end.label}: {redact_url(str(exc))}") from None
    except (ConnectionError, TimeoutError) as exc:
        detail = redact_url(str(exc))
        said = where.partition(" (")[2].rstrip(")")  # the URL, when the driver's message names it already
        reach = "" if said and said in detail else f"cannot reach {where}: "
        raise StoreConnectionError(f"tool {end.name!r} of {end.label}: {reach}{detail}") from None


@contextlib.contextmanager
def _closing(store: StoreBase) -> Iterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            store.close()


# -- copying ----------------------------------------------------------------------------------


def _copy(
    src: StoreBase,
    dst: StoreBase,
    manifest: dict[str, FileState],
    batch_size: int,
    report: MigrationReport,
    progress: Callable[[MigrationStatus], None] | None,
) -> None:
    """Copy every file (records and manifest entry, one ``replace_source`` each), then records no entry describes."""
    held = dst.manifest()
    todo = [s for s in sorted(manifest) if held.get(s) != manifest[s]]
    report.already = len(manifest) - len(todo)
    status = MigrationStatus(sources_total=len(manifest), sources_done=report.already)
    if progress is not None:
        progress(status)
    leftover: list[str] = []
    for group in _groups(todo, manifest, batch_size):
        ids = [record_id(s, i) for s in group for i in range(manifest[s].chunk_count)]
        by_source: dict[str, list[Record]] = {s: [] for s in group}
        for record in src.get(ids) if ids else []:
            if record.source in by_source:
                by_source[record.source].append(record)
        for source in group:
            records = by_source[source]
            if len(records) != manifest[source].chunk_count:
                leftover.append(source)  # not found by the conventional ids: taken from the full pass below
                continue
            _write(dst, source, records, manifest[source], report)
            status.sources_done += 1
            status.records = report.records
        if progress is not None:
            progress(status)
    described = sum(state.chunk_count for state in manifest.values())
    if leftover or src.count() != described:
        _copy_by_scan(src, dst, manifest, set(leftover), batch_size, report)
        status.sources_done += len(leftover)
        status.records = report.records
        if progress is not None:
            progress(status)


def _groups(todo: list[str], manifest: dict[str, FileState], batch_size: int) -> Iterator[list[str]]:
    """``todo`` in groups of whole files of about ``batch_size`` records (a bigger file is a group of its own)."""
    group: list[str] = []
    size = 0
    for source in todo:
        chunks = manifest[source].chunk_count
        if group and size + chunks > batch_size:
            yield group
            group, size = [], 0
        group.append(source)
        size += chunks
    if group:
        yield group


def _write(dst: StoreBase, source: str, records: list[Record], state: FileState, report: MigrationReport) -> None:
    """One file into the target: its records and manifest entry together (all or nothing)."""
    records.sort(key=lambda r: r.chunk_index)
    if records:
        dst.replace_source(source, records, state)
    else:
        dst.delete_source(source)  # no chunks (an empty file): the entry alone, without stale records
        dst.set_file_state(state)
    report.records += len(records)
    report.sources += 1


def _copy_by_scan(
    src: StoreBase,
    dst: StoreBase,
    manifest: dict[str, FileState],
    leftover: set[str],
    batch_size: int,
    report: MigrationReport,
) -> None:
    """One pass over every source record: the ``leftover`` files' records (each file then written whole), and
    records of no manifest entry (upserted in batches, as the source holds them: without an entry)."""
    grouped: dict[str, list[Record]] = {s: [] for s in leftover}
    loose: list[Record] = []
    for record in src.iter_records(batch_size):
        if record.source in grouped:
            grouped[record.source].append(record)
        elif record.source not in manifest:
            loose.append(record)
            if len(loose) >= batch_size:
                dst.upsert(loose)
                report.records += len(loose)
                loose = []
    if loose:
        dst.upsert(loose)
        report.records += len(loose)
    for source in sorted(grouped):
        _write(dst, source, grouped[source], manifest[source], report)
