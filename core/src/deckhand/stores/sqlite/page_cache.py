"""How a search process reads the float32 matrix beside the approximate index: a few rows with ``pread``,
many through a random-access mapping, and the matrix left in the page cache page by page by its builder.

Why (measured at a million rows, docs/benchmarks.md, issue 30): since Linux 6.18 a fault on a file mapping
maps the whole page-cache folio holding the page, and a file just written (or read ahead) sits in the cache in
folios of up to 2 MB. Rescoring ~124 scattered rows through a mapping then counted ~90 MB of the matrix in a
one-query process's resident set, and a filter's exact ranking of 10,000 rows 431 MB. Rows read with
``pread`` count nothing; and a matrix cached page by page (:func:`recache_in_pages`, after the build) maps
a page and its fault-around neighbours (64 KB) per fault: 77 MB for the same 10,000 rows.

The graph file itself is mapped by usearch, whose opening reads every node's header (at a million nodes the
~270 MB of neighbour lists, all of them resident from then on, where a query needs a few thousand):
:func:`release_mapping` unmaps what the opening touched and advises the mapping for random access. A warm
process's queries then map most of the file back (each fault maps 64 KB around the page it needs):
:class:`MappingBudget` unmaps it again past ``ann_mapped_mb``, for a searcher whose resident set must stay bounded.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import cast

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
        into = out.reshape(-1).view(np.uint8).data
        width, offset, fd, read_into = self._width, self._offset, self._fd, _READ_INTO
        # Straight into the result (one copy, from the page cache): the rows pass through the CPU's caches
        # once, beside the graph the next query walks.
        for i, position in enumerate(positions.tolist()):
            if read_into(fd, into[i * width : (i + 1) * width], offset + position * width) != width:
                raise ValueError(f"{self.path.name} ended before row {position}")
        return out

    def block(self, start: int, stop: int, buffer: FloatRows) -> FloatRows:
        """Rows ``start`` to ``stop - 1`` read with one ``pread`` into ``buffer`` (at least that many rows; reused
        by a scan, so a scan's resident set is one block whatever the matrix's size)."""
        out = buffer[: stop - start]
        size = (stop - start) * self._width
        into = out.reshape(-1).view(np.uint8).data
        at = 0
        while at < size:
            got = _READ_INTO(self._fd, into[at:size], self._offset + start * self._width + at)
            if got <= 0:
                raise ValueError(f"{self.path.name} ended before row {stop - 1}")
            at += got
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


def _preadv(fd: int, into: memoryview, offset: int) -> int:
    return os.preadv(fd, [into], offset)


def _seek_and_read(fd: int, into: memoryview, offset: int) -> int:  # pragma: no cover - Windows: no os.preadv
    os.lseek(fd, offset, os.SEEK_SET)
    data = os.read(fd, len(into))
    into[: len(data)] = data
    return len(data)


#: Read into a buffer from a file at an offset; the bytes read (fewer at the file's end).
_READ_INTO: Callable[[int, memoryview, int], int] = _preadv if hasattr(os, "preadv") else _seek_and_read


def mappings_of(path: Path) -> set[tuple[int, int]]:
    """Address ranges (start, end) of this process's mappings of ``path``, from ``/proc/self/maps`` (Linux;
    elsewhere, or on any error, none)."""
    if not sys.platform.startswith("linux"):
        return set()
    wanted = os.path.realpath(path)
    found = set()
    with contextlib.suppress(OSError), open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.rstrip("\n").split(maxsplit=5)
            if len(fields) == 6 and fields[5] == wanted:
                start, end = fields[0].split("-")
                found.add((int(start, 16), int(end, 16)))
    return found


def release_mapping(ranges: Iterable[tuple[int, int]]) -> None:
    """Advise these read-only file mappings for random access (no read-ahead: a page read from disk enters the
    cache alone) and unmap their resident pages (they stay in the page cache; a later access maps them again).

    Only for a mapping the caller owns and keeps mapped meanwhile, never written: on a writable or anonymous
    mapping ``MADV_DONTNEED`` discards data. Where ``madvise`` is missing, or on any error, nothing happens.
    """
    advise = _madvise()
    if advise is None:
        return
    for start, end in ranges:
        for advice in (mmap.MADV_RANDOM, mmap.MADV_DONTNEED):
            advise(start, end - start, advice)


def file_resident() -> int | None:
    """Bytes of file-backed (and shared) memory resident in this process (``/proc/self/statm``'s third field, a
    read of a few dozen bytes); None where there is no such file."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[2]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


class MappingBudget:
    """Holds the resident pages of read-only file mappings within ``budget`` bytes: :meth:`check`, called after
    each search, unmaps them (:func:`release_mapping`; they stay in the page cache) once the process's resident
    file-backed memory has grown by more than ``budget`` since they were last unmapped. The growth is the
    process's, so pages of other files mapped meanwhile count too: the budget errs towards releasing early.

    ``budget`` 0, no ranges, or a platform without ``/proc/self/statm``: nothing is ever released.
    """

    def __init__(self, ranges: Iterable[tuple[int, int]], budget: int) -> None:
        self.ranges = frozenset(ranges)
        self.budget = budget
        #: Times the pages were unmapped (for tests and benchmarks).
        self.releases = 0
        self._floor = file_resident() if budget > 0 and self.ranges else None

    def check(self) -> bool:
        """Unmap the ranges' pages if the budget is spent; True when they were."""
        if self._floor is None:
            return False
        now = file_resident()
        if now is None or now - self._floor <= self.budget:
            return False
        release_mapping(self.ranges)
        self.releases += 1
        self._floor = file_resident()
        return True


_PAGE = mmap.PAGESIZE


@functools.cache
def _madvise() -> Callable[[int, int, int], int] | None:
    if not (sys.platform.startswith("linux") and hasattr(mmap, "MADV_DONTNEED") and hasattr(mmap, "MADV_RANDOM")):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return cast(Callable[[int, int, int], int], function)


def recache_in_pages(path: Path) -> None:
    """Drop ``path``'s pages from the page cache and read it back without read-ahead (Linux: the cache then
    holds it page by page, so a mapping's fault maps a page and its fault-around neighbours, not a 2 MB folio).
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
