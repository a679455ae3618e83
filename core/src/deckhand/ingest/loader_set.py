"""The loaders of one run: the registered loader picked for each file extension."""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from deckhand.bases import LoaderBase
from deckhand.ingest.file_types import file_type
from deckhand.ingest.loaders import LoaderSettings, loading_with
from deckhand.registration import BUILTIN
from deckhand.types import LoadedText

if TYPE_CHECKING:
    from deckhand.plugins import Component, PluginRegistry

_current: ContextVar[LoaderSet | None] = ContextVar("deckhand_loader_set", default=None)


class LoaderSet:
    """Picks the loader for each extension: the highest ``priority`` wins, then the one given last; a script
    without an extension goes to the loader of ``#!``. Loaders read ``settings`` while this set loads a file."""

    def __init__(self, loaders: Iterable[LoaderBase], settings: LoaderSettings | None = None) -> None:
        self.by_extension: dict[str, LoaderBase] = {}
        self.settings = settings or LoaderSettings()
        for loader in loaders:
            for ext in loader.extensions:
                current = self.by_extension.get(ext)
                if current is None or loader.priority >= current.priority:
                    self.by_extension[ext] = loader

    @classmethod
    def from_registry(
        cls, registry: PluginRegistry, chosen: Iterable[Component] = (), settings: LoaderSettings | None = None
    ) -> LoaderSet:
        """deckhand's own loaders and the plugin loaders ``chosen`` by the tool, reading with ``settings``; for an
        extension several claim, the highest ``priority``, then a plugin's, then the first plugin by name wins."""
        own = [c for c in registry.of_plugin("loader", BUILTIN)]
        plugins = sorted((c for c in chosen if not c.builtin), key=lambda c: (c.plugin, c.name), reverse=True)
        return cls((component.create() for component in [*own, *plugins]), settings)

    @property
    def extensions(self) -> frozenset[str]:
        return frozenset(self.by_extension)

    def load(self, path: Path) -> str:
        """The file's text."""
        return self.load_with_metadata(path).text

    def load_with_metadata(self, path: Path) -> LoadedText:
        """The file's text and its loader's metadata; meanwhile :func:`current_loaders` is this set (for containers)."""
        token = _current.set(self)
        try:
            with loading_with(self.settings):
                loaded = self.by_extension[file_type(path, self.by_extension)].load(path)
        finally:
            _current.reset(token)
        if isinstance(loaded, LoadedText):
            return loaded
        return LoadedText(loaded)

    def verbatim(self, path: Path) -> bool:
        """Whether the loader of ``path`` returns the file's own text, so offsets are places in the file."""
        loader = self.by_extension.get(file_type(path, self.by_extension))
        return loader is not None and loader.verbatim


def current_loaders() -> LoaderSet | None:
    """The :class:`LoaderSet` loading the file being loaded (None outside a load)."""
    return _current.get()
