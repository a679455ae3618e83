"""Keep secrets out of every output: masking registered secret values anywhere (:func:`redact`, also in every log
record) and passwords in URLs by shape (:func:`redact_url`). See docs/security.md."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
from urllib.parse import parse_qsl, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

MASK = "***"
#: Query parameters whose values are secrets.
SECRET_PARAMS = frozenset(
    {"password", "passwd", "pass", "pwd", "secret", "token", "access_token", "api_key", "apikey", "sslpassword"}
)

# scheme://user:password@host -> scheme://user:***@host, found by :func:`_mask_url_passwords` in linear time
# (the regular expression it replaces took quadratic time on a long word).
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_SCHEME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_USER_END = re.compile(r"[:/@\s]")
_SECRET_END = re.compile(r"[@\s]")
_ONE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_QUERY_SECRET = re.compile(
    r"(?i)(?P<prefix>[?&](?:password|passwd|pass|pwd|token|access_token|api_key|apikey|secret|sslpassword)=)"
    # The value ends at a closing bracket or quote too: in a message the URL often stands in parentheses.
    r"(?P<secret>[^&\s)\]}>'\"]+)"
)


def redact_url(text: str | None) -> str:
    """``text`` with registered secrets and URL passwords replaced by ``***``; ``None`` gives ``""``."""
    if not text:
        return ""
    text = SECRETS.redact(text)  # every registered secret first, however the URL around it is spelled
    if _ONE_URL.fullmatch(text):
        with contextlib.suppress(ValueError):  # unparsable: the pattern pass below still applies
            text = _redact_one_url(text)
    return _redact_text(text)  # also any URL inside longer text (idempotent on masked URLs)


def _redact_text(text: str) -> str:
    return _QUERY_SECRET.sub(lambda m: m.group("prefix") + MASK, _mask_url_passwords(text))


def _mask_url_passwords(text: str) -> str:
    """``text`` with the password of each ``scheme://user:password@`` replaced by ``***``, in linear time: every scan
    is bounded by the next ``://``."""
    out: list[str] = []
    copied = 0  # text[:copied] is in out
    at = text.find("://")
    secret_from, secret_end = -1, -1  # the last lookup: the first '@' or space at or after secret_from
    while at >= 0:
        start = at
        while start > copied and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        while start < at and text[start] not in _SCHEME_FIRST:
            start += 1
        user_end = _USER_END.search(text, at + 3) if start < at else None
        if user_end is not None and text[user_end.start()] == ":":
            colon = user_end.start()
            if not secret_from <= colon + 1 <= secret_end:
                found = _SECRET_END.search(text, colon + 1)
                secret_from, secret_end = colon + 1, found.start() if found is not None else len(text)
            if secret_end > colon + 1 and secret_end < len(text) and text[secret_end] == "@":
                out += (text[copied : colon + 1], MASK)
                copied = secret_end
                at = text.find("://", secret_end)
                continue
        at = text.find("://", at + 1)
    return "".join(out) + text[copied:] if out else text


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


# -- by value: the process-wide registry ----------------------------------------------------------

#: The shortest piece of a secret masked wherever it appears (a shorter one would mask ordinary words).
MIN_PIECE = 4

#: Configuration field names (any part of the field's path) whose ``${VAR}`` values are secrets.
SECRET_FIELD = re.compile(
    r"(?:^|[_-])(?:password|passwd|pwd|pass|secret|token|key|apikey|auth|authorization|credentials?|cookie|"
    r"headers?|connection_string|dsn|url|uri|endpoint|bearer|private)(?:$|[_-])",
    re.IGNORECASE,
)
#: Fields whose value is a URL: a ``${VAR}`` there is secret only in the credentials' places.
_URL_FIELD = re.compile(r"(?:^|[_-])(?:connection_string|dsn|url|uri|endpoint)$", re.IGNORECASE)
_KEYWORD_SECRET = re.compile(
    r"(?i)\b(?:password|passwd|pwd|secret|token|api_?key|sslpassword)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|(\S+))"
)
#: A user name alone (``https://TOKEN@host``) is taken for a token from this length on.
_TOKEN_USER = 16


def _fold(text: str) -> str:
    """``text`` lower-cased character by character (same length, so positions still line up)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def secret_forms(secret: str) -> set[str]:
    """The spellings of ``secret`` an output may carry: raw, URL-(un)quoted, JSON- and repr-escaped."""
    forms = {secret, unquote(secret), unquote_plus(secret), quote(secret, safe=""), quote_plus(secret, safe="")}
    forms |= {quote(secret, safe="/:@!$&'()*+,;="), json.dumps(secret)[1:-1], repr(secret)[1:-1]}
    forms.add(secret.encode("unicode_escape").decode("ascii"))
    return {f for f in forms if f}


class SecretRegistry:
    """Secrets masked in any text, with every piece of :data:`MIN_PIECE` characters or more; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._pieces: frozenset[str] = frozenset()

    def add(self, secret: str | None) -> bool:
        """Register ``secret`` (ignored when shorter than :data:`MIN_PIECE`); True if it is new."""
        if not secret or len(secret) < MIN_PIECE or secret in self._secrets:
            return False
        with self._lock:
            pieces = set(self._pieces)
            for form in secret_forms(secret):
                folded = _fold(form)
                pieces.update(folded[i : i + MIN_PIECE] for i in range(len(folded) - MIN_PIECE + 1))
            self._pieces = frozenset(pieces)
            self._secrets = self._secrets | {secret}
        return True

    def clear(self) -> None:
        """Forget every secret (tests)."""
        with self._lock:
            self._secrets = frozenset()
            self._pieces = frozenset()

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def redact(self, text: str) -> str:
        """``text`` with every run of characters covered by a registered piece replaced by ``***``."""
        pieces = self._pieces
        if not pieces or len(text) < MIN_PIECE:
            return text
        for _ in range(3):  # a mask next to a secret holding '*' could form a new piece: settle
            masked = _mask(text, pieces)
            if masked == text:
                break
            text = masked
        return text


