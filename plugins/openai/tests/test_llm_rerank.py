"""The ``llm`` reranker: configuration, against a local stand-in for an OpenAI-compatible endpoint, the
reranker kit, and reranking in both tool types."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from _chat_server import ChatServer, serve_chat
from click.testing import CliRunner
from deckhand.api import ConfigError, RerankerBase, RerankError
from deckhand.cli.main import cli
from deckhand.config.loading import load_agent_config
from deckhand.config.schema import agent_schema
from deckhand.plugins import PluginRegistry
from deckhand.testing.kits import RerankerTests
from deckhand.testing.legal_corpus import write_legal_corpus
from deckhand.tools import build_tool
from deckhand.tools.hierarchical_tool import HierarchicalDocumentTool
from deckhand.tools.source_tool import SourceTool
from deckhand_openai.llm_rerank import LLMReranker, LLMRerankerOptions

# Random-looking: deckhand masks every 4-character piece of a key in all output (a key spelling
# "rerank" would mask that word in the messages this file reads).
SECRET = "sk-Rq8vLw3nXz6pJt2m"
KEY_ENV = "DECKHAND_TEST_RERANK_KEY"
QUERY = "what happens to an operator who breaches the general duty"


@pytest.fixture
def legal_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with docs/act.md, docs/guide.md and an isolated deckhand state dir."""
    monkeypatch.setenv("DECKHAND_HOME", str(tmp_path / ".state"))
    return write_legal_corpus(tmp_path)


def _grade(prompt: str) -> str:
    """The stand-in's judgement: passages about penalties are relevant, the rest are not."""
    passage = prompt.split("<passage>", 1)[1]
    return "Relevance: 9" if "fine of 500 units" in passage else "1"


@pytest.fixture
def grader() -> Iterator[ChatServer]:
    with serve_chat(ChatServer(reply=_grade)) as state:
        yield state


def _config(project: Path, tool_type: str, reranker: str) -> Path:
    (project / "agent.yaml").write_text(
        f"name: legal\ntools:\n  - name: act\n    type: {tool_type}\n    source: ./docs\n"
        f"    reranker: {reranker}\n    rerank_top_n: 5\n"
        # every candidate the reranker grades is shown: no floor, cutoff or per-file limit
        "    min_similarity_score: 0\n    relative_cutoff: 0\n    max_results_per_source: null\n",
        encoding="utf-8",
    )
    return project / "agent.yaml"


def _tool(project: Path, tool_type: str, reranker: str) -> SourceTool:
    config = load_agent_config(_config(project, tool_type, reranker))
    tool = build_tool(config.tools[0], base_dir=project)
    assert isinstance(tool, SourceTool)
    tool.initialize_sync()
    return tool


def _llm(server: ChatServer, **extra: object) -> str:
    options = {"name": "llm", "base_url": server.url, "model": "judge", "api_key_env": KEY_ENV, "backoff_s": 0.01}
    options.update(extra)
    return json.dumps(options)


# --- configuration ----------------------------------------------------------------------------


def test_reranker_is_a_plugin_kind_in_plugins_and_schema() -> None:
    registry = PluginRegistry()
    component = registry.resolve("reranker", "llm")
    assert component.plugin == "openai" and component.options is LLMRerankerOptions
    listed = CliRunner().invoke(cli, ["plugins"])
    assert listed.exit_code == 0 and "reranker          llm" in listed.output
    for model in ("HierarchicalDocumentToolConfig", "VectorStoreToolConfig"):
        properties = agent_schema(registry)["$defs"][model]["properties"]
        field = properties["reranker"]
        assert {"type": "null"} in field["anyOf"] and field["default"] is None
        assert {"type": "string", "enum": ["bert-cross-encoder", "llm"]} in field["anyOf"]
        llm = next(form for form in field["anyOf"] if form.get("title") == "reranker 'llm'")
        assert {"base_url", "model", "api_key_env", "prompt"} <= set(llm["properties"])
        assert properties["rerank_top_n"]["default"] == 20


@pytest.mark.parametrize(
    ("reranker", "message"),
    [
        ("nope", "tools[0].reranker: no reranker plugin provides 'nope'"),
        (
            '{name: llm, model: m, base_url: "ftp://x"}',
            "reranker.base_url: base_url must start with http:// or https://",
        ),
        ("{name: llm, model: m, base_url: 'http://h/v1', modle: x}", "tools[0].reranker.modle: unknown option"),
        ("{name: llm, base_url: 'http://h/v1'}", "tools[0].reranker.model"),
        ("{name: llm, model: m, base_url: 'http://h/v1', prompt: 'rate {passage}'}", "{query} and {passage}"),
    ],
)
def test_bad_reranker_settings_name_the_field(tmp_path: Path, reranker: str, message: str) -> None:
    (tmp_path / "docs").mkdir()
    with pytest.raises(ConfigError) as raised:
        load_agent_config(_config(tmp_path, "hierarchical_document", reranker))
    assert message in str(raised.value)


