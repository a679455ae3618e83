"""A thin wrapper over the ``git`` command line: run a command, fail with a message naming it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from deckhand.api import StorageError


class Git:
    """Runs ``git -C <path> ...`` with a predictable environment (no prompts, C locale)."""

    def __init__(self, path: Path, *, executable: str = "git", identity: Mapping[str, str] | None = None) -> None:
        found = shutil.which(executable)
        if found is None:
            raise StorageError(
                f"the git executable {executable!r} was not found; install git or set memory.options.git"
            )
        self.executable = found
        self.path = path
        env = dict(os.environ)
        env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANG": "C"})
        env.pop("GIT_INDEX_FILE", None)
        env.update(identity or {})
        self.env = env

    def run(
        self,
        args: Sequence[str],
        *,
        index_file: Path | None = None,
        input: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run one git command; ``StorageError`` naming the command and git's message if it fails."""
        env = self.env if index_file is None else {**self.env, "GIT_INDEX_FILE": str(index_file)}
        try:
            proc = subprocess.run(
                [self.executable, "-C", str(self.path), *args],
                capture_output=True,
                text=True,
                env=env,
                input=input,
                check=False,
            )
        except OSError as exc:
            raise StorageError(f"cannot run git in {self.path}: {exc}") from exc
        if check and proc.returncode != 0:
            raise StorageError(
                f"git {' '.join(args)} failed in {self.path} (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip() or 'no message'}"
            )
        return proc

    def out(self, args: Sequence[str], **kwargs: object) -> str:
        """Standard output of a successful command, stripped."""
        return self.run(args, **kwargs).stdout.strip()  # type: ignore[arg-type]
