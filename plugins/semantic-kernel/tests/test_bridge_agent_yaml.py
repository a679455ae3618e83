"""An agent.yaml written for the original platform, with ``provider: chromadb``, works unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "semantic_kernel", reason="semantic-kernel is not installed: nox -s \"tests(package='semantic-kernel')\""
)
pytest.importorskip("chromadb", reason='chromadb is not installed: pip install "deckhand-ai-semantic-kernel[chromadb]"')

from click.testing import CliRunner
from deckhand.cli.main import cli

AGENT = """\
name: support-agent
description: Customer support agent with knowledge base search
tools:
  - name: search_kb
    description: Search knowledge base for answers to customer questions
    type: vectorstore
    source: knowledge_base/
    database:
      provider: chromadb
      persist_directory: ./data/chromadb
    top_k: 2
    min_similarity_score: 0.2
"""


def test_original_agent_yaml_with_chromadb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    (tmp_path / "knowledge_base").mkdir()
    (tmp_path / "knowledge_base" / "faq.md").write_text(
        "# Passwords\n\nTo reset your password, open Settings, choose Security and press Reset password.\n"
    )
    (tmp_path / "knowledge_base" / "billing.md").write_text(
        "# Billing\n\nInvoices are sent on the first of the month.\n"
    )
    (tmp_path / "agent.yaml").write_text(AGENT)
    runner = CliRunner()
    result = runner.invoke(cli, ["--config", str(tmp_path / "agent.yaml"), "search", "How do I reset my password?"])
    assert result.exit_code == 0, result.output
    first = next(line for line in result.output.splitlines() if line.startswith("[1] "))
    assert first.endswith("| Source: knowledge_base/faq.md:1"), result.output
    assert any((tmp_path / "data" / "chromadb").iterdir()), "the index is in persist_directory, relative to agent.yaml"
    # A second run searches the stored index (nothing to ingest again).
    again = runner.invoke(cli, ["--config", str(tmp_path / "agent.yaml"), "search", "When are invoices sent?"])
    assert again.exit_code == 0, again.output
    assert "0 ingested" in again.output or "ingested" not in again.output, again.output
    first = next(line for line in again.output.splitlines() if line.startswith("[1] "))
    assert first.endswith("| Source: knowledge_base/billing.md:1"), again.output
