"""A container's parts (a mail's attachments, its HTML body) handed to the loaders of their types.

The part is written to a private temporary folder under a safe name (its own name comes from the mail:
untrusted, so only its last component, printable, is kept) and loaded by the run's loaders
(:func:`deckhand.ingest.loader_set.current_loaders`) confined to that folder; its places (a PDF's pages)
come back with it. Containers nest at most :data:`MAX_DEPTH` deep (a mail attached to a mail attached to ...).
"""

from __future__ import annotations

import re
import tempfile
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deckhand.api import LoaderError, confined_to, current_loaders

#: Containers inside containers read at most this deep; deeper parts are named, not read.
MAX_DEPTH = 3
#: Longest part name kept.
MAX_NAME = 120

_depth: ContextVar[int] = ContextVar("deckhand_ocr_part_depth", default=0)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\:]+")


@dataclass
class Part:
    """What a part gave: its text and places (``None`` when it was not read), or why it was not read."""

    name: str
    text: str = ""
    places: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    problem: str | None = None


def safe_name(name: str | None, fallback: str) -> str:
    """The part's name as a file name: its last path component, without control characters or separators."""
    raw = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = _UNSAFE.sub("_", raw).strip().lstrip(".")
    if len(cleaned) > MAX_NAME:
        stem, dot, suffix = cleaned.rpartition(".")
        cleaned = (
            (stem[: MAX_NAME - len(suffix) - 1] + dot + suffix) if dot and len(suffix) < 12 else cleaned[:MAX_NAME]
        )
    return cleaned or fallback


def read_part(name: str, data: bytes) -> Part:
    """Load ``data`` (a file called ``name``) with the loader of its type, as the file being loaded would be."""
    loaders = current_loaders()
    suffix = Path(name).suffix.lower()
    if loaders is None or suffix not in loaders.extensions:
        return Part(name, problem=f"not read: no loader for {suffix or 'files without an extension'}")
    depth = _depth.get()
    if depth >= MAX_DEPTH:
        return Part(name, problem=f"not read: nested more than {MAX_DEPTH} deep")
    token = _depth.set(depth + 1)
    try:
        with tempfile.TemporaryDirectory(prefix="deckhand-part-") as folder:
            path = Path(folder) / name
            path.write_bytes(data)
            try:
                with confined_to(Path(folder), None):
                    loaded = loaders.load_with_metadata(path)
            except LoaderError as exc:
                return Part(name, problem=str(exc).replace(str(path), name).removeprefix(f"{name}: "))
            except Exception as exc:  # a loader's own bug: this part is not read, the container is
                return Part(name, problem=f"loader failed ({type(exc).__name__}: {exc})")
    finally:
        _depth.reset(token)
    return Part(name, loaded.text, list(loaded.places))
