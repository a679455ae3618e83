"""Keep secrets out of logs and error messages.

Connection strings carry passwords (``redis://:s3cret@host:6379``,
``postgresql://user:s3cret@host/db``, ``...?password=s3cret``). Every log line and error
that mentions a server shows :func:`redact_url` of it, and text that may echo the URL
back (a driver's exception message) goes through :func:`redact_secrets`.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
#: Query parameters whose values are secrets.
SECRET_PARAMS = frozenset(
    {"password", "pass", "pwd", "secret", "token", "access_token", "api_key", "apikey", "sslpassword"}
)


def redact_url(url: str | None) -> str:
    """``url`` with its password and secret query parameters replaced by ``***``.

    The user name, host, port, path and other parameters stay, so the message still says
    which server was meant. Strings that are not URLs come back unchanged; ``None`` as ``""``.
    """
    if not url:
        return ""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            if ":" in userinfo:
                user = userinfo.split(":", 1)[0]
                netloc = f"{user}:{MASK}@{hostport}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(key.lower() in SECRET_PARAMS for key, _ in pairs):
                query = urlencode(
                    [(key, MASK if key.lower() in SECRET_PARAMS else value) for key, value in pairs], safe="*"
                )
        if netloc == parts.netloc and query == parts.query:
            return url  # nothing secret; urlunsplit would also drop an empty netloc ("unix:///")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return MASK


def url_secrets(url: str | None) -> list[str]:
    """The secret strings inside ``url`` (password, secret parameters), raw and percent-decoded."""
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
    expanded = set()
    for secret in secrets:
        expanded |= {secret, unquote(secret), quote(secret, safe="")}
    return sorted((s for s in expanded if s), key=len, reverse=True)


def redact_secrets(text: str, url: str | None) -> str:
    """``text`` with ``url`` replaced by its redacted form and any of its secrets masked."""
    if url:
        text = text.replace(url, redact_url(url))
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return text
