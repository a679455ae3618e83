"""The code loader: source files read as they are, with core's encoding detection (or the tool's ``encoding:``)."""

from __future__ import annotations

from pathlib import Path

from deckhand.api import SCRIPT, LoaderBase, LoaderError, decode_text, read_source_bytes

from deckhand_code.languages import EXTENSIONS


class CodeLoader(LoaderBase):
    """Reads the source files of the languages the ``code`` chunker parses (``.py``, ``.ts``, ``.go``, ...) and
    scripts without an extension (``#!/usr/bin/env python3``, ``#!/bin/bash``: :data:`SCRIPT`).

    The text is the file's own, so results show the lines a chunk spans (``verbatim``)."""

    extensions = EXTENSIONS | {SCRIPT}
    priority = 0
    verbatim = True

    def load(self, path: Path) -> str:
        try:
            data = read_source_bytes(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        return decode_text(data, path)
