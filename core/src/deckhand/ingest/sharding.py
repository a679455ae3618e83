"""A deterministic split of a source's files between ingest processes (``deckhand ingest --shard I/N``): shard I
takes the files whose manifest path hashes (SHA-1) to I, so every machine agrees and each file is embedded once."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from deckhand.errors import ConfigError

_FORM = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ConfigError(f"--shard {self.index}/{self.count}: the shard must be between 1 and {self.count}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` → shard 2 of 4; anything else is a one-line :class:`ConfigError`."""
        match = _FORM.fullmatch(text)
        if match is None:
            raise ConfigError(f"--shard {text!r}: write it as I/N, for example --shard 1/4 (shard 1 of 4)")
        return cls(int(match.group(1)), int(match.group(2)))

    def owns(self, source: str) -> bool:
        """Whether the file at ``source`` (a manifest path) belongs to this shard."""
        digest = hashlib.sha1(source.encode("utf-8", "surrogateescape"), usedforsecurity=False).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
