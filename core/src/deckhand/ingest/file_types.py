"""Which loader reads a file: the one registered for its extension, or, for a file without one that starts with
``#!``, the one registered for :data:`SCRIPT`."""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from pathlib import Path

#: The "extension" of a script: a file without one whose first line is ``#!interpreter``.
SCRIPT = "#!"

#: Extensions no builtin loader reads that one of deckhand's extras does: the skip line names the extra.
EXTRA_FOR_EXTENSION = {
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp"), "ocr"),
    **dict.fromkeys((".eml", ".mbox", ".msg"), "ocr"),
}

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def file_type(path: Path, extensions: Collection[str]) -> str:
    """``path``'s extension (lower case, with its dot); for a file without one, :data:`SCRIPT` when a loader
    reads scripts (``SCRIPT in extensions``) and the file starts with ``#!``, else ``""``."""
    suffix = path.suffix.lower()
    if suffix or SCRIPT not in extensions or path.name.startswith("."):
        return suffix
    return SCRIPT if is_script(path) else ""


def is_script(path: Path) -> bool:
    """Whether ``path`` is a regular file starting with ``#!`` (a link is not followed, a FIFO not waited on)."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 2) == b"#!"
    except OSError:
        return False
    finally:
        os.close(fd)


def unsupported(suffix: str) -> str:
    """Why a file of type ``suffix`` is skipped: ``unsupported file type .png``, with the command that installs the
    extra reading it where deckhand has one (scanned images and mail: ``deckhand-ai[ocr]``)."""
    reason = f"unsupported file type {suffix or '(none)'}"
    extra = EXTRA_FOR_EXTENSION.get(suffix.lower())
    if extra is None:
        return reason
    from deckhand.install_hints import DISTRIBUTION, install_command

    command = install_command(f"{DISTRIBUTION}[{extra}]")
    return f"{reason} (the {extra} plugin reads it: {command}, and the tool's loaders: [{extra}])"


def empty_reason(suffix: str, builtin: bool) -> str:
    """Why a file whose loader found no text is skipped: ``empty file``; for a PDF read by the builtin loader, also
    that scanned pages need OCR and the command that installs it."""
    if suffix.lower() != ".pdf" or not builtin:
        return "empty file"
    from deckhand.install_hints import DISTRIBUTION, install_command

    command = install_command(f"{DISTRIBUTION}[ocr]")
    return f"empty file (no text layer: scanned pages need the ocr plugin: {command}, and the tool's loaders: [ocr])"
