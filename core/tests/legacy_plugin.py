"""A plugin written against the registration API before typed registration (``register_<kind>s(register)``).

Kept unchanged on purpose: ``test_plugins_legacy.py`` checks that such a plugin still loads, works and
warns for at least one release after the typed :class:`deckhand.registration.Registrar` replaced it.
Do not migrate it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deckhand.hookspecs import Register, hookimpl
from deckhand.protocols import NativeKeywordSearch
from pydantic import BaseModel, ConfigDict

#: What each factory was called with, for the test to read.
CALLS: list[tuple[str, Any]] = []


class NoteLoader:
    extensions = frozenset({".note"})
    priority = 0

    def load(self, path: Path) -> str:
        return path.read_text().replace("%", "")


class LinesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lines: int = 3


class NotesStoreOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    shelf: str = "top"


def lines_chunker(tokenizer: Any, lines: int = 3) -> Any:
    CALLS.append(("chunker", {"tokenizer": tokenizer, "lines": lines}))
    return "a chunker"


def notes_store(config: Any, collection: str, *, base_dir: Any = None) -> Any:
    from deckhand.stores.inmemory import InMemoryStore

    CALLS.append(("store", {"collection": collection, "options": dict(config.options), "base_dir": base_dir}))
    return InMemoryStore(collection)


def substring_strategy(store: Any, cache_path: Any = None) -> Any:
    CALLS.append(("keyword_strategy", {"store": store, "cache_path": cache_path}))
    return "a keyword index"


def notes_embedder(model: str | None = None, **options: Any) -> Any:
    CALLS.append(("embedder", {"model": model, **options}))
    return "an embedder"


def notes_memory(path: Any = None, **options: Any) -> Any:
    CALLS.append(("memory_backend", {"path": path, **options}))
    return "a memory backend"


@hookimpl
def register_loaders(register: Register) -> None:
    register("note", NoteLoader, description="field notes, % dropped", extensions=[".note"])


@hookimpl
def register_stores(register: Register) -> None:
    register(
        "notes-memory",
        notes_store,
        description="legacy test store",
        options=NotesStoreOptions,
        url_schemes=("notes://",),
        uses_base_dir=True,
    )


@hookimpl
def register_chunkers(register: Register) -> None:
    register("lines", lines_chunker, description="groups of lines", options=LinesOptions)


@hookimpl
def register_keyword_strategies(register: Register) -> None:
    register("substring", substring_strategy, description="needs full text", requires=(NativeKeywordSearch,))


@hookimpl
def register_embedders(register: Register) -> None:
    register("notes-embedder", notes_embedder, model_id="notes/v1", dimension=8, max_tokens=64)


@hookimpl
def register_memory_backends(register: Register) -> None:
    register("notes-memory", notes_memory, description="raw options as keyword arguments")
