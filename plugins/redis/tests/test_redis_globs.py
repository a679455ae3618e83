"""Globs on Redis mean what they say, never block the server, and refuse an index of the older layout.

Regressions of issue 19 item 2 and what was found next to it: a backslash in a glob became
RediSearch's escape of the next character (``*\\*`` matched every record); ``?`` matched one
byte of a UTF-8 character; a stored ``*`` made RediSearch 2.10's wildcard matcher loop forever
(one query blocked the whole server for every client).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import redis
from deckhand.config.models import DatabaseConfig
from deckhand.errors import FilterError
from deckhand.filters import Filter, Op, condition
from deckhand.testing.store_conformance import file_state, make_vectors
from deckhand.types import Algorithm, CollectionSpec, Record, record_id
from deckhand_redis import RedisStore
from deckhand_redis.filters import GLOB_MARK, KEYS_FIELD

pytestmark = [pytest.mark.redis, pytest.mark.timeout(60)]

VALUES = ["*b*b*", "C:\\docs\\*", "sé", "s文", "plain", "a\\b", "ab"]


@pytest.fixture
def store(redis_url: str) -> Iterator[RedisStore]:
    config = DatabaseConfig(provider="redis", connection_string=redis_url, index_name="globs")
    name = f"g_{uuid.uuid4().hex[:10]}"
    store = RedisStore.from_config(config, name)
    store.open(CollectionSpec(name, 4, "m", algorithm=Algorithm.FLAT))
    vectors = make_vectors(np.random.default_rng(3), len(VALUES), 4)
    records = [Record(record_id("a.md", i), "a.md", i, v, vectors[i], {"v": v}) for i, v in enumerate(VALUES)]
    store.replace_source("a.md", records, file_state("a.md", chunks=len(records)))
    yield store
    store.drop()
    store.close()


def _glob(store: RedisStore, *patterns: str) -> set[str]:
    where = Filter((condition("v", Op.GLOB, patterns),))
    return {h.record.content for h in store.search(np.ones(4, dtype=np.float32), 50, where=where)}


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        (("*\\*",), {"C:\\docs\\*", "a\\b"}),
        (("C:\\d*",), {"C:\\docs\\*"}),
        (("a\\b",), {"a\\b"}),
        (("s?",), {"sé", "s文"}),
        (("s??",), set()),
        (("**b", "*?*b"), {"a\\b", "ab"}),
        (("**b*",), {"*b*b*", "a\\b", "ab"}),
        (("\\*",), set()),
    ],
)
def test_globs_are_exact(store: RedisStore, patterns: tuple[str, ...], expected: set[str]) -> None:
    started = time.monotonic()
    assert _glob(store, *patterns) == expected
    assert time.monotonic() - started < 5, "the glob took seconds: the server's wildcard matcher is looping"


def test_records_of_the_older_layout_refuse_globs(store: RedisStore, redis_url: str) -> None:
    client: Any = redis.Redis.from_url(redis_url)
    key = next(iter(client.scan_iter(match=store.layout.doc_prefix + "*")))
    keys = client.hget(key, KEYS_FIELD).decode().split("\x1f")
    client.hset(key, KEYS_FIELD, "\x1f".join(k for k in keys if k != GLOB_MARK))  # as an older plugin wrote it
    config = DatabaseConfig(provider="redis", connection_string=redis_url, index_name="globs")
    fresh = RedisStore.from_config(config, store.collection)
    try:
        fresh.open(store.spec)
        with pytest.raises(FilterError, match="rebuild it once with: deckhand ingest --force-ingest"):
            _glob(fresh, "*")
        assert _glob_free(fresh) == len(VALUES), "filters without a glob still work"
    finally:
        fresh.close()
        client.close()


def _glob_free(store: RedisStore) -> int:
    where = Filter((condition("v", Op.EXISTS, [True]),))
    return len(store.search(np.ones(4, dtype=np.float32), 50, where=where))
