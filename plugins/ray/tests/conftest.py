"""Fixtures of the ray executor's tests: one local Ray for the whole module (2 CPUs, no dashboard), a corpus,
and the PostgreSQL and Redis servers of those plugins' own fixtures."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from deckhand_postgres.testing import postgres_url  # noqa: F401
from deckhand_redis.testing import redis_url  # noqa: F401

#: Files of the test corpus: ~100 small documents on a handful of topics, a few long enough for several chunks.
FILES = 96
TOPICS = ["keys", "ports", "billing", "backups", "logs", "tokens", "quotas", "regions", "alerts", "exports", "users"]


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """One local Ray for the session (2 CPUs, no dashboard); its address, for drivers in other processes."""
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        _node_ip_address="127.0.0.1",
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source every test ingests: markdown files with headings, a few with several sections."""
    docs = tmp_path_factory.mktemp("corpus") / "docs"
    docs.mkdir()
    for i in range(FILES):
        topic = TOPICS[i % len(TOPICS)]
        sections = 30 if i % 17 == 0 else 1
        body = "".join(
            f"## {topic.title()} part {s}\n\nHow {topic} work in Harbor region {i % 5}, note {i}.{s}: "
            f"{'rotate and audit ' * (3 + i % 4)}{topic} every {i + s} days.\n\n"
            for s in range(sections)
        )
        (docs / f"{topic}-{i:03d}.md").write_text(f"# {topic.title()} {i}\n\n{body}")
    return docs
