"""``deckhand migrate`` from the embedded sqlite store to a real Redis (with the search module): every record, vector
and manifest entry arrives, nothing is embedded, and the tool searches the new store at once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from deckhand.testing.migration_kit import check_migrates_from_sqlite

pytestmark = pytest.mark.redis


def test_sqlite_to_redis(tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # no user-level config leaks in
    target = {"provider": "redis", "connection_string": redis_url, "index_name": f"migrate_{uuid.uuid4().hex[:8]}"}
    check_migrates_from_sqlite(tmp_path, target, monkeypatch)
