"""How a search process reads the approximate index's files: the graph memory-mapped for random access, the
float32 matrix beside it read row by row, and a new graph's page cache left in single pages by its builder.

Why (measured at a million rows, docs/benchmarks.md, issue 30): since Linux 6.18 a fault on a file mapping
maps the whole page-cache folio holding the page, and a file just written (or read ahead) sits in the cache in
folios of up to 2 MB. A query that reads a few thousand scattered graph nodes and rescores ~124 matrix rows
then counts most of both files in its resident set. So the matrix rows a query rescores are read with
``pread`` (nothing mapped; a large filtered gather still goes through a mapping), the graph is mapped with
``MADV_RANDOM`` (no read-ahead: a page read from disk enters the cache alone), and the builder drops the
graph's large folios and reads it back under ``POSIX_FADV_RANDOM``, which leaves it cached page by page.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatRows = npt.NDArray[np.float32]

#: Gathers of up to this many rows read each row with ``pread``; larger ones (a filter's exact ranking) go
#: through a mapping of the file, where one fault serves neighbouring rows.
PREAD_ROWS = 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: Bytes read per call when a file is brought back into the page cache.
_RECACHE_READ = 1 << 20


def map_random(path: Path) -> mmap.mmap:
    """``path`` mapped read-only, advised for random access where the platform has ``madvise``."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        mapping = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
    if hasattr(mmap, "MADV_RANDOM"):  # not on Windows
        with contextlib.suppress(OSError):
            mapping.madvise(mmap.MADV_RANDOM)
    return mapping


class MatrixFile:
    """A float32 ``.npy`` matrix (C order) read by rows: ``pread`` for a few, a random-access mapping for many.

    Closed when collected, like the mapping of the graph beside it (a search in another thread may still hold it).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = -1
        self._mapped: FloatRows | None = None
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        try:
            with open(fd, "rb", buffering=0, closefd=False) as handle:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
                self._offset = handle.tell()
            if len(shape) != 2 or fortran or dtype != np.dtype("<f4"):
                raise ValueError(f"{path.name} is not a C-order float32 matrix")
            self.shape: tuple[int, int] = (int(shape[0]), int(shape[1]))
            self._width = 4 * self.shape[1]
            if os.fstat(fd).st_size < self._offset + self.shape[0] * self._width:
                raise ValueError(f"{path.name} is shorter than its header says")
            if hasattr(os, "posix_fadvise"):  # no read-ahead: a row read from disk enters the cache alone
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def take(self, positions: IntArray) -> FloatRows:
        """The rows at ``positions`` (each within the matrix), in that order."""
        if positions.size > PREAD_ROWS:
            return np.asarray(self._mapping()[positions])
        out = np.empty((positions.size, self.shape[1]), dtype=np.float32)
        view = out.reshape(-1).view(np.uint8).data
        width, offset = self._width, self._offset
        for i, position in enumerate(positions.tolist()):
            if _read_into(self._fd, view[i * width : (i + 1) * width], offset + position * width) != width:
                raise ValueError(f"{self.path.name} ended before row {position}")
        return out

    def _mapping(self) -> FloatRows:
        if self._mapped is None:
            buffer = map_random(self.path)
            self._mapped = np.ndarray(self.shape, dtype=np.float32, buffer=buffer, offset=self._offset)
        return self._mapped

    def __del__(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _read_into(fd: int, into: memoryview, offset: int) -> int:
    """Read ``len(into)`` bytes at ``offset`` into ``into`` (one ``preadv`` where there is one); bytes read."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [into], offset)
    os.lseek(fd, offset, os.SEEK_SET)  # pragma: no cover - Windows: no positional reads
    data = os.read(fd, len(into))  # pragma: no cover
    into[: len(data)] = data  # pragma: no cover
    return len(data)  # pragma: no cover


def recache_in_pages(path: Path) -> None:
    """Drop ``path``'s pages from the page cache and read it back without read-ahead (Linux: the cache then
    holds it page by page, so a mapping's fault maps a page and its few neighbours, not a 2 MB folio).
    Elsewhere, or on any error, nothing happens: the cache is only a cost, never the data."""
    if not hasattr(os, "posix_fadvise"):
        return
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        try:
            os.fsync(fd)  # dirty pages are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            size, at = os.fstat(fd).st_size, 0
            while at < size:
                got = len(os.pread(fd, _RECACHE_READ, at))
                if not got:
                    break
                at += got
        finally:
            os.close(fd)
