"""Pytest fixtures for a live Weaviate (needs pytest): ``$WEAVIATE_URL`` or a skip saying why.

No Weaviate server can be started by the test suite: no package registry ships its binary, and
the client's embedded mode downloads one at run time. Set ``WEAVIATE_URL`` (REST endpoint,
e.g. ``http://localhost:8080``; gRPC is expected on port 50051, or ``WEAVIATE_GRPC_PORT``;
``WEAVIATE_API_KEY`` when the server wants a key) to run the live tests.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

#: The variables the live tests read.
ENV_URL = "WEAVIATE_URL"
ENV_GRPC_PORT = "WEAVIATE_GRPC_PORT"
ENV_API_KEY = "WEAVIATE_API_KEY"
#: Why the live tests skip without a server.
SKIP_REASON = (
    f"no Weaviate server: set {ENV_URL}=http://host:8080 to run the live tests (no package registry ships a "
    "Weaviate binary, and embedded mode downloads one, so the suite cannot start one itself)"
)


def live_options() -> dict[str, Any]:
    """``database.options`` for the live server named by the environment (the key as the ``${VAR}`` gives it)."""
    options: dict[str, Any] = {}
    if os.environ.get(ENV_GRPC_PORT):
        options["grpc_port"] = int(os.environ[ENV_GRPC_PORT])
    if os.environ.get(ENV_API_KEY):
        options["api_key"] = os.environ[ENV_API_KEY]
    return options


@pytest.fixture(scope="session")
def weaviate_url() -> str:
    """``$WEAVIATE_URL``; the test is skipped (with the reason) when it is not set."""
    url = os.environ.get(ENV_URL)
    if not url:
        pytest.skip(SKIP_REASON)
    return url
