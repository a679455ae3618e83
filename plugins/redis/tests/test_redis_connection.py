"""Connecting: failures are quick one-line StoreConnectionErrors with the password masked."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pytest
import redis
from deckhand.config.models import DatabaseConfig
from deckhand.errors import ConfigError, StoreAuthenticationError, StoreConnectionError, StoreError
from deckhand.plugins import PluginRegistry
from deckhand.stores.tool_store import create_store
from deckhand.types import CollectionSpec
from deckhand_redis import RedisStore
from deckhand_redis.hints import SERVER_EXTRA_INSTALL
from deckhand_redis.server import START_COMMAND, RedisServer, free_port
from pydantic import ValidationError

pytestmark = pytest.mark.redis


def test_closed_port_raises_store_connection_error_quickly(caplog: pytest.LogCaptureFixture) -> None:
    url = f"redis://:hunter2secret@127.0.0.1:{free_port()}/0"
    config = DatabaseConfig(provider="redis", connection_string=url)
    caplog.set_level(logging.DEBUG)
    started = time.monotonic()
    with pytest.raises(StoreConnectionError) as info:
        RedisStore.from_config(config, "docs")
    assert time.monotonic() - started < 5.0
    message = str(info.value)
    assert "\n" not in message
    assert "hunter2secret" not in message and "hunter2secret" not in caplog.text
    assert f"redis://:***@127.0.0.1:{url.rsplit(':', 1)[1]}" in message
    # says how to fix it (the launcher test runs START_COMMAND without pytest)
    assert START_COMMAND in message and SERVER_EXTRA_INSTALL in message
    assert isinstance(info.value, ConnectionError)  # what the tool catches to fall back


def test_unresolvable_host_is_a_connection_error() -> None:
    config = DatabaseConfig(
        provider="redis",
        connection_string="redis://:pw123456@no-such-host.invalid:6379",
        options={"connect_timeout": 1},
    )
    with pytest.raises(StoreConnectionError) as info:
        RedisStore.from_config(config, "docs")
    assert "pw123456" not in str(info.value)


def test_wrong_password_is_reported_without_the_password(redis_url: str) -> None:
    with RedisServer() as server:
        RedisStore(server.url, "docs").close()
        client = redis.Redis.from_url(server.url)
        client.config_set("requirepass", "right-password")
        client.close()
        bad = server.url.replace("redis://", "redis://:wrong-password@")
        with pytest.raises(StoreAuthenticationError) as info:
            RedisStore(bad, "docs")
        assert "wrong-password" not in str(info.value)
        assert "***" in str(info.value)
        assert "refused the credentials" in str(info.value)
        # a configuration error (exit 3), not an outage: open_store must not fall back on it
        assert isinstance(info.value, ConfigError) and not isinstance(info.value, ConnectionError)
        with pytest.raises(StoreAuthenticationError, match="check the user name and password"):
            RedisStore(server.url, "docs")  # no password at all: NOAUTH
        good = server.url.replace("redis://", "redis://:right-password@")
        RedisStore(good, "docs").close()


def test_acl_user_without_permission_is_an_authentication_error(redis_url: str) -> None:
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url)
        client.acl_setuser("reader", enabled=True, passwords=["+reader-pass"], commands=["+ping"], keys=["*"])
        client.close()
        url = server.url.replace("redis://", "redis://reader:reader-pass@")
        with pytest.raises(StoreAuthenticationError) as info:
            RedisStore(url, "docs")
        assert "denied connecting: User reader has no permissions to run the 'FT._LIST' command" in str(info.value)
        assert "reader-pass" not in str(info.value)


def test_server_without_search_module_is_a_clear_error() -> None:
    with RedisServer(search=False) as server, pytest.raises(StoreError, match="search module"):
        RedisStore(server.url, "docs")


def test_server_gone_after_open_raises_store_connection_error() -> None:
    with RedisServer() as server:
        store = RedisStore(server.url, "docs")
        store.open(CollectionSpec("docs", 4, "m"))
        server.kill()
        with pytest.raises(StoreConnectionError, match="cannot reach Redis"):
            store.search(np.ones(4, dtype=np.float32), 3)


def test_bad_option_names_the_field(redis_url: str) -> None:
    # deckhand refuses such a database block when it is validated (the plugin registered RedisOptions) ...
    with pytest.raises(ValidationError, match="EF_RUNTIME"):
        DatabaseConfig(provider="redis", connection_string=redis_url, options={"ef_runtime": 0})
    # ... and the store checks its options itself when given an unvalidated one
    config = DatabaseConfig.model_construct(provider="redis", connection_string=redis_url, options={"ef_runtime": 0})
    with pytest.raises(ConfigError, match=r"database\.options\.EF_RUNTIME"):
        RedisStore.from_config(config, "docs")
    config = DatabaseConfig.model_construct(provider="redis", connection_string=redis_url, options={"efruntime": 5})
    with pytest.raises(ConfigError, match="EFRUNTIME"):
        RedisStore.from_config(config, "docs")


def test_collection_name_must_be_key_safe(redis_url: str) -> None:
    with pytest.raises(StoreError, match="collection name"):
        RedisStore(redis_url, "a:b*")


def test_registered_as_provider_redis(redis_url: str) -> None:
    registry = PluginRegistry()
    component = registry.resolve("store", "redis")
    config = DatabaseConfig(provider="redis", connection_string=redis_url, index_name="registry")
    store = create_store(component, config, "docs", base_dir=Path.cwd())
    try:
        assert isinstance(store, RedisStore)
    finally:
        store.close()
