"""Making text safe to print: control characters escaped, so a file name cannot break a line of output."""

from __future__ import annotations

import re

#: C0 and C1 controls, DEL, the bidirectional overrides, and lone surrogates (undecodable bytes of a file name).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: The same, less the line breaks and tabs a multi-line text (a chunk shown whole) keeps.
_CONTROL_IN_BLOCK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\t``, ``\\x1b``, ``\\u202e``) and backslashes kept;
    an undecodable byte of a file name (``b"\\xff"``, held as U+DCFF) is shown as the byte, ``\\xff``."""
    return _CONTROL.sub(_escape, text)


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: False for a file name holding bytes that are not UTF-8
    (Python keeps them as lone surrogates), which no store, JSON answer or terminal line can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_name(text: str) -> str:
    """``text`` with each undecodable byte of a file name written ``\\xff`` (only those: a valid name is
    returned as it is), so a skipped file can still be named in a report, a JSON answer or a log."""
    return text if is_utf8(text) else _UNDECODABLE.sub(_escape, text)


_UNDECODABLE = re.compile(r"[\ud800-\udfff]")


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
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the undecodable byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
