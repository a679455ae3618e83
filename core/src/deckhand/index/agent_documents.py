"""Documents an agent adds to a tool (``deckhand_add``): stored in the tool's collection under sources of their own
namespace, ``deckhand-agent://<tool>/<id>``, which an ingest's sweep skips and a rebuild keeps."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckhand.bases import ChunkerBase, EmbedderBase, StoreBase
from deckhand.filters.spec import PATH_KEY, TYPE_KEY
from deckhand.ingest.lines import with_start_lines
from deckhand.ingest.opening import confined_to, read_source_bytes
from deckhand.ingest.pipeline import AGENT_SOURCE_PREFIX
from deckhand.types import DERIVED_METADATA_KEYS, Chunk, Document, FileState, Record, SearchResult, record_id

log = logging.getLogger("deckhand")

#: The scheme of an agent document's source name and URI.
AGENT_SCHEME = "deckhand-agent"
AGENT_PREFIX = AGENT_SOURCE_PREFIX
#: The ``file_type`` of an agent document's chunks (``filter: {type: agent}`` selects them).
AGENT_TYPE = "agent"
#: The metadata key of the first chunk that keeps the document's whole text.
TEXT_KEY = "agent_text"
#: The metadata key of the document's title (every chunk).
TITLE_KEY = "title"
#: Metadata keys deckhand sets itself, refused in an agent's fields so none can pass for provenance.
RESERVED_KEYS = DERIVED_METADATA_KEYS | frozenset(SearchResult.model_fields) | {PATH_KEY, TYPE_KEY, TEXT_KEY, TITLE_KEY}
#: What a document id may be, as a whole (``fullmatch``: ``$`` would match before a final newline).
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

Prepare = Callable[[Document, list[Chunk]], list[Chunk]]


@dataclass(frozen=True)
class AgentDocument:
    """An agent-added document as the listing and ``resources/list`` show it."""

    tool: str
    id: str
    chunks: int
    size: int
    added: float
    title: str = ""
    text: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def uri(self) -> str:
        return agent_uri(self.tool, self.id)


def agent_uri(tool: str, doc_id: str) -> str:
    """The source name and URI of tool ``tool``'s document ``doc_id``."""
    return f"{AGENT_PREFIX}{tool}/{doc_id}"


def is_agent_source(source: str) -> bool:
    """Whether a stored source name is an agent document's (not a file of the source)."""
    return source.startswith(AGENT_PREFIX)


def parse_agent_uri(uri: str) -> tuple[str, str]:
    """``(tool, id)`` of an agent document URI (a ``#L`` fragment is left to the caller); ValueError otherwise."""
    if not uri.startswith(AGENT_PREFIX):
        raise ValueError(f"not a {AGENT_PREFIX} URI")
    tool, _, doc_id = uri[len(AGENT_PREFIX) :].partition("/")
    if not tool or not ID_PATTERN.fullmatch(doc_id):
        raise ValueError(f"expected {AGENT_PREFIX}<tool>/<id>")
    return tool, doc_id


