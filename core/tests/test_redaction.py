"""Secrets never reach logs: passwords in URLs and secret query parameters are masked."""

from __future__ import annotations

import pytest
from deckhand.redaction import redact_url


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
