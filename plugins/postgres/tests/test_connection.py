"""Start-up behaviour: unreachable servers, bad passwords, a missing pgvector, config and redaction."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import psycopg
import pytest
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ConfigError, StoreAuthenticationError, StoreConnectionError, StoreError
from deckhand.plugins import PluginRegistry
from deckhand.stores.tool_store import create_store
from deckhand.types import CollectionSpec, FileState, Metric, Record
from deckhand_postgres import PostgresOptions, PostgresStore
from deckhand_postgres.redact import redact_url
from deckhand_postgres.server import free_port

pytestmark = pytest.mark.postgres

SECRET = "s3cr3t-Pa55word"


def _with_password(url: str, password: str) -> str:
    parts = urlsplit(url)
    return f"postgresql://{parts.username}:{password}@{parts.hostname}:{parts.port}{parts.path}"


def test_closed_port_raises_store_connection_error_quickly() -> None:
    url = f"postgresql://deckhand:{SECRET}@127.0.0.1:{free_port()}/vectors"
    began = time.monotonic()
    with pytest.raises(StoreConnectionError) as info:
        PostgresStore(url, "docs")
    elapsed = time.monotonic() - began
    message = str(info.value)
    assert elapsed < 5, f"connection failure took {elapsed:.1f}s"
    assert SECRET not in message
    assert "postgresql://deckhand:***@127.0.0.1" in message
    assert "check that the server is running" in message
    assert "\n" not in message, "the error must be one line"


def test_unroutable_host_times_out_within_connect_timeout() -> None:
    # 192.0.2.0/24 is TEST-NET-1: never routed, so the connect attempt hangs until the timeout.
    url = f"postgresql://deckhand:{SECRET}@192.0.2.1:5432/vectors"
    began = time.monotonic()
    with pytest.raises(StoreConnectionError) as info:
        PostgresStore(url, "docs", options=PostgresOptions(connect_timeout=2))
    assert time.monotonic() - began < 8
    assert SECRET not in str(info.value)


def test_wrong_password_is_an_authentication_error_without_the_password(postgres_url: str) -> None:
    """A refused login is a configuration error (the CLI exits 3), never a reason to fall back to in-memory."""
    url = _with_password(postgres_url, SECRET)
    with pytest.raises(StoreAuthenticationError) as info:
        PostgresStore(url, "docs")
    message = str(info.value)
    assert SECRET not in message
    assert "password authentication failed" in message
    assert ":***@" in message
    assert "check the user name, password and database in connection_string" in message
    assert not isinstance(info.value, ConnectionError)  # what open_store falls back on
    assert isinstance(info.value, ConfigError)


def test_unknown_database_is_an_authentication_error(postgres_url: str) -> None:
    url = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(StoreAuthenticationError, match='database "no_such_database" does not exist'):
        PostgresStore(url, "docs")


def test_missing_privilege_is_an_authentication_error(postgres_url: str) -> None:
    """A role that may log in but not create tables: the store says which grant is missing."""
    role = f"reader_{uuid.uuid4().hex[:8]}"
    schema = f"locked_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'")
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(f"ALTER ROLE {role} SET search_path = {schema}, public")
        admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
    parts = urlsplit(postgres_url)
    url = f"postgresql://{role}:{SECRET}@{parts.hostname}:{parts.port}{parts.path}"
    store = PostgresStore(url, "docs")
    try:
        with pytest.raises(StoreAuthenticationError) as info:
            store.open(CollectionSpec(name="docs", dimension=4, embedding_model="m"))
    finally:
        store.close()
    assert "permission denied" in str(info.value)
    assert SECRET not in str(info.value)


def test_missing_extension_that_cannot_be_created(postgres_url: str) -> None:
    role = f"plain_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{SECRET}'")
        admin.execute(f"CREATE DATABASE {role} OWNER {role}")
    parts = urlsplit(postgres_url)
    url = f"postgresql://{role}:{SECRET}@{parts.hostname}:{parts.port}/{role}"
    try:
        with pytest.raises(StoreError) as info:
            PostgresStore(url, "docs")
        message = str(info.value)
        assert not isinstance(info.value, StoreConnectionError)
        assert "pgvector extension is not installed" in message
        assert "CREATE EXTENSION vector" in message
        assert SECRET not in message
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {role} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_extension_is_created_when_missing(postgres_url: str) -> None:
    name = f"fresh_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        store = PostgresStore(url, "docs")
        store.open(CollectionSpec("docs", 4, "m"))
        store.upsert([Record("a_chunk_0", "a", 0, "x", np.ones(4, dtype=np.float32))])
        assert store.count() == 1
        store.close()
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_password_never_logged(postgres_url: str, caplog: pytest.LogCaptureFixture) -> None:
    password = urlsplit(postgres_url).password
    assert password, "the test server's URL carries a password"
    caplog.set_level(logging.DEBUG)
    store = PostgresStore(postgres_url, f"logs_{uuid.uuid4().hex[:8]}", index_name="redaction")
    try:
        store.open(CollectionSpec(store.collection, 3, "m", Metric.L2))
        store.replace_source(
            "a.md",
            [Record("a.md_chunk_0", "a.md", 0, "x", np.ones(3, dtype=np.float32))],
            FileState("a.md", 1.0, 1, "h", "m", 1),
        )
        with pytest.raises(StoreError) as info:
            store.search(np.ones(5, dtype=np.float32), 3)
        assert password not in str(info.value)
        store.drop()
    finally:
        store.close()
    text = "\n".join(f"{r.name}: {r.getMessage()}" for r in caplog.records)
    assert "connected to postgresql://postgres:***@" in text, "the redacted URL is logged"
    assert password not in text


def test_redact_url_forms() -> None:
    assert redact_url(f"postgresql://u:{SECRET}@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact_url(f"postgresql://u@h/db?password={SECRET}&sslmode=require") == (
        "postgresql://u@h/db?password=***&sslmode=require"
    )
    assert redact_url("postgresql://h/db") == "postgresql://h/db"
    assert redact_url("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db"


def test_factory_through_the_plugin_registry(postgres_url: str) -> None:
    registry = PluginRegistry()
    component = registry.resolve("store", "postgres")
    config = DatabaseConfig(
        provider="postgres",
        connection_string=postgres_url,
        index_name="via_registry",
        distance_metric="IP",
        options={"M": 8, "ef_search": 64, "pool_max_size": 2},
    )
    store = create_store(component, config, "kb", base_dir=Path.cwd())
    try:
        assert isinstance(store, PostgresStore)
        assert store.options.m == 8 and store.options.ef_search == 64
        assert store.names.data == "via_registry_c_kb"
    finally:
        store.close()


def test_bad_option_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"database\.options\.ef_serach"):
        PostgresOptions.parse({"ef_serach": 10})
    with pytest.raises(ConfigError, match=r"database\.options\.M"):
        PostgresOptions.parse({"M": 1})


def test_hnsw_refuses_more_than_2000_dimensions(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, "wide", index_name="limits")
    try:
        with pytest.raises(StoreError, match="vector_algorithm: FLAT"):
            store.open(CollectionSpec("wide", 3072, "m"))
    finally:
        store.close()