def test_missing_api_key_is_one_clear_error_when_the_tool_opens(
    legal_corpus: Path, grader: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"environment variable {KEY_ENV} is not set; export it"):
        _tool(legal_corpus, "hierarchical_document", _llm(grader))


# --- the llm reranker against the stand-in ----------------------------------------------------


def test_llm_reranker_grades_each_passage(grader: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    reranker = LLMReranker(LLMRerankerOptions(base_url=grader.url, model="judge", api_key_env=KEY_ENV))
    scores = reranker.rerank("penalties", ["a fine of 500 units", "water in the morning", "x" * 5000])
    assert scores == [0.9, 0.1, 0.1]
    assert len(grader.requests) == 3 == reranker.requests_sent
    body = grader.requests[0]
    assert body["model"] == "judge" and body["temperature"] == 0.0
    prompt = body["messages"][0]["content"]
    assert "<query>\npenalties\n</query>" in prompt and "Answer with the number only." in prompt
    assert all(h["authorization"] == f"Bearer {SECRET}" for h in grader.headers)
    assert max(len(r["messages"][0]["content"]) for r in grader.requests) < 4000 + len(prompt)  # passages are cut
    reranker.close()


def test_llm_reranker_without_authentication_sends_no_key(
    tmp_path: Path, grader: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    (tmp_path / "docs").mkdir()
    config = load_agent_config(_config(tmp_path, "vectorstore", _llm(grader, api_key_env=None)))
    found = config.tools[0].reranker_component(PluginRegistry())  # type: ignore[union-attr]
    assert found is not None
    component, options = found
    assert component.create(tmp_path, options=options).rerank("q", ["a fine of 500 units"]) == [0.9]
    assert "authorization" not in grader.headers[0]


def test_llm_reranker_retries_then_fails_as_a_whole(grader: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    options = LLMRerankerOptions(base_url=grader.url, model="judge", api_key_env=None, backoff_s=0.01, max_retries=1)
    grader.failures = [500, 429]
    assert LLMReranker(options).rerank("q", ["a fine of 500 units", "other"]) == [0.9, 0.1]
    grader.always_status = 503
    with pytest.raises(RerankError, match=r"2 of 2 passages got no grade .* \(HTTP 503, after 2 attempts\)"):
        LLMReranker(options).rerank("q", ["a", "b"])
    grader.always_status = None
    grader.reply = lambda prompt: "I cannot say."
    with pytest.raises(RerankError, match="is not a grade from 0 to 10"):
        LLMReranker(options).rerank("q", ["a"])


def _tide_grade(prompt: str) -> str:
    """The stand-in model's judgement for the kit's passages: a passage about the tide is relevant."""
    return "Relevance: 9" if "tide" in prompt.split("<passage>", 1)[1] else "1"


class TestLLMReranker(RerankerTests):
    @pytest.fixture
    def reranker(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[RerankerBase]:
        monkeypatch.setenv(KEY_ENV, SECRET)
        with serve_chat(ChatServer(reply=_tide_grade)) as server:
            options = {"base_url": server.url, "model": "judge", "api_key_env": KEY_ENV}
            yield PluginRegistry().resolve("reranker", "llm").create(None, options=options, validate=True)


# --- in the tools -----------------------------------------------------------------------------


@pytest.mark.parametrize("tool_type", ["hierarchical_document", "vectorstore"])
def test_tools_reorder_their_best_candidates(
    legal_corpus: Path, grader: ChatServer, monkeypatch: pytest.MonkeyPatch, tool_type: str
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    tool = _tool(legal_corpus, tool_type, _llm(grader))
    results = tool.search_results_sync(QUERY, 3)
    assert "fine of 500 units" in results[0].content and results[0].score == 0.9
    assert [r.score for r in results[1:]] == [0.1] * (len(results) - 1) and len(results) == min(3, tool.document_count)
    assert len(grader.requests) == min(5, tool.document_count)  # rerank_top_n candidates, each graded once
    if isinstance(tool, HierarchicalDocumentTool):
        assert results[0].modalities["rerank"].score == 0.9
        passage = grader.requests[0]["messages"][0]["content"].split("<passage>", 1)[1]
        assert passage.lstrip().startswith("Widget Safety Act > ")  # the reranker reads where the chunk is
        # a section reference keeps its section first whatever the reranker says
        assert tool.search_results_sync("§ 2.1", 3)[0].section_id == "2.1"


def test_a_failing_reranker_keeps_the_fused_order(
    legal_corpus: Path, grader: ChatServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    plain = _tool(legal_corpus, "hierarchical_document", "null")
    expected = [(r.source, r.chunk_index, r.score) for r in plain.search_results_sync(QUERY, 4)]
    plain.close()
    tool = _tool(legal_corpus, "hierarchical_document", _llm(grader, max_retries=0))
    grader.always_status = 500
    with caplog.at_level(logging.WARNING, logger="deckhand"):
        results = tool.search_results_sync(QUERY, 4)
    assert [(r.source, r.chunk_index, r.score) for r in results] == expected
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("tool act: reranker llm failed, results keep their fused order: llm reranker: ")
    assert SECRET not in caplog.text
