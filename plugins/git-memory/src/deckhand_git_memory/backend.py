"""``GitMemoryBackend``: decisions as JSON files under ``.vector-memory/``, committed by ``sync()``.

``sync()`` commits only ``.vector-memory/``, without touching the user's index while it builds
the commit: it asks git which memory files differ from ``HEAD``, writes one commit of ``HEAD``
plus exactly those files with ``git fast-import`` (into a private ref), moves ``HEAD`` only if
nobody else moved it meanwhile, then refreshes just the ``.vector-memory`` entries of the user's
index. Whatever else the user has staged or changed stays exactly as it was.
"""

from __future__ import annotations

import logging
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

from deckhand.api import (
    MEMORY_DIR,
    ConcurrencyError,
    MemoryBackendBase,
    ScanEntry,
    StorageError,
    SyncResult,
    VectorCoordinate,
    decision_problem,
    sync_message,
)
from filelock import FileLock, Timeout

from deckhand_git_memory import files
from deckhand_git_memory.git import Git

log = logging.getLogger(__name__)

#: How often sync retries when HEAD moves under it (someone committed at the same moment).
SYNC_ATTEMPTS = 3


class GitMemoryBackend(MemoryBackendBase):
    """Stores each decision in ``<repo>/.vector-memory/x-NNN/y-Y-z-Z.json``; history is git's.

    Options: ``lock_timeout`` (seconds to wait for another process's sync or create lock,
    then ``ConcurrencyError``), ``fsync`` (flush every write to disk; default on),
    ``author_name``/``author_email`` (commit identity when git has none configured) and
    ``git`` (the executable).
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        lock_timeout: float = 10.0,
        fsync: bool = True,
        author_name: str | None = None,
        author_email: str | None = None,
        git: str = "git",
    ) -> None:
        repo = Path(path if path is not None else Path.cwd()).expanduser()
        if not repo.exists():
            raise StorageError(f"repo_path {repo} does not exist; create it and run `git init` there")
        if not repo.is_dir():
            raise StorageError(f"repo_path {repo} is not a directory")
        if not isinstance(lock_timeout, (int, float)) or lock_timeout < 0:
            raise ValueError(f"lock_timeout must be a number of seconds >= 0, got {lock_timeout!r}")
        identity: dict[str, str] = {}
        if author_name:
            identity.update(GIT_AUTHOR_NAME=author_name, GIT_COMMITTER_NAME=author_name)
        if author_email:
            identity.update(GIT_AUTHOR_EMAIL=author_email, GIT_COMMITTER_EMAIL=author_email)
        self.repo = repo.resolve()
        self.git = Git(self.repo, executable=git, identity=identity)
        proc = self.git.run(["rev-parse", "--is-inside-work-tree", "--absolute-git-dir"], check=False)
        lines = proc.stdout.split()
        if proc.returncode != 0 or not lines or lines[0] != "true":
            raise StorageError(
                f"repo_path {self.repo} is not a git repository ({proc.stderr.strip() or 'not a work tree'});"
                " run `git init` there or point memory.path at one"
            )
        self.git_dir = Path(lines[1])
        self.root = self.repo / MEMORY_DIR
        self.location = str(self.root)
        self.lock_timeout = float(lock_timeout)
        self.durable = bool(fsync)
        self._state = self.git_dir / "deckhand-memory"
        try:
            self.root.mkdir(exist_ok=True)
            self._state.mkdir(exist_ok=True)
            ignore = self.root / ".gitignore"
            if not ignore.exists():
                files.write_file(ignore, files.GITIGNORE.encode(), create_only=False, durable=self.durable)
        except OSError as exc:
            raise StorageError(f"cannot create {self.root}: {exc}") from exc
        self._sync_lock = FileLock(str(self._state / "sync.lock"))

    # -------------------------------------------------------------- storage

    def locate(self, coordinate: VectorCoordinate) -> str:
        return str(self.repo / coordinate.to_path())

    def scan(self) -> Iterator[ScanEntry]:
        return files.scan(self.root)

    def read(self, coordinate: VectorCoordinate) -> bytes | None:
        path = self.repo / coordinate.to_path()
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"{path}: cannot read ({exc.strerror or exc})") from exc

    def write(self, coordinate: VectorCoordinate, data: bytes, *, create_only: bool) -> bool:
        path = self.repo / coordinate.to_path()
        try:
            try:
                return files.write_file(path, data, create_only=create_only, durable=self.durable)
            except files.LinksUnsupported:
                return self._create_locked(path, data)
        except OSError as exc:
            raise StorageError(f"{path}: cannot write the decision ({exc.strerror or exc})") from exc

    def _create_locked(self, path: Path, data: bytes) -> bool:
        """Create-only write where hard links are unavailable: check and rename under a per-coordinate lock."""
        lock = FileLock(str(self._state / f"{path.parent.name}-{path.stem}.lock"))
        try:
            with lock.acquire(timeout=self.lock_timeout):
                if path.exists():
                    return False
                return files.write_file(path, data, create_only=False, durable=self.durable)
        except Timeout as exc:
            raise ConcurrencyError(
                f"{path}: another process held the write lock for more than {self.lock_timeout:g}s;"
                " retry, or raise memory.options.lock_timeout"
            ) from exc

    # -------------------------------------------------------------- history

    def sync(self, message: str | None = None) -> SyncResult:
        try:
            with self._sync_lock.acquire(timeout=self.lock_timeout):
                for attempt in range(1, SYNC_ATTEMPTS + 1):
                    try:
                        return self._commit(message)
                    except _HeadMoved:
                        log.info("HEAD moved during sync (attempt %d); retrying", attempt)
                raise StorageError(
                    f"sync of {self.root} gave up: HEAD kept moving while committing;"
                    " retry when the repository is quiet"
                )
        except Timeout as exc:
            raise ConcurrencyError(
                f"another process has been syncing {self.root} for more than {self.lock_timeout:g}s"
                f" (lock {self._sync_lock.lock_file}); retry, or raise memory.options.lock_timeout"
            ) from exc

    def _commit(self, message: str | None) -> SyncResult:
        git = self.git
        head_proc = git.run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], check=False)
        head = head_proc.stdout.strip() if head_proc.returncode == 0 else None
        written, removed = self._changes(head)
        contents, skipped = self._contents(written)
        written = [rel for rel, _ in contents]
        if not written and not removed:
            return SyncResult(None, "", skipped=skipped)
        changed = _coordinates(written)
        deleted = _coordinates(removed)
        text = sync_message(changed, deleted, message)
        commit = self._fast_import(head, contents, removed, text)
        reflog = f"deckhand memory sync: {text.splitlines()[0]}"
        moved = git.run(["update-ref", "-m", reflog, "HEAD", commit, head or ""], check=False)
        if moved.returncode != 0:
            now = git.run(["rev-parse", "--verify", "-q", "HEAD"], check=False).stdout.strip() or None
            if now != head:
                raise _HeadMoved()
            raise StorageError(f"git update-ref HEAD failed in {self.repo}: {moved.stderr.strip()}")
        if git.out(["rev-parse", "--verify", "HEAD"]) != commit:
            raise StorageError(f"sync of {self.root}: commit {commit} was written but HEAD does not point to it")
        reset = git.run(["reset", "-q", "--", MEMORY_DIR], check=False)
        if reset.returncode != 0:
            raise StorageError(
                f"committed {commit}, but refreshing the index for {MEMORY_DIR} failed ({reset.stderr.strip()});"
                f" run `git reset -q -- {MEMORY_DIR}` in {self.repo}"
            )
        git.run(["gc", "--auto", "--quiet"], check=False)  # fast-import never triggers it; detaches if needed
        return SyncResult(commit, text, tuple(changed), tuple(deleted), {"repository": str(self.repo)}, skipped)

    def _contents(self, written: list[str]) -> tuple[list[tuple[str, bytes | None]], tuple[str, ...]]:
        """What to commit of each changed path (None: it is gone, delete it), and the decision files left out
        because they do not parse (``"<path>: <reason>"``): history only records what can be read back."""
        contents: list[tuple[str, bytes | None]] = []
        skipped: list[str] = []
        for rel in written:
            path = self.repo / rel
            try:
                data: bytes | None = path.read_bytes()
            except FileNotFoundError:
                data = None
            except OSError as exc:
                raise StorageError(f"{path}: cannot read for sync ({exc.strerror or exc})") from exc
            coordinate = _coordinate(rel)
            problem = decision_problem(coordinate, data) if data is not None and coordinate is not None else None
            if problem is not None:
                skipped.append(f"{path}: {problem}")
                continue
            contents.append((rel, data))
        return contents, tuple(skipped)

    def _changes(self, head: str | None) -> tuple[list[str], list[str]]:
        """Paths under .vector-memory/ that differ from ``head``: (added or modified, deleted).

        ``git diff HEAD`` compares the commit with the working tree using the index's stat
        cache (files are re-read only when their stat changed); ``ls-files --others`` adds the
        files the index does not know. Ignored files (temporaries) are left out.
        """
        written: set[str] = set()
        removed: set[str] = set()
        if head:
            out = self.git.out(["diff", "--name-status", "--no-renames", "-z", head, "--", MEMORY_DIR])
            fields = out.split("\0")
            for status, path in zip(fields[0::2], fields[1::2], strict=False):
                (removed if status.startswith("D") else written).add(path)
        others = self.git.out(["ls-files", "-z", "--others", "--exclude-standard", "--", MEMORY_DIR])
        written.update(p for p in others.split("\0") if p)
        return sorted(written), sorted(removed - written)

    def _fast_import(
        self, head: str | None, written: list[tuple[str, bytes | None]], removed: list[str], message: str
    ) -> str:
        """Write one commit of ``head`` plus the changes with ``git fast-import`` and return its id.

        fast-import streams every blob into a single pack (``git add`` would create one loose
        object file per decision: 10x slower for a thousand decisions on a real disk).
        """
        committer = self._ident("GIT_COMMITTER_IDENT")
        author = self._ident("GIT_AUTHOR_IDENT")
        ref = f"refs/deckhand-memory/sync-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        body = message.encode("utf-8")
        parts = [
            f"commit {ref}\nauthor {author}\ncommitter {committer}\ndata {len(body)}\n".encode(),
            body,
            b"\n",
        ]
        if head:
            parts.append(f"from {head}\n".encode())
        for rel, data in written:
            if data is None:  # gone since git listed it
                if head:
                    parts.append(f"D {_quote(rel)}\n".encode())
                continue
            parts.append(f"M 100644 inline {_quote(rel)}\ndata {len(data)}\n".encode())
            parts.append(data)
            parts.append(b"\n")
        for rel in removed:
            parts.append(f"D {_quote(rel)}\n".encode())
        parts.append(b"\ndone\n")
        proc = subprocess.run(
            [self.git.executable, "-C", str(self.repo), "fast-import", "--quiet", "--done"],
            input=b"".join(parts),
            capture_output=True,
            env=self.git.env,
            check=False,
        )
        try:
            if proc.returncode != 0:
                raise StorageError(
                    f"git fast-import failed in {self.repo} (exit {proc.returncode}):"
                    f" {proc.stderr.decode('utf-8', 'replace').strip()[:500]}"
                )
            return self.git.out(["rev-parse", "--verify", ref])
        finally:
            self.git.run(["update-ref", "-d", ref], check=False)

    def _ident(self, which: str) -> str:
        proc = self.git.run(["var", which], check=False)
        if proc.returncode != 0 or not proc.stdout.strip():
            lines = [line for line in proc.stderr.splitlines() if line.startswith("fatal:")]
            reason = lines[-1] if lines else "empty"
            raise StorageError(
                f"git has no identity to commit the memory in {self.repo} ({reason});"
                " set git config user.name/user.email there, or memory.options.author_name/author_email"
            )
        return proc.stdout.strip()

    def close(self) -> None:
        """Nothing is held between calls (locks are taken per operation)."""


class _HeadMoved(Exception):
    """Someone else updated HEAD between reading it and moving it."""


def _coordinate(path: str) -> VectorCoordinate | None:
    try:
        return VectorCoordinate.from_path(path)
    except ValueError:
        return None  # .gitignore or another non-decision file: committed, not counted


def _coordinates(paths: list[str]) -> list[VectorCoordinate]:
    return sorted(c for path in paths if (c := _coordinate(path)) is not None)


def _quote(path: str) -> str:
    """A path as fast-import reads it: C-style quoted when it has special characters."""
    if path.startswith('"') or any(ch in path for ch in '\n\\"') or "\0" in path:
        escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    return path
