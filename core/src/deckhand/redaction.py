"""Keep secrets out of logs and error messages.

Connection strings carry passwords (``redis://:s3cret@host:6379``,
``postgresql://user:s3cret@host/db``, ``...?password=s3cret``). Every log line and error
that mentions a server shows :func:`redact_url` of it, and text that may echo the URL
back (a driver's exception message) goes through :func:`redact_secrets`.
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "***"
#: Query parameters whose values are secrets.
SECRET_PARAMS = frozenset(
    {"password", "passwd", "pass", "pwd", "secret", "token", "access_token", "api_key", "apikey", "sslpassword"}
)

# scheme://user:password@host  →  scheme://user:***@host (also a bare :password@), inside any text
_URL_PASSWORD = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]+)(?=@)")
_ONE_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://\S+$")
_QUERY_SECRET = re.compile(
    r"(?i)(?P<prefix>[?&](?:password|passwd|pass|pwd|token|access_token|api_key|apikey|secret|sslpassword)=)"
    r"(?P<secret>[^&\s]+)"
)


def redact_url(text: str | None) -> str:
    """``text`` with passwords in URLs (``scheme://user:pw@``, ``?password=``) replaced by ``***``.

    A single URL is parsed (so a password containing ``@`` is masked whole); longer text
    is scanned for URLs. User name, host, port, path and other parameters stay, so the
    message still says which server was meant. ``None`` gives ``""``.
    """
    if not text:
        return ""
    if _ONE_URL.match(text):
        with contextlib.suppress(ValueError):  # unparsable: the pattern pass below still applies
            text = _redact_one_url(text)
    return _redact_text(text)  # also any URL inside longer text (idempotent on masked URLs)


def _redact_text(text: str) -> str:
    text = _URL_PASSWORD.sub(lambda m: m.group("prefix") + MASK, text)
    return _QUERY_SECRET.sub(lambda m: m.group("prefix") + MASK, text)


def _redact_one_url(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{hostport}"
    if netloc != parts.netloc:  # (urlunsplit would drop an empty netloc, so only rebuild when needed)
        url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    # Secret query parameters by pattern, so the other parameters keep their exact spelling.
    return _QUERY_SECRET.sub(lambda m: m.group("prefix") + MASK, url)


def url_secrets(url: str | None) -> list[str]:
    """The secret strings inside ``url`` (password, secret parameters), raw and percent-(de)coded."""
    if not url:
        return []
    secrets: list[str] = []
    try:
        parts = urlsplit(url)
        if parts.password:
            secrets.append(parts.password)
        secrets += [value for key, value in parse_qsl(parts.query) if key.lower() in SECRET_PARAMS and value]
    except ValueError:
        return []
    expanded: set[str] = set()
    for secret in secrets:
        expanded |= {secret, unquote(secret), quote(secret, safe="")}
    return sorted((s for s in expanded if s), key=len, reverse=True)


def redact_secrets(text: str, url: str | None) -> str:
    """``text`` (e.g. a driver's error) with ``url``'s secrets masked, wherever they appear."""
    if url:
        text = text.replace(url, redact_url(url))
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return redact_url(text)
