"""Scripts without an extension are sources: recognised by their ``#!`` line (python, node, bash, ...), chunked
in their language, their lines readable over MCP; a file without extension or ``#!`` (``LICENSE``) is not."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from deckhand.calls.source_reading import SourceReader, file_uri
from deckhand.config import load_agent_config
from deckhand.tools import build_tool

DEPLOY = """#!/usr/bin/env bash
# Ship the build to the server.
set -euo pipefail

# Compile the site into out/.
build() {
  make all
}

# Copy out/ to the host named in DEPLOY_HOST.
upload() {
  build
  rsync -a out/ "$DEPLOY_HOST:/srv/site/"
}

upload "$@"
"""

SERVE = """#!/usr/bin/env node
// Serve the current folder on a port.
function listenOn(port) {
  return require('http').createServer(() => {}).listen(port);
}
listenOn(8080);
"""


def test_scripts_are_read_by_their_shebang(tmp_path: Path, samples: Path, minilm: Any) -> None:
    project = tmp_path / "project"
    (project / "src" / "bin").mkdir(parents=True)
    (project / "src" / "bin" / "deploy").write_text(DEPLOY)
    (project / "src" / "bin" / "serve").write_text(SERVE)
    shutil.copy(samples / "tool", project / "src" / "bin" / "tool")
    (project / "src" / "LICENSE").write_text("Permission is hereby granted, free of charge, to copy the site.\n")
    (project / "agent.yaml").write_text(
        "tools:\n  - {name: scripts, type: vectorstore, source: src, chunker: code, top_k: 3}\n"
    )
    tool = build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)
    report = tool.initialize_sync()
    assert sorted(report.ingested) == ["src/bin/deploy", "src/bin/serve", "src/bin/tool"]
    assert "src/LICENSE" in [s.display for s in report.skipped]
    best = tool.search_results_sync("copy the built site to the remote host with rsync", top_k=1)[0]
    meta = best.metadata
    assert (best.source, meta["symbol"], meta["language"], meta["start_line"]) == (
        "src/bin/deploy",
        "deploy.upload",
        "bash",
        10,
    )
    assert meta["references"] == ["deploy.build"]  # the function it calls
    node = tool.search_results_sync("serve the folder over http on a port", top_k=1)[0]
    assert (node.metadata["symbol"], node.metadata["language"]) == ("serve.listenOn", "javascript")
    reader = SourceReader([("scripts", project / "src", tool)])
    passage = reader.read(file_uri(project / "src" / "bin" / "deploy", meta["start_line"], meta["end_line"]))
    assert passage.text.strip() == best.content
    tool.close()
