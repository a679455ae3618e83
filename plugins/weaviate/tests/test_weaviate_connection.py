"""Without a server: unreachable endpoints fail fast in one line naming the URL and the fix, secrets masked;
tools and the CLI fall back to the in-memory store as the fallback policy says; the plugin is registered."""

from __future__ import annotations

import http.server
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from deckhand.api import NativeHybridSearch, NativeKeywordSearch, StoreCapability, store_capabilities
from deckhand.cli.main import cli
from deckhand.config.models import DatabaseConfig
from deckhand.errors import StoreAuthenticationError, StoreConnectionError, StoreError
from deckhand.install_hints import install_command, install_hint
from deckhand.plugins import PluginRegistry
from deckhand.stores.tool_store import create_store
from deckhand_weaviate.connection import FIX, Redactor, connection_error
from deckhand_weaviate.options import WeaviateOptions
from deckhand_weaviate.store import WeaviateStore

KEY = "wv-Secret-Key-7c1d"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def closed_url() -> str:
    return f"http://127.0.0.1:{_free_port()}"


def _closed_options() -> WeaviateOptions:
    return WeaviateOptions(api_key=KEY, grpc_port=_free_port())


def test_closed_port_is_a_quick_one_line_connection_error(closed_url: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    began = time.monotonic()
    with pytest.raises(StoreConnectionError) as info:
        WeaviateStore(closed_url, "kb", options=_closed_options())
    assert time.monotonic() - began < 5
    message = str(info.value)
    assert message.startswith(f"cannot reach Weaviate at {closed_url} (gRPC 127.0.0.1:")
    assert message.endswith(FIX) and "\n" not in message
    assert KEY not in message and KEY not in caplog.text


def test_unroutable_host_gives_up_within_connect_timeout() -> None:
    # 192.0.2.0/24 (TEST-NET-1) is never routed: the attempt hangs until the client's init timeout.
    began = time.monotonic()
    with pytest.raises(StoreConnectionError, match=r"cannot reach Weaviate at http://192\.0\.2\.1:8080"):
        WeaviateStore("http://192.0.2.1:8080", "kb", options=WeaviateOptions(connect_timeout=1))
    assert time.monotonic() - began < 10


def test_a_server_that_is_not_weaviate(tmp_path: Path) -> None:
    """Something else answers on the port (a plain web server): a one-line error, not a traceback."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with pytest.raises(StoreError) as info:
            WeaviateStore(f"http://127.0.0.1:{server.server_port}", "kb", options=_closed_options())
        assert "\n" not in str(info.value) and KEY not in str(info.value)
        assert f"Weaviate at http://127.0.0.1:{server.server_port}" in str(info.value)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_refused_credentials_are_an_authentication_error_without_the_key() -> None:
    import httpx
    from weaviate.exceptions import UnexpectedStatusCodeError

    response = httpx.Response(
        401,
        json={"error": [{"message": f"anonymous access not enabled; key {KEY} rejected"}]},
        request=httpx.Request("GET", "http://h:8080/v1/meta"),
    )
    exc = UnexpectedStatusCodeError("Meta endpoint", response)
    error = connection_error(exc, "http://h:8080 (gRPC h:50051)", Redactor("http://h:8080", KEY))
    assert isinstance(error, StoreAuthenticationError)
    assert KEY not in str(error) and "***" in str(error) and "database.options.api_key" in str(error)


def test_redactor_masks_url_secrets_and_the_key() -> None:
    scrub = Redactor("http://h:8080", KEY)
    assert scrub(f"bad key {KEY}\n  at https://u:pw@x/?api_key=zzz") == "bad key *** at https://u:***@x/?api_key=***"


def test_declared_capabilities_and_protocols() -> None:
    assert store_capabilities(WeaviateStore) == {
        StoreCapability.PERSISTENT,
        StoreCapability.KEYWORD_SEARCH,
        StoreCapability.HYBRID_SEARCH,  # one capability mechanism: hybrid_search() is declared, not probed
    }
    assert StoreCapability.CONCURRENT_PROCESSES not in store_capabilities(WeaviateStore)
    # runtime_checkable protocols check methods by name: the class has both (the kit checks that they work).
    assert callable(WeaviateStore.keyword_search) and callable(WeaviateStore.hybrid_search)
    assert {"keyword_search"} <= set(dir(NativeKeywordSearch)) and {"hybrid_search"} <= set(dir(NativeHybridSearch))


def test_registered_as_provider_weaviate() -> None:
    registry = PluginRegistry()
    component = registry.resolve("store", "weaviate")
    assert component.options is WeaviateOptions and component.url_schemes == ("http://", "https://")
    assert registry.plugin_distributions()[component.plugin][0] == "deckhand-ai-weaviate"
    assert install_hint("store", "weaviate") == f"install it with: {install_command('deckhand-ai[weaviate]')}"


def test_factory_error_names_the_url_and_the_fix(closed_url: str) -> None:
    registry = PluginRegistry()
    config = DatabaseConfig(provider="weaviate", connection_string=closed_url, options={"api_key": KEY})
    with pytest.raises(StoreConnectionError) as info:
        create_store(registry.resolve("store", "weaviate"), config, "kb", base_dir=Path.cwd())
    assert closed_url in str(info.value) and KEY not in str(info.value)


# -- the fallback, through the CLI ----------------------------------------------------------
def _agent(tmp_path: Path, url: str, **database: object) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    (docs / "tides.md").write_text("# Tides\n\nSpring tides follow the full and the new moon.\n")
    config = tmp_path / "agent.yaml"
    db = {"provider": "weaviate", "connection_string": url, "options": {"api_key": "${WEAVIATE_API_KEY}"}, **database}
    config.write_text(
        yaml.safe_dump({"tools": [{"type": "vectorstore", "name": "harbour", "source": "docs", "database": db}]})
    )
    return config


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("WEAVIATE_API_KEY", KEY)
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    yield tmp_path


def test_unreachable_server_fails_ingest_unless_fallback_is_allowed(
    cli_env: Path, closed_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = _agent(cli_env, closed_url)
    refused = _run("-c", str(config), "ingest")
    assert refused.exit_code == 1
    assert refused.stderr.startswith(
        f"error: tool harbour: cannot reach Weaviate at {closed_url} (gRPC 127.0.0.1:50051)"
    )
    assert FIX in refused.stderr
    assert refused.stderr.count("\n") == 1 and KEY not in refused.stderr

    allowed = _run("-c", str(config), "ingest", "--allow-fallback")
    assert allowed.exit_code == 0, allowed.stderr
    assert "falling back to the in-memory store for this run" in caplog.text
    assert "harbour [in-memory]: 1 ingested" in allowed.stderr

    searched = _run("-c", str(config), "search", "spring tides")  # interactive commands fall back by default
    assert searched.exit_code == 0 and "Source: docs/tides.md" in searched.stdout
    strict = _run("-c", str(config), "search", "--no-fallback", "spring tides")
    assert strict.exit_code == 1 and strict.stderr.startswith("error: tool harbour: cannot reach Weaviate at")
    assert KEY not in caplog.text + allowed.stderr + searched.stdout + searched.stderr + strict.stderr
