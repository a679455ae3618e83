"""``deckhand memory`` with the git-memory backend: every subcommand, text and --json, exit codes.

Cross-package (core CLI + plugin), hence in tests/; run in-process with CliRunner.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.cli.main import EXIT_CONFIG, EXIT_ERROR, EXIT_PARTIAL, EXIT_USAGE, cli

pytest.importorskip("deckhand_git_memory")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.name", "CLI Test")
    _git(repo, "config", "user.email", "cli@example.invalid")
    monkeypatch.chdir(repo)
    return repo


def run(*args: str, code: int = 0, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["memory", *args], input=input)
    assert result.exit_code == code, (result.output, result.exception)
    return result.output


def test_store_get_exists_query_search_sync_load(repo: Path) -> None:
    out = run(
        "--agent-id",
        "cli-agent",
        "store",
        "5",
        "2",
        "1",
        "Use PostgreSQL for persistence",
        "--context",
        "issue_id=t49",
        "--json",
    )
    stored = json.loads(out)
    assert stored["coordinate"] == {"x": 5, "y": 2, "z": 1} and stored["agent_id"] == "cli-agent"
    assert stored["issue_context"] == {"issue_id": "t49"}
    assert stored["location"].endswith(".vector-memory/x-005/y-2-z-1.json")
    run("store", "7", "3", "2", "-f", "-", input="Cache sessions in Redis; the database stays PostgreSQL\n")

    got = json.loads(run("get", "5", "2", "1", "--json"))
    assert got["content"] == "Use PostgreSQL for persistence"
    assert "Use PostgreSQL" in run("get", "5", "2", "1")
    assert json.loads(run("get", "6", "2", "1", "--json", code=EXIT_ERROR))["found"] is False
    assert json.loads(run("exists", "5", "2", "1", "--json")) == {
        "coordinate": {"x": 5, "y": 2, "z": 1},
        "exists": True,
    }
    run("exists", "6", "2", "1", code=EXIT_ERROR)

    q = json.loads(run("query", "--x", "1-6", "--json"))
    assert q["count"] == 1 and q["decisions"][0]["coordinate"]["x"] == 5
    q = json.loads(run("query", "--before", "7,3", "--json"))
    assert [d["coordinate"]["x"] for d in q["decisions"]] == [5]
    q = json.loads(run("query", "--before", "7,4", "--z", "2", "--json"))
    assert [d["coordinate"]["x"] for d in q["decisions"]] == [7]
    assert "2 decision(s)" in run("query")

    s = json.loads(run("search", "database", "postgresql", "--json"))
    assert [(r["coordinate"]["x"], r["matched_terms"]) for r in s["results"]] == [(7, 2), (5, 1)]
    s = json.loads(run("search", "redis", "postgresql", "--all", "--json"))
    assert [r["coordinate"]["x"] for r in s["results"]] == [7]

    synced = json.loads(run("sync", "-m", "CLI decisions", "--json"))
    assert synced["count"] == 2 and synced["commit"] == _git(repo, "rev-parse", "HEAD").strip()
    assert _git(repo, "log", "-1", "--format=%s").strip() == "CLI decisions"
    assert "nothing to commit" in run("sync")
    assert json.loads(run("load", "--json")) == {"loaded": 2, "errors": []}


def test_semantic_search(repo: Path) -> None:
    run("store", "1", "1", "2", "Persist orders in PostgreSQL tables")
    run("store", "2", "1", "2", "The settings page uses a dark colour theme")
    s = json.loads(run("search", "--semantic", "-k", "1", "relational", "database", "--json"))
    assert s["mode"] == "semantic" and s["results"][0]["coordinate"]["x"] == 1
    assert 0 < s["results"][0]["score"] <= 1


def test_errors_and_exit_codes(repo: Path) -> None:
    run("store", "5", "2", "1", "first")
    err = run("store", "5", "2", "1", "second", code=EXIT_ERROR)
    assert "immutable architecture layer" in err
    assert "x must be in [1, 1000], got 0" in run("store", "0", "2", "1", "x", code=EXIT_USAGE)
    assert "min 9 is greater than max 2" in run("query", "--x", "9-2", code=EXIT_USAGE)
    assert json.loads(run("store", "1", "1", "2", "", "--json", code=EXIT_USAGE).splitlines()[0])["error"]
    run("store", "1", "1", "2", code=EXIT_USAGE)  # neither CONTENT nor --file
    assert "x_threshold must be in [1, 1001]" in run("query", "--before", "0,1", code=EXIT_USAGE)
    assert "no memory backend plugin provides 'nope'" in run("--backend", "nope", "query", code=EXIT_CONFIG)


def test_corrupt_file_on_load(repo: Path) -> None:
    run("store", "1", "1", "2", "good")
    run("store", "2", "1", "2", "soon broken")
    (repo / ".vector-memory" / "x-002" / "y-1-z-2.json").write_text("{not json")
    out = run("load", "--json", code=EXIT_PARTIAL)
    report = json.loads(out[out.index("{") :])
    assert report["loaded"] == 1 and "x-002/y-1-z-2.json" in report["errors"][0]


def test_corrupt_file_is_reported_once_per_command(repo: Path) -> None:
    """In a real process (the log handler and the command's own output both reach stderr): one line per command."""
    run("store", "1", "1", "2", "good")
    run("store", "2", "1", "2", "soon broken")
    bad = repo / ".vector-memory" / "x-002" / "y-1-z-2.json"
    bad.write_text("{not json")
    deckhand = [os.path.join(os.path.dirname(sys.executable), "deckhand"), "memory"]
    query = subprocess.run([*deckhand, "query"], capture_output=True, text=True, cwd=repo, timeout=120)
    assert query.returncode == 0 and query.stdout.endswith("1 decision(s)\n")
    assert query.stderr.splitlines() == [
        f"warning: {bad}: not a valid decision file (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)); fix or restore it, e.g. git checkout -- <file>"
    ]
    load = subprocess.run([*deckhand, "load"], capture_output=True, text=True, cwd=repo, timeout=120)
    assert load.returncode == EXIT_PARTIAL and load.stderr == ""  # reported once, as the command's result
    assert load.stdout.count(str(bad)) == 1
    quiet = subprocess.run([*deckhand[:-1], "-q", "memory", "query"], capture_output=True, text=True, cwd=repo)
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_sync_skips_decision_files_that_do_not_parse_and_names_them(repo: Path) -> None:
    """A file that fails to parse is never committed: sync commits the others, names it once on stderr, exits 4."""
    run("store", "1", "1", "2", "good")
    run("store", "2", "1", "2", "soon broken")
    bad = repo / ".vector-memory" / "x-002" / "y-1-z-2.json"
    bad.write_text("{not json")
    deckhand = [os.path.join(os.path.dirname(sys.executable), "deckhand"), "memory"]
    sync = subprocess.run([*deckhand, "sync"], capture_output=True, text=True, cwd=repo, timeout=120)
    assert sync.returncode == EXIT_PARTIAL, sync.stderr
    assert sync.stdout.startswith("committed ") and "1 decision at x 1 · y 1 · z 2" in sync.stdout
    assert sync.stderr.splitlines() == [
        f"warning: not committed: {bad}: not a valid decision file (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1)); fix or restore it, e.g. git checkout -- <file>"
    ]
    committed = _git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert committed == [".vector-memory/.gitignore", ".vector-memory/x-001/y-1-z-2.json"]
    out = run("sync", "--json", code=EXIT_PARTIAL)  # the warning on stderr, then the JSON
    again = json.loads(out[out.index("{") :])
    assert again["commit"] is None and again["skipped"] == [
        f"{bad}: not a valid decision file (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)); fix or restore it, e.g. git checkout -- <file>"
    ]
    run("store", "2", "1", "2", "repaired")  # written again whole: committed by the next sync
    fixed = json.loads(run("sync", "--json"))
    assert fixed["skipped"] == [] and fixed["changed"] == [[2, 1, 2]]


def test_agent_config_selects_the_memory(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    agent = tmp_path / "agent.yaml"
    agent.write_text("name: reviewer\nmemory:\n  backend: git\n  path: other\n")
    out = json.loads(run("-c", str(agent), "store", "3", "1", "2", "from config", "--json"))
    assert out["agent_id"] == "reviewer"
    assert (other / ".vector-memory" / "x-003" / "y-1-z-2.json").is_file()
    assert not (repo / ".vector-memory" / "x-003").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("memory:\n  backend: git\n  colour: red\n")
    assert "memory.colour: unknown field" in run("-c", str(bad), "query", code=EXIT_CONFIG)


def test_semantic_cache_stays_out_of_git_status(repo: Path) -> None:
    run("store", "1", "1", "2", "Persist orders in PostgreSQL tables")
    run("search", "--semantic", "database")
    assert (repo / ".deckhand" / "cache" / "embeddings.sqlite").is_file()
    run("sync")
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""
