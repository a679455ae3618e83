"""Keep secrets out of logs and error messages."""

from __future__ import annotations

import re

# scheme://user:password@host  →  scheme://user:***@host (also a bare :password@)
_URL_PASSWORD = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]+)(?=@)")
_QUERY_SECRET = re.compile(
    r"(?i)(?P<prefix>[?&](?:password|passwd|pwd|token|api_key|apikey|secret)=)(?P<secret>[^&\s]+)"
)


def redact_url(text: str) -> str:
    """``text`` with passwords in URLs (``scheme://user:pw@``, ``?password=``) replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: m.group("prefix") + "***", text)
    return _QUERY_SECRET.sub(lambda m: m.group("prefix") + "***", text)
