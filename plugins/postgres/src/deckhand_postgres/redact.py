"""Keeping the connection string's password out of every log line and error message."""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit

try:  # core's helper, once it ships (deckhand.redaction)
    from deckhand.redaction import redact_url as _core_redact_url
except ImportError:  # pragma: no cover - depends on the installed core
    _core_redact_url = None

MASK = "***"


def _secrets(url: str) -> list[str]:
    """The password(s) a libpq URL carries: in the userinfo and/or as ``?password=``."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
        if parts.password:
            found += [parts.password, unquote(parts.password)]
        for key, value in parse_qsl(parts.query, keep_blank_values=False):
            if key.lower() == "password" and value:
                found.append(value)
    except ValueError:
        pass
    return sorted({s for s in found if s}, key=len, reverse=True)


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (userinfo and ``?password=``)."""
    if _core_redact_url is not None:
        redacted = str(_core_redact_url(url))
    else:
        redacted = url
    return scrub(redacted, url)


def scrub(text: str, url: str) -> str:
    """``text`` with every occurrence of ``url``'s password masked (for driver error messages)."""
    for secret in _secrets(url):
        text = text.replace(secret, MASK)
    return text
