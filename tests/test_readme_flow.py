"""The README flow on examples/, in real processes: search from the repository root, then the retrieval tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DECKHAND = str(Path(sys.executable).parent / "deckhand")


def test_examples_search_and_test(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    env = {k: v for k, v in os.environ.items() if k != "DECKHAND_PLUGINS"}
    env.update(HOME=str(tmp_path / "home"), DECKHAND_HOME=str(tmp_path / "state"), DECKHAND_THREADS="1")

    def deckhand(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([DECKHAND, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)

    search = deckhand("--config", "examples/agent.yaml", "search", "how do I rotate API keys?")
    assert search.returncode == 0, search.stderr
    lines = search.stdout.splitlines()
    assert lines[0] == "Found 1 result(s):"  # the next chunks score under 70% of the best (relative_cutoff)
    assert lines[2].startswith("[1] Score: ") and lines[2].endswith(" | Source: docs/security.md:1")
    assert "Rotate every key at least every 90 days" in lines[3] and "\x1b" not in search.stdout
    assert "harbor_docs [sqlite]: 5 ingested (5 chunks, 5 embedded)" in search.stderr
    assert not (tmp_path / "examples" / ".deckhand").exists()  # state went to DECKHAND_HOME
    assert (tmp_path / "state" / "cache" / "embeddings.sqlite").is_file()
    assert (tmp_path / "state" / "index" / "deckhand_vectors.sqlite").is_file()  # the default store persists

    tests = deckhand("--config", "examples/agent.yaml", "test")
    assert tests.returncode == 0, tests.stderr
    assert tests.stdout.splitlines()[-1] == "hit rate 3/3 = 1.00, MRR 1.000"
    # a second process finds the index the first one wrote: nothing is re-ingested
    assert "harbor_docs [sqlite]: 0 ingested (0 chunks, 0 embedded), 5 unchanged" in tests.stderr

    # The README's first command again: the index is opened as it is, nothing is walked or embedded.
    again = deckhand("--config", "examples/agent.yaml", "search", "how do I rotate API keys?")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[:3] == lines[:3]
    assert "harbor_docs [sqlite]: index opened (5 chunks; not checked for changes: --refresh checks)" in (again.stderr)


def test_the_readme_leads_to_scale() -> None:
    """A reader outgrowing one machine finds the way: migrate, --shard and docs/scaling.md, in a Scaling section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Scaling\n", 1)[1].split("\n## ", 1)[0]
    for needed in ("deckhand migrate --to", "deckhand ingest --shard I/N", "(docs/scaling.md)", "(docs/cli.md)"):
        assert needed in section, needed
    assert "Without a scheduler: `--shard I/N`\n" in (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")


def test_the_readme_gives_a_newcomer_what_they_need(tmp_path: Path) -> None:
    """A minimal config before the full one (and it loads), `--refresh`, every command, the write tools, the plugin
    the memory example needs, and where "the contract" is defined."""
    from deckhand.config import load_agent_config

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    configuration = readme.split("\n## Configuration\n", 1)[1]
    minimal, full = (b for b in configuration.split("```yaml\n")[1:3])
    minimal = minimal.split("```", 1)[0]
    assert len(minimal.splitlines()) < len(full.split("```", 1)[0].splitlines()) / 3
    (tmp_path / "data" / "docs").mkdir(parents=True)
    (tmp_path / "agent.yaml").write_text(minimal)
    assert load_agent_config(tmp_path / "agent.yaml").tools[0].name == "knowledge_base"
    for needed in ("--refresh", "deckhand migrate --to", "deckhand eval --beir", "deckhand memory", "deckhand_add",
                   "deckhand_delete", "(docs/contract.md)"):  # fmt: skip
        assert needed in readme, needed
    memory = readme.split("\n### Long-term memory\n", 1)[1].split("\n### ", 1)[0]
    assert "pip install ./plugins/git-memory" in memory and "deckhand memory store" in memory
    assert (ROOT / "docs" / "contract.md").is_file()
