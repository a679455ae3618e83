"""Errors in one line with no secret in them: URL passwords and every value config files took from ``${VARS}``."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from deckhand.errors import DeckhandError
from deckhand.redaction import MASK, redact_url

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Redactor:
    """Masks ``secrets`` (those of four characters or more) and URL passwords in what is shown."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """``text`` with URL passwords and every known secret replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return redact_url(text)

    def error_line(self, exc: BaseException) -> str:
        """One line saying what went wrong, with no secret in it."""
        text = str(exc).strip()
        line = text.splitlines()[0] if text else type(exc).__name__
        if not isinstance(exc, (DeckhandError, ValueError, OSError, ConnectionError, RuntimeError)):
            line = f"internal error ({type(exc).__name__}): {line}"
        return self.redact(line)


def config_secrets(files: Sequence[Path]) -> list[str]:
    """The values config files take from ``${VARS}``: treated as secrets wherever they would show."""
    found: list[str] = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += [os.environ[name] for name in _VAR.findall(text) if os.environ.get(name)]
    return found
