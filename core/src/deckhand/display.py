"""Making text safe to print: control characters escaped, so a file name cannot break a line.

A file may be called ``a\\nb.txt``; printed as is, it splits a warning or a result's
``Source:`` line in two and can forge a line of output. Everything deckhand prints about
a file goes through :func:`printable` (the CLI's log handler also escapes whole messages).
"""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, and the bidirectional overrides that reorder what a terminal shows.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: The same, less the line breaks and tabs a multi-line text (a chunk shown whole) keeps.
_CONTROL_IN_BLOCK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\t``, ``\\x1b``, ``\\u202e``) and backslashes kept."""
    return _CONTROL.sub(_escape, text)


def printable_line(text: str) -> str:
    """:func:`printable`, and a lone surrogate (text that is not valid Unicode) as its ``\\udcxx`` escape:
    one line any terminal, log or JSON encoder takes."""
    return printable(text).encode("utf-8", "backslashreplace").decode("utf-8")


def printable_block(text: str) -> str:
    """Like :func:`printable` for text shown over several lines: ``\\n`` and ``\\t`` are kept as they are
    (and a Windows line end ``\\r\\n`` is one line break)."""
    return _CONTROL_IN_BLOCK.sub(_escape, text.replace("\r\n", "\n"))


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
