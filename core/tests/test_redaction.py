"""Secrets never reach logs: passwords in URLs and secret query parameters are masked."""

from __future__ import annotations

import re
import time

import pytest
from deckhand.redaction import (
    _mask_url_passwords,
    credential_spans,
    is_secret_field,
    redact,
    redact_secrets,
    redact_url,
)
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("redis://user:s3cret@host:6379/0", "redis://user:***@host:6379/0"),
        ("rediss://:s3cret@host:6380", "rediss://:***@host:6380"),
        ("postgresql://app:p%40ss:word@db.internal/x", "postgresql://app:***@db.internal/x"),
        ("http://h/x?user=a&password=s3cret&x=1", "http://h/x?user=a&password=***&x=1"),
        ("https://h/?API_KEY=abc123", "https://h/?API_KEY=***"),
        (
            "error at redis://u:pw@h:1 (refused); retry redis://u:pw@h:2",
            "error at redis://u:***@h:1 (refused); retry redis://u:***@h:2",
        ),
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("no url here: 10:30@noon", "no url here: 10:30@noon"),
    ],
)
def test_redact_url(text: str, expected: str) -> None:
    assert redact_url(text) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://:s3cret@localhost:6379/0", "redis://:***@localhost:6379/0"),
        ("rediss://default:s3cret@cache.example.com:6380", "rediss://default:***@cache.example.com:6380"),
        (
            "postgresql://app:p%40ss@db:5432/deckhand?sslmode=require",
            "postgresql://app:***@db:5432/deckhand?sslmode=require",
        ),
        ("redis://localhost:6379?password=s3cret&db=2", "redis://localhost:6379?password=***&db=2"),
        ("redis://user@localhost:6379", "redis://user@localhost:6379"),
        ("redis://localhost:6379", "redis://localhost:6379"),
        ("unix:///tmp/redis.sock", "unix:///tmp/redis.sock"),
        ("", ""),
        (None, ""),
    ],
)
def test_redact_single_url(url: str | None, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_url_with_at_sign_in_password() -> None:
    assert redact_url("redis://:a@b@host:6379") == "redis://:***@host:6379"


def test_redact_secrets_masks_url_and_bare_password() -> None:
    url = "redis://:top%23secret@host:6379"
    text = f"Error connecting to {url}: password top#secret rejected (top%23secret)"
    out = redact_secrets(text, url)
    assert "secret" not in out.replace("***", "")
    assert "redis://:***@host:6379" in out


def test_redact_secrets_without_secret_is_identity() -> None:
    assert redact_secrets("Connection refused", "redis://localhost:6379") == "Connection refused"


def test_redact_url_inside_text() -> None:
    text = "Error connecting to redis://:pw1@host:6379 and postgresql://u:pw2@db/x?password=pw3"
    out = redact_url(text)
    assert "pw1" not in out and "pw2" not in out and "pw3" not in out
    assert "redis://:***@host:6379" in out


# -- by value: the process-wide registry (issue 19 item 1) -------------------------------------------


def test_a_registered_secret_is_masked_whole_in_pieces_and_in_its_encoded_forms() -> None:
    from urllib.parse import quote

    from deckhand.redaction import SECRETS, redact, register_secret

    register_secret("Wrong@TailLeak99")
    assert SECRETS
    assert redact("failed to resolve host 'TailLeak99@127.0.0.1'") == "failed to resolve host '***@127.0.0.1'"
    assert "Leak" not in redact("TAILLEAK99 and tailleak")  # without regard to case
    assert redact(quote("Wrong@TailLeak99", safe="")) == "***"  # Wrong%40TailLeak99
    assert redact("the pieces Wron and g@Ta and the rest") == "the pieces *** and *** and the rest"
    assert redact("three letters: Wro") == "three letters: Wro"  # shorter than a piece: kept


def test_short_secrets_are_not_registered() -> None:
    from deckhand.redaction import SECRETS, register_secret

    register_secret("abc")
    assert not SECRETS


@pytest.mark.parametrize(
    ("field", "template", "values", "expected"),
    [
        ("tools[0].database.connection_string", "postgresql://u:${PW}@${HOST}/db", {"PW": "p@w/d", "HOST": "h1"},
         ["p@w/d"]),
        ("tools[0].database.connection_string", "${URL}", {"URL": "redis://:RdPw-Zq8@x:y/7%Secret@127.0.0.1:1/0"},
         ["RdPw-Zq8@x:y/7%Secret"]),
        ("tools[0].database.connection_string", "redis://h/0?password=${P}&db=${DB}", {"P": "s3cret", "DB": "2"},
         ["s3cret"]),
        ("vectorstore.connection_string", "host=h password=${P}", {"P": "pw-pw-pw"}, ["pw-pw-pw"]),
        ("vectorstore.connection_string", "${X}", {"X": "not a url"}, ["not a url"]),
        ("tools[0].database.api_key", "${K}", {"K": "key-value"}, ["key-value"]),
        ("tools[0].options.headers.X-Custom", "Bearer ${T}", {"T": "tok"}, ["tok"]),
        ("tools[0].source", "${DOCS}/x", {"DOCS": "/home/me"}, []),
        ("tools[0].name", "${N}", {"N": "docs"}, []),
    ],
)  # fmt: skip
def test_which_substituted_values_are_secrets(
    field: str, template: str, values: dict[str, str], expected: list[str]
) -> None:
    from deckhand.redaction import secret_parts

    assert secret_parts(field, template, values) == expected


def test_interpolating_a_config_registers_its_secrets(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    from deckhand.config.loading import interpolate
    from deckhand.redaction import redact

    monkeypatch.setenv("PW", "Wrong@TailLeak99")
    monkeypatch.setenv("DOCS", "guides-folder")
    data = {"tools": [{"source": "${DOCS}", "database": {"connection_string": "postgresql://u:${PW}@h/db"}}]}
    interpolate(data, Path("agent.yaml"))
    assert redact("host 'TailLeak99@h'") == "host '***@h'"
    assert redact("guides-folder") == "guides-folder"


# -- linear time: masking runs on every tool argument and answer, so a long input must not freeze the server --

#: The URL-password expression masking used before; the scan that replaced it must find the same matches.
_REFERENCE = re.compile(r"(?P<prefix>[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*:)(?P<secret>[^@\s]+)(?=@)")


@given(st.text(alphabet="ab9+.-:/@ \n?&=x", max_size=40))
@settings(max_examples=500, deadline=None)
def test_url_password_scan_matches_the_expression_it_replaced(text: str) -> None:
    assert _mask_url_passwords(text) == _REFERENCE.sub(lambda m: m.group("prefix") + "***", text)


#: Adversarial shapes, each repeated to the size tested: long words, many schemes without a password's end,
#: many user names, many secret query parameters, separators only.
_SHAPES = [
    "a",
    "a9",
    "a://",
    "a://b:",
    "a://b:c",
    "a://:",
    "https://u:p@",
    "a" * 999 + "://",
    "x:",
    "@",
    " ",
    "?password=",
    "&token=a",
    "&",
    "password='\\'",
    "password= ",
    "_key-",
    "a.",
]


@pytest.mark.parametrize("shape", _SHAPES)
def test_masking_is_linear_on_adversarial_input(shape: str) -> None:
    """Each shape at 16 KB then 1 MB masks within a bound a quadratic scan misses by far (the 16 KB
    step fails first, in about a second, where 1 MB would have taken hours). A megabyte takes about
    0.2 s on an idle core; the bound leaves room for a loaded CI machine."""
    for size, bound in ((16_000, 0.1), (1_000_000, 2.0)):
        text = shape * (size // len(shape))
        for mask in (redact, lambda t: redact_secrets(t, "redis://:pw@host"), credential_spans, is_secret_field):
            clock = time.perf_counter()
            mask(text)
            elapsed = time.perf_counter() - clock
            assert elapsed < bound, f"{shape!r} x {len(text)}: {elapsed:.2f}s"
