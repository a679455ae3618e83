"""The ``memory`` backend: decisions in a dict of this process, for tests and ephemeral agents."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from deckhand.bases import MemoryBackendBase
from deckhand.memory.backend import ScanEntry, SyncResult, sync_message
from deckhand.memory.coordinates import VectorCoordinate

_ids = itertools.count(1)


class InMemoryBackend(MemoryBackendBase):
    """Keeps serialized decisions in memory only; ``sync()`` reports (and forgets) what changed."""

    persistent = False

    @classmethod
    def from_options(cls, path: Path | None, options: None = None) -> InMemoryBackend:
        """The ``memory`` backend's registered factory (:class:`deckhand.registration.MemoryBackendFactory`)."""
        return cls(path)

    def __init__(self, path: Path | str | None = None, **options: Any) -> None:
        if options:
            raise TypeError(f"the memory backend takes no options, got {', '.join(sorted(options))}")
        self.location = f"memory://{next(_ids)}"
        self._data: dict[VectorCoordinate, bytes] = {}
        self._synced: dict[VectorCoordinate, bytes] = {}
        self._lock = threading.Lock()

    def locate(self, coordinate: VectorCoordinate) -> str:
        return f"{self.location}/{coordinate.to_path().as_posix()}"

    def scan(self) -> Iterator[ScanEntry]:
        with self._lock:
            items = list(self._data.items())
        for coord, data in items:
            yield ScanEntry(self.locate(coord), coord, data)

    def read(self, coordinate: VectorCoordinate) -> bytes | None:
        with self._lock:
            return self._data.get(coordinate)

    def write(self, coordinate: VectorCoordinate, data: bytes, *, create_only: bool) -> bool:
        with self._lock:
            if create_only and coordinate in self._data:
                return False
            self._data[coordinate] = bytes(data)
            return True

    def sync(self, message: str | None = None) -> SyncResult:
        with self._lock:
            changed = tuple(sorted(c for c, d in self._data.items() if self._synced.get(c) != d))
            deleted = tuple(sorted(c for c in self._synced if c not in self._data))
            self._synced = dict(self._data)
        if not changed and not deleted:
            return SyncResult(None, "")
        return SyncResult(None, sync_message(changed, deleted, message), changed, deleted)

    def close(self) -> None:
        """Nothing to release."""