def write_document(
    *,
    tool: str,
    store: StoreBase,
    embedder: EmbedderBase,
    chunker: ChunkerBase,
    prepare: Prepare | None,
    doc_id: str,
    title: str,
    text: str,
    metadata: Mapping[str, Any],
    added: float | None = None,
) -> AgentDocument:
    """Chunk, contextualise (``prepare``), embed and store one document, replacing one of the same id."""
    source = agent_uri(tool, doc_id)
    fields: dict[str, Any] = {**metadata, TITLE_KEY: title, PATH_KEY: source, TYPE_KEY: AGENT_TYPE}
    document = Document(source=source, text=text, title=title, metadata=fields)
    chunks = [
        Chunk(c.source, c.index, c.content, c.embed_text, {**fields, **c.metadata, **_own(source)})
        for c in with_start_lines(text, chunker.chunk(document))
    ]
    if not chunks:  # a chunker that makes nothing of a short text: the text is the one chunk
        chunks = [Chunk(source, 0, text, None, dict(fields))]
    if prepare is not None:
        chunks = prepare(document, chunks)
    vectors = embedder.embed([c.text_for_embedding for c in chunks])
    records = [
        Record(record_id(source, i), source, i, c.content, vectors[i], dict(c.metadata)) for i, c in enumerate(chunks)
    ]
    records[0].metadata[TEXT_KEY] = text
    stamp = time.time() if added is None else added
    encoded = text.encode("utf-8")
    state = FileState(
        source=source,
        mtime=stamp,
        size=len(encoded),
        sha256=hashlib.sha256(encoded).hexdigest(),
        model=embedder.model_id,
        chunk_count=len(records),
    )
    store.replace_source(source, records, state)
    return AgentDocument(tool, doc_id, len(records), len(encoded), stamp, title, text, dict(metadata))


def _own(source: str) -> dict[str, Any]:
    return {PATH_KEY: source, TYPE_KEY: AGENT_TYPE}


def listed(tool: str, manifest: Mapping[str, FileState]) -> list[AgentDocument]:
    """Tool ``tool``'s agent documents named in ``manifest``, oldest first (no titles: see :func:`read_document`)."""
    found = []
    for source, state in manifest.items():
        if not is_agent_source(source):
            continue
        try:
            owner, doc_id = parse_agent_uri(source)
        except ValueError:
            continue
        if owner == tool:
            found.append(AgentDocument(tool, doc_id, state.chunk_count, state.size, state.mtime))
    found.sort(key=lambda d: (d.added, d.id))
    return found


def read_document(tool: str, store: StoreBase, doc_id: str) -> AgentDocument | None:
    """Tool ``tool``'s document ``doc_id`` with its title, text and metadata; None when there is none."""
    source = agent_uri(tool, doc_id)
    state = store.manifest().get(source)
    if state is None:
        return None
    got = store.get([record_id(source, 0)])
    if not got:
        return None
    meta = dict(got[0].metadata)
    text = meta.pop(TEXT_KEY, None)
    title = meta.get(TITLE_KEY, "")
    fields = {k: v for k, v in meta.items() if k not in RESERVED_KEYS}
    return AgentDocument(
        tool,
        doc_id,
        state.chunk_count,
        state.size,
        state.mtime,
        title if isinstance(title, str) else "",
        text if isinstance(text, str) else got[0].content,
        fields,
    )


def kept_documents(tool: str, store: StoreBase) -> list[AgentDocument]:
    """Every agent document of ``store`` with its text: what a rebuild must write again after its drop."""
    out = []
    for listed_doc in listed(tool, store.manifest()):
        doc = read_document(tool, store, listed_doc.id)
        if doc is not None:
            out.append(doc)
    return out


def pending_path(state: Path, tool: str) -> Path:
    """Where a rebuild keeps ``tool``'s agent documents between its drop and their write into the new index."""
    return state / "rebuild-pending" / f"{hashlib.sha256(tool.encode()).hexdigest()[:16]}.json"


def save_pending(path: Path, docs: list[AgentDocument]) -> None:
    """Write ``docs`` to ``path`` atomically (owner-only) before a rebuild drops them, so a process killed in
    between loses none (:func:`load_pending`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)  # one a killed run left; a link put there is removed, never written through
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump([dataclasses.asdict(doc) for doc in docs], handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def load_pending(path: Path) -> list[AgentDocument]:
    """The agent documents an interrupted rebuild left at ``path`` (none without such a file; a link or anything
    but a regular file is left alone, with a warning)."""
    try:
        with confined_to(path.parent):
            raw = json.loads(read_source_bytes(path))
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("%s: not read (%s); a rebuild's journal is a regular file", path, exc.strerror or exc)
        return []
    return [AgentDocument(**entry) for entry in raw]
