"""A running ``deckhand mcp --http`` over Redis searches what a Ray run ingested meanwhile, with no restart:
the actors write the store the server reads (docs/scaling.md, "Replicas of ``deckhand mcp --http``")."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from deckhand.testing.mcp_client import HttpServerProcess, call, per_request_client


def test_a_ray_ingest_is_searched_by_a_running_server(tmp_path: Path, ray_address: str, redis_url: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for topic in ("keys", "ports", "billing"):
        (docs / f"{topic}.md").write_text(f"# {topic.title()}\n\nHow {topic} work in Harbor.\n")
    config = tmp_path / "agent.yaml"
    config.write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: docs/\n"
        f"    database: {{provider: redis, connection_string: '{redis_url}', index_name: ray_mcp_replica}}\n"
    )
    env = {**os.environ, "DECKHAND_HOME": str(tmp_path / "home"), "RAY_ADDRESS": ray_address}
    server = HttpServerProcess(["mcp", "-c", str(config), "--http", "127.0.0.1:0"], env=env, cwd=tmp_path)
    try:
        assert "kb [redis]: 3 ingested" in server.wait_for("kb [redis]: ")
        (docs / "quay.md").write_text("# Quays\n\nThe quay walls are inspected yearly by the harbour master.\n")
        deckhand = str(Path(sys.executable).parent / "deckhand")
        ray_run = subprocess.run(
            [deckhand, "-c", str(config), "ingest", "--executor", "ray"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert ray_run.returncode == 0 and "1 ingested (1 chunks, 1 embedded), 3 unchanged" in ray_run.stderr

        async def search() -> list[str]:
            async with per_request_client(server.url) as client:
                found = await call(client, "kb", {"query": "How often are quay walls inspected?", "top_k": 1})
            assert found["isError"] is False, found["text"]
            return [hit["source"] for hit in found["structuredContent"]["results"]]

        assert asyncio.run(search()) == ["docs/quay.md"]
    finally:
        server.stop()
