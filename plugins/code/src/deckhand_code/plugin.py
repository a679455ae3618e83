"""Registers the ``code`` loader and the ``code`` chunker (entry point ``code``)."""

from __future__ import annotations

from deckhand.api import Registrar, hookimpl

from deckhand_code.chunker import CodeChunker, CodeChunkerOptions
from deckhand_code.loader import CodeLoader


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.loader(
        "code",
        CodeLoader,
        description="source files (Python, JS/TS, Go, Rust, Java, C/C++, shell) and #! scripts, as written",
    )
    register.chunker(
        "code",
        CodeChunker.from_options,
        description="syntax-aware (tree-sitter): functions, classes and methods as chunks, with symbol paths",
        options=CodeChunkerOptions,
    )
