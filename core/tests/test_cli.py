"""The deckhand command line: commands, output formats, --config placement and exit codes."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result
from deckhand.cli.main import cli
from deckhand.cli.snippets import ELLIPSIS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DECKHAND = str(Path(sys.executable).parent / "deckhand")
SUMMARY = re.compile(
    r"^harbor_docs \[sqlite\]: 5 ingested \(5 chunks, \d+ embedded\), 0 unchanged, 0 skipped, 0 removed in "
    r"\d+\.\d\ds$"
)
UNCHANGED = re.compile(
    r"^harbor_docs \[sqlite\]: 0 ingested \(0 chunks, 0 embedded\), 5 unchanged, 0 skipped, 0 removed in \d+\.\d\ds$"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    return tmp_path / "examples"


#: Without a terminal (CliRunner, a pipe) ingestion prints a line per stage before its summary.
STAGES = ["harbor_docs: loading and chunking 5 file(s)", "harbor_docs: embedding chunks"]


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def test_ingest_with_group_and_command_config(project: Path, minilm: object) -> None:
    group = run("--config", str(project / "agent.yaml"), "ingest")
    assert group.exit_code == 0, group.output
    *stages, summary = group.stderr.splitlines()
    assert stages == STAGES and SUMMARY.match(summary), group.stderr
    command = run("ingest", "--config", str(project / "agent.yaml"))
    # the default store persists: the second run finds every file already indexed
    assert command.exit_code == 0 and UNCHANGED.match(command.stderr.splitlines()[-1]), command.stderr
    # the command's --config wins over the group's
    both = run("--config", str(project / "missing.yaml"), "ingest", "-c", str(project / "agent.yaml"))
    assert both.exit_code == 0


def test_default_config_is_cwd_agent_yaml(project: Path, minilm: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    assert run("ingest").exit_code == 0
    monkeypatch.chdir(project.parent)
    missing = run("ingest")
    assert missing.exit_code == 3
    assert missing.stderr == "error: agent.yaml: file not found; pass --config PATH or create agent.yaml\n"


def test_search_text_and_json(project: Path, minilm: object) -> None:
    cfg = str(project / "agent.yaml")
    text = run("-c", cfg, "search", "how do I rotate API keys?")
    assert text.exit_code == 0
    # top_k 3, one shown: the next chunks score under 70% of the best (relative_cutoff)
    assert text.stdout.startswith("Found 1 result(s):\n\n[1] Score: ")
    assert text.stdout.splitlines()[2].endswith("| Source: docs/security.md:1")
    one = run("-c", cfg, "search", "-k", "1", "how do I rotate API keys?")
    assert one.stdout.startswith("Found 1 result(s):") and "[2]" not in one.stdout
    as_json = run("-c", cfg, "search", "--json", "how do I rotate API keys?")
    assert as_json.exit_code == 0
    payload = json.loads(as_json.stdout)
    assert list(payload) == ["harbor_docs"] and len(payload["harbor_docs"]) == 1
    first = payload["harbor_docs"][0]
    # the one result model: a vectorstore result has the place fields too, empty
    assert set(first) == {
        "rank",
        "score",
        "source",
        "chunk_index",
        "content",
        "metadata",
        "location",
        "section_id",
        "section_label",
        "definitions",
        "references",
    }
    assert first["location"] == "" and first["definitions"] == [] and first["references"] == []
    assert (first["rank"], first["source"], first["chunk_index"]) == (1, "docs/security.md", 0)
    assert "Rotate every key at least every 90 days" in first["content"]
    assert as_json.stderr == ""  # --json implies quiet


def test_search_unknown_tool(project: Path) -> None:
    result = run("-c", str(project / "agent.yaml"), "search", "--tool", "nope", "x")
    assert result.exit_code == 3
    assert result.stderr == f"error: {project / 'agent.yaml'}: no tool named nope (tools: harbor_docs)\n"


def test_test_command_reports_hit_rate_and_mrr(project: Path, minilm: object) -> None:
    cfg = str(project / "agent.yaml")
    result = run("-c", cfg, "test")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "== harbor_docs",
        "  hit @ 1  How often should API keys be rotated?",
        "  hit @ 1  What port does the server listen on by default?",
        "  hit @ 1  Which plans include priority support?",
        "harbor_docs: hit@3 3/3 = 1.00, MRR 1.000",
        "hit rate 3/3 = 1.00, MRR 1.000",
    ]
    as_json = json.loads(run("-c", cfg, "test", "--json").stdout)
    assert (as_json["hit_rate"], as_json["mrr"]) == (1.0, 1.0)

    data = yaml.safe_load((project / "agent.yaml").read_text())
    data["tests"].append({"query": "Which plans include priority support?", "expected_sources": ["docs/nope.md"]})
    (project / "agent.yaml").write_text(yaml.safe_dump(data))
    missed = run("-c", cfg, "test")
    assert missed.exit_code == 4
    assert missed.stdout.splitlines()[-3:] == [
        "     MISS  Which plans include priority support?",
        "harbor_docs: hit@3 3/4 = 0.75, MRR 0.750, missed tests[3]",
        "hit rate 3/4 = 0.75, MRR 0.750",
    ]


def test_test_command_per_tool(project: Path, minilm: object) -> None:
    """Each tool gets its own hit@k, MRR and missed cases; --tool runs only the named one."""
    cfg = project / "agent.yaml"
    data = yaml.safe_load(cfg.read_text())
    # a second tool that has only a copy of security.md (sec/docs/security.md matches docs/security.md)
    (project / "sec" / "docs").mkdir(parents=True)
    shutil.copy(project / "docs" / "security.md", project / "sec" / "docs" / "security.md")
    data["tools"].append({"type": "vectorstore", "name": "security_only", "source": "sec/docs", "top_k": 2})
    data["tests"].append(
        {"query": "Who answers vulnerability reports?", "expected_sources": ["security.md"], "tool": "security_only"}
    )
    cfg.write_text(yaml.safe_dump(data))
    both = run("-c", str(cfg), "test")
    assert both.exit_code == 0, both.output
    assert both.stdout.splitlines() == [
        "== harbor_docs",
        "  hit @ 1  How often should API keys be rotated?",
        "  hit @ 1  What port does the server listen on by default?",
        "  hit @ 1  Which plans include priority support?",
        "harbor_docs: hit@3 3/3 = 1.00, MRR 1.000",
        "== security_only",
        "  hit @ 1  How often should API keys be rotated?",
        "     MISS  What port does the server listen on by default?",
        "     MISS  Which plans include priority support?",
        "  hit @ 1  Who answers vulnerability reports?",
        "security_only: hit@2 2/4 = 0.50, MRR 0.500, missed tests[1] tests[2]",
        "hit rate 4/4 = 1.00, MRR 1.000",  # a case counts as found when any tool asked found it
    ]
    report = json.loads(run("-c", str(cfg), "test", "--json").stdout)
    assert report["tools"]["security_only"] == {
        "k": 2,
        "cases": 4,
        "hits": 2,
        "hit_rate": 0.5,
        "mrr": 0.5,
        "ranks": {"0": 1, "1": None, "2": None, "3": 1},
        "missed": [
            {"case": 1, "query": "What port does the server listen on by default?"},
            {"case": 2, "query": "Which plans include priority support?"},
        ],
    }
    assert (report["hit_rate"], report["mrr"], len(report["cases"])) == (1.0, 1.0, 4)

    one = run("-c", str(cfg), "test", "--tool", "security_only")
    assert one.exit_code == 4  # alone, it misses two cases
    assert one.stdout.splitlines()[0] == "== security_only" and "== harbor_docs" not in one.stdout
    assert one.stdout.splitlines()[-1] == "hit rate 2/4 = 0.50, MRR 0.500"
    assert "harbor_docs [" not in one.stderr  # the other tool is not even opened
    data["tests"] = [t for t in data["tests"] if t.get("tool") == "security_only"]
    cfg.write_text(yaml.safe_dump(data))
    none = run("-c", str(cfg), "test", "--tool", "harbor_docs")
    assert none.exit_code == 3
    assert none.stderr == f"error: {cfg}: tests: no case for harbor_docs (each names another tool)\n"


def test_test_command_unknown_tool(project: Path) -> None:
    data = yaml.safe_load((project / "agent.yaml").read_text())
    data["tests"][1]["tool"] = "nope"
    (project / "agent.yaml").write_text(yaml.safe_dump(data))
    result = run("-c", str(project / "agent.yaml"), "test")
    assert result.exit_code == 3
    assert (
        result.stderr == f"error: {project / 'agent.yaml'}: tests[1].tool: no tool named 'nope' (tools: harbor_docs)\n"
    )


def test_test_command_without_cases(project: Path) -> None:
    (project / "agent.yaml").write_text("tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n")
    result = run("-c", str(project / "agent.yaml"), "test")
    assert result.exit_code == 3
    assert result.stderr == f"error: {project / 'agent.yaml'}: tests: no retrieval test cases configured\n"


def test_chat_reads_queries_from_stdin(project: Path, minilm: object) -> None:
    result = run("-c", str(project / "agent.yaml"), "chat", input="how do I rotate API keys?\nport 8420\n\nignored\n")
    assert result.exit_code == 0
    assert result.stdout.count("== harbor_docs\nFound ") == 2  # one answer per query (each up to top_k results)
    assert "ignored" not in result.stdout
    assert (
        "1 tool(s) ready: harbor_docs. Type a query; :help lists the commands; quit, an empty line or Ctrl-D ends."
        in result.stderr
    )
    first_answer = result.stdout.split("== harbor_docs")[1]
    assert "| Source: docs/security.md" in first_answer.splitlines()[3]


def test_plugins_command() -> None:
    text = run("plugins")
    assert text.exit_code == 0
    assert re.search(r"^  store\s+in-memory\s+exact NumPy search", text.stdout, re.M)
    assert re.search(r"^  store\s+sqlite\s+one SQLite file", text.stdout, re.M)
    assert re.search(r"^  embedder\s+minilm\s+all-MiniLM-L6-v2", text.stdout, re.M)
    entries = {e["plugin"]: e for e in json.loads(run("plugins", "--json").stdout)}
    assert entries["deckhand.builtin"]["distribution"] == "deckhand-ai"
    stores = [p for p in entries["deckhand.builtin"]["provides"] if p["kind"] == "store"]
    assert [(p["name"], p["aliases"]) for p in stores] == [
        ("in-memory", ["inmemory", "memory"]),
        ("sqlite", ["sqlite3"]),
    ]


def test_schema_is_valid_json_schema(project: Path) -> None:
    schema = json.loads(run("schema").stdout)
    # The dialect is stated, and it is the one the schema is valid under (validator_for reads $schema).
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert jsonschema.validators.validator_for(schema) is jsonschema.Draft202012Validator
    jsonschema.validators.validator_for(schema).check_schema(schema)
    tool = schema["$defs"]["VectorStoreToolConfig"]["properties"]
    assert {"type", "name", "source", "embedding_model", "database", "top_k", "min_similarity_score"} <= set(tool)
    assert (tool["top_k"]["minimum"], tool["top_k"]["maximum"], tool["top_k"]["default"]) == (1, 100, 5)
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(yaml.safe_load((project / "agent.yaml").read_text()))
    bad = {"tools": [{"type": "vectorstore", "name": "a-b", "source": "x", "top_k": 0}]}
    assert list(validator.iter_errors(bad))  # tools are a union on `type`: one error for the item
    # Against the vectorstore branch of the union, both problems are reported.
    branch = {**schema["$defs"]["VectorStoreToolConfig"], "$defs": schema["$defs"]}
    assert len(list(jsonschema.Draft202012Validator(branch).iter_errors(bad["tools"][0]))) == 2
    global_schema = json.loads(run("schema", "--global").stdout)
    assert global_schema["$schema"] == schema["$schema"]
    jsonschema.validators.validator_for(global_schema).check_schema(global_schema)
    assert "vectorstore" in global_schema["properties"]


@pytest.mark.parametrize(
    ("tool_yaml", "code", "message"),
    [
        ("    source: missing-dir\n", 3, "error: tool 'kb': source path does not exist: {project}/missing-dir\n"),
        (
            "    source: docs\n    top_k: 0\n",
            3,
            "error: {cfg}: tools[0].top_k: Input should be greater than or equal to 1 (got 0)\n",
        ),
        (
            "    source: docs\n    database:\n      provider: redis\n      connection_string: redis://localhost:1\n",
            3,
            "error: no store plugin provides 'redis'",
        ),
    ],
)
def test_config_errors_exit_3(project: Path, tool_yaml: str, code: int, message: str, minilm: object) -> None:
    if "redis" in tool_yaml and "redis" in run("plugins").stdout:
        pytest.skip("a redis store plugin is installed in this environment")
    cfg = project / "agent.yaml"
    cfg.write_text("tools:\n  - type: vectorstore\n    name: kb\n" + tool_yaml)
    result = run("-c", str(cfg), "ingest")
    assert result.exit_code == code
    assert result.stderr.startswith(message.format(project=project, cfg=cfg))


def test_no_supported_files_exit_3(project: Path) -> None:
    (project / "bin").mkdir()
    (project / "bin" / "a.png").write_bytes(b"x")
    cfg = project / "agent.yaml"
    cfg.write_text("tools:\n  - type: vectorstore\n    name: kb\n    source: bin\n")
    result = run("-c", str(cfg), "ingest")
    assert result.exit_code == 3
    assert result.stderr.startswith(f"error: no supported files in {project / 'bin'} (supported: ")


def test_partial_ingest_exit_4(project: Path, minilm: object, caplog: pytest.LogCaptureFixture) -> None:
    (project / "docs" / "blob.txt").write_bytes(b"\x00\x01binary")
    caplog.set_level(logging.WARNING)
    result = run("-c", str(project / "agent.yaml"), "ingest")
    assert result.exit_code == 4
    stages, summary = result.stderr.splitlines()[:-1], result.stderr.splitlines()[-1]
    assert stages == ["harbor_docs: loading and chunking 6 file(s)", "harbor_docs: embedding chunks"]
    assert re.match(r"^harbor_docs \[sqlite\]: 5 ingested .* 0 skipped, 1 failed, 0 removed", summary)
    assert [r.getMessage() for r in caplog.records] == [
        "failed docs/blob.txt: looks binary (contains NUL bytes), not text"
    ]


def test_usage_errors_exit_2() -> None:
    assert CliRunner().invoke(cli, ["search"]).exit_code == 2
    assert CliRunner().invoke(cli, ["ingest", "--bogus"]).exit_code == 2
    assert CliRunner().invoke(cli, ["search", "-k", "0", "x"]).exit_code == 2


def test_real_process_quiet_and_warnings(project: Path) -> None:
    """In a real process: one error line per failed file, skipped files counted in the summary (-v lists them),
    --quiet keeps the errors and drops the rest."""
    (project / "docs" / "blob.txt").write_bytes(b"\x00\x01binary")
    (project / "docs" / "empty.md").write_text("")
    env = {**os.environ, "DECKHAND_THREADS": "1"}
    cfg = str(project / "agent.yaml")
    loud = subprocess.run([DECKHAND, "-c", cfg, "ingest"], capture_output=True, text=True, env=env, timeout=120)
    assert loud.returncode == 4
    assert loud.stdout == ""
    lines = loud.stderr.splitlines()
    assert lines[:3] == [
        "harbor_docs: loading and chunking 7 file(s)",
        "ERROR: failed docs/blob.txt: looks binary (contains NUL bytes), not text",
        "harbor_docs: embedding chunks",
    ]
    assert len(lines) == 4 and lines[3].startswith("harbor_docs [sqlite]: 5 ingested")
    ending = ", 1 skipped (1 empty; -v lists them), 1 failed, 0 removed in "
    assert lines[3].endswith(ending + lines[3].rsplit(" ", 1)[1])
    verbose = subprocess.run(
        [DECKHAND, "-v", "-c", cfg, "ingest"], capture_output=True, text=True, env=env, timeout=120
    )
    assert "INFO deckhand.ingest: skipped docs/empty.md: empty file" in verbose.stderr.splitlines()
    hushed = subprocess.run([DECKHAND, "-q", "-c", cfg, "ingest"], capture_output=True, text=True, env=env, timeout=120)
    assert hushed.returncode == 4
    assert hushed.stderr == "ERROR: failed docs/blob.txt: looks binary (contains NUL bytes), not text\n"
    quiet = subprocess.run(
        [DECKHAND, "-q", "-c", cfg, "search", "-k", "1", "rotate API keys"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert quiet.returncode == 0
    assert quiet.stderr == ""
    assert quiet.stdout.startswith("Found 1 result(s):\n\n[1] Score: ")
    head, passage = quiet.stdout.splitlines()[2:4]
    assert head.endswith("| Source: docs/security.md:1") and "\x1b" not in quiet.stdout  # a pipe: no colours
    assert passage.startswith(ELLIPSIS) and "Rotate every key at least every 90 days" in passage


def test_force_ingest_with_a_persistent_store(project: Path, minilm: object, fresh_registry: None) -> None:
    from _foundation_helpers import SharedStores
    from deckhand.plugins import get_registry

    shared = SharedStores()
    get_registry().register_plugin(shared, "shared")
    cfg = project / "agent.yaml"
    data = yaml.safe_load(cfg.read_text())
    data["tools"][0]["database"] = {"provider": "shared"}
    cfg.write_text(yaml.safe_dump(data))

    first = run("-c", str(cfg), "ingest")
    assert first.exit_code == 0 and "harbor_docs [shared]: 5 ingested (5 chunks, " in first.stderr
    again = run("-c", str(cfg), "ingest")
    assert again.stderr.startswith("harbor_docs [shared]: 0 ingested (0 chunks, 0 embedded), 5 unchanged, 0 skipped")
    (project / "docs" / "security.md").unlink()
    removed = run("-c", str(cfg), "ingest")
    assert removed.stderr.startswith("harbor_docs [shared]: 0 ingested (0 chunks, 0 embedded), 4 unchanged, 0 skipped")
    assert ", 1 removed in " in removed.stderr
    forced = run("-c", str(cfg), "ingest", "--force-ingest")
    assert forced.stderr.splitlines()[:2] == ["harbor_docs: loading and chunking 4 file(s)", STAGES[1]]
    summary = forced.stderr.splitlines()[2]
    assert summary.startswith("harbor_docs [shared]: 4 ingested (4 chunks, 0 embedded), 0 unchanged, 0 skipped")
    assert shared.stores["harbor_docs"].count() == 4