def _mask(text: str, pieces: frozenset[str]) -> str:
    folded = _fold(text)
    covered = bytearray(len(text))
    found = False
    for i in range(len(folded) - MIN_PIECE + 1):
        if folded[i : i + MIN_PIECE] in pieces:
            covered[i : i + MIN_PIECE] = b"\x01" * MIN_PIECE
            found = True
    if not found:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        if covered[i]:
            while i < len(text) and covered[i]:
                i += 1
            out.append(MASK)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


#: The process-wide registry: :func:`register_secret` adds, :func:`redact` masks.
SECRETS = SecretRegistry()


def register_secret(secret: str | None) -> None:
    """Treat ``secret`` as a secret everywhere from now on (log records included)."""
    if SECRETS.add(secret):
        install_log_redaction()


def redact(text: str) -> str:
    """``text`` with every registered secret (and piece of one) and every URL password masked."""
    return redact_url(text) if text else text


def redact_any(value: object) -> object:
    """``value`` with :func:`redact` applied to every string inside (dicts, lists, tuples)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_any(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_any(v) for v in value)
    return value


# -- which ${VAR} values are secrets -----------------------------------------------------------


def is_secret_field(field: str) -> bool:
    """Whether a configuration field (``tools[0].database.connection_string``) may carry a secret."""
    return any(SECRET_FIELD.search(part) for part in re.split(r"[.\[\]]+", field) if part)


def secret_parts(field: str, template: str, values: dict[str, str]) -> list[str]:
    """The values among ``values`` (as substituted into ``template``) that are secrets: the credentials in a URL field,
    the whole value in a secret-bearing field, none elsewhere."""
    if not values or not is_secret_field(field):
        return []
    last = re.split(r"[.\[\]]+", field.rstrip("]"))[-1] if field else ""
    if not _URL_FIELD.search(last):
        return [v for v in values.values() if v]
    markers = {name: f"\x00{i}\x00" for i, name in enumerate(values)}
    shape = template
    for name, marker in markers.items():
        shape = shape.replace("${" + name + "}", marker)
    secrets: list[str] = []
    spans = credential_spans(shape)
    for name, marker in markers.items():
        at = shape.find(marker)
        if at < 0:
            continue
        if shape.strip() == marker:  # the whole URL in one variable: its credentials (not a URL: all of it)
            value = values[name]
            spans_in_value = credential_spans(value)
            secrets += [value[a:b] for a, b in spans_in_value] if spans_in_value or "://" in value else [value]
        elif "://" not in shape or any(a <= at < b for a, b in spans):
            secrets.append(values[name])
    return [s for s in secrets if s]


def credential_spans(url: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each credential in ``url``, found without parsing it (it may be malformed)."""
    spans: list[tuple[int, int]] = []
    scheme = url.find("://")
    if scheme >= 0:
        start = scheme + 3
        at = url.rfind("@", start)
        if at >= 0:
            colon = url.find(":", start, at)
            if colon >= 0:
                spans.append((colon + 1, at))
            elif at - start >= _TOKEN_USER:
                spans.append((start, at))
        query = url.find("?", max(at, start))
        if query >= 0:
            for match in _QUERY_SECRET.finditer(url, query):
                spans.append(match.span("secret"))
    if scheme < 0:  # libpq's "host=h password=pw" form
        for match in _KEYWORD_SECRET.finditer(url):
            group = 1 if match.group(1) is not None else 2
            spans.append(match.span(group))
    return [(a, b) for a, b in spans if b > a]


def register_config_secrets(field: str, template: str, values: dict[str, str]) -> None:
    """Register the secrets among a field's substituted ``${VAR}`` values (:func:`secret_parts`)."""
    for secret in secret_parts(field, template, values):
        register_secret(secret)


# -- log records ---------------------------------------------------------------------------------

_installed = False
_install_lock = threading.Lock()


def install_log_redaction() -> None:
    """Mask registered secrets in every log record of every logger, before any handler. Idempotent."""
    global _installed
    with _install_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: object, **kwargs: object) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if SECRETS:
                redact_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True


_FORMATTER = logging.Formatter()


def redact_record(record: logging.LogRecord) -> None:
    """Mask secrets in ``record`` in place (message, arguments, exception text, stack)."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports that itself later
        return
    if isinstance(record.msg, str):
        record.msg = redact(record.msg)
    if isinstance(record.args, tuple):
        record.args = tuple(_redact_arg(a) for a in record.args)
    elif isinstance(record.args, dict):
        record.args = {k: _redact_arg(v) for k, v in record.args.items()}
    try:
        still = record.getMessage()
    except Exception:
        still = message
    if still != redact(still):  # a secret split across the format and its arguments: give the masked text
        record.msg, record.args = redact(still), None
    if record.exc_info and not record.exc_text:
        record.exc_text = redact(_FORMATTER.formatException(record.exc_info))
    elif record.exc_text:
        record.exc_text = redact(record.exc_text)
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


def _redact_arg(value: object) -> object:
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    text = value if isinstance(value, str) else str(value)
    masked = redact(text)
    return value if masked == text else masked
