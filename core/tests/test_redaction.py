"""Secrets never reach logs: passwords in URLs and secret query parameters are masked."""

from __future__ import annotations

import pytest
from deckhand.redaction import redact_secrets, redact_url


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
