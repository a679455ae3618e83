"""What a person sees of a result: the best passage, the query's terms marked, path:line, --full."""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from deckhand.cli.main import cli
from deckhand.cli.results_view import Output, results_text, where
from deckhand.cli.snippets import ELLIPSIS, Segment, code_snippet, highlighted, snippet
from deckhand.ingest.lines import with_start_lines
from deckhand.tools.hierarchical_results import (
    DefinitionRef,
    HierarchicalSearchResult,
    SectionRef,
    format_hierarchical_results,
)
from deckhand.tools.tool_io import SearchResult
from deckhand.types import Chunk
from rich.console import Console

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILLER = " ".join(f"word{i}" for i in range(120))  # 120 words that match nothing


def marked(segments: list[Segment]) -> str:
    """The snippet with its hits in [brackets], to compare in one string."""
    return "".join(f"[{s.text}]" if s.hit else s.text for s in segments)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# -- choosing the passage ------------------------------------------------------------------------


def test_the_window_with_the_query_terms_is_chosen_and_cut_with_ellipses() -> None:
    text = f"{FILLER}\nTides rise twice a day; the spring tide follows the new moon.\n{FILLER}"
    shown = marked(snippet(text, "When do spring tides come?"))
    assert shown.startswith(ELLIPSIS + " ") and shown.endswith(" " + ELLIPSIS)
    # stemmed as the keyword index stems: "tides" marks "Tides" and "tide", "spring" marks "spring"
    assert "[Tides] rise twice a day; the [spring] [tide] follows the new moon." in shown
    assert len(shown.replace("[", "").replace("]", "")) <= 240 + 4
    # the hits are in the middle of the window, not at its edge
    before, after = shown.split("[Tides]")[0], shown.split("moon.")[1]
    assert len(before) > 40 and len(after) > 40


def test_more_distinct_terms_beat_more_repeats_of_one() -> None:
    text = f"harbour harbour harbour harbour harbour {FILLER} the harbour pilot boards here {FILLER}"
    shown = marked(snippet(text, "harbour pilot"))
    assert "[harbour] [pilot] boards here" in shown


def test_a_short_text_is_shown_whole_and_one_without_hits_from_its_start() -> None:
    assert marked(snippet("# Keys\n\nRotate   every key\tyearly.", "rotating keys")) == (
        "# [Keys] [Rotate] every [key] yearly."
    )
    start = marked(snippet(f"# Title {FILLER}", "nothing matches this"))
    assert start.startswith("# Title word0 word1") and start.endswith(ELLIPSIS) and "[" not in start


def test_a_query_of_stopwords_still_marks_its_words() -> None:
    assert marked(snippet("What it is and what it was.", "what is it")) == "[What] [it] [is] and [what] [it] was."


def test_full_keeps_the_line_breaks() -> None:
    assert marked(highlighted("# Keys\n\n  Rotate keys.\n", "key")) == "# [Keys]\n\n  Rotate [keys].\n"


# -- where a result is, and how it is drawn ------------------------------------------------------


def result(**fields: object) -> SearchResult:
    base: dict[str, object] = {"rank": 1, "score": 0.5, "source": "docs/a.md", "chunk_index": 0, "content": "x"}
    return SearchResult.model_validate({**base, **fields})


CODE = """def helper():
    return 1


def rotate_keys(vault, days=90):
    \"\"\"Rotate every key older than days.\"\"\"
    for key in vault.keys():
        if key.age > days:
            vault.rotate(key)
    return vault


def unrelated():
    pass
"""


def test_code_keeps_its_lines_and_indentation_and_shows_the_best_lines() -> None:
    shown = marked(code_snippet(CODE, "rotate keys in the vault", lines=6))
    assert shown == (
        f"{ELLIPSIS}\n"
        "def [rotate]_[keys]([vault], days=90):\n"
        '    """[Rotate] every [key] older than days."""\n'
        "    for [key] in vault.keys():\n"  # (a dotted name is one word, as the keyword index splits them)
        "        if key.age > days:\n"
        "            vault.rotate([key])\n"
        "    return [vault]"
        f"\n{ELLIPSIS}"
    )
    assert marked(code_snippet("x = 1\n    y = 2\n", "nothing")) == "x = 1\n    y = 2"


def test_a_code_result_is_printed_with_its_line_breaks() -> None:
    code = result(content=CODE, metadata={"language": "python", "symbol": "vault.rotate_keys", "start_line": 5})
    lines = results_text([code], "rotate keys in the vault").plain.splitlines()
    start = lines.index("def rotate_keys(vault, days=90):")
    assert lines[start + 2 : start + 4] == ["    for key in vault.keys():", "        if key.age > days:"]
    prose = result(content="Rotate every key.\nKeep the vault closed.\n" * 20)
    assert len(results_text([prose], "rotate keys").plain.splitlines()) == 4  # prose: one squashed passage line


def test_where_gives_the_line_or_page_when_known() -> None:
    assert where(result(metadata={"start_line": 42})) == "docs/a.md:42"
    assert where(result(source="r.pdf", metadata={"page": 3})) == "r.pdf (page 3)"
    assert where(result(source="evil\x1b[2J.md")) == "evil\\x1b[2J.md"


def test_plain_text_of_a_hierarchical_result() -> None:
    found = HierarchicalSearchResult(
        rank=1,
        score=0.91,
        source="docs/act.md",
        chunk_index=3,
        content="2.1 An operator must keep every widget guarded.\x1b[31m",
        metadata={"start_line": 12},
        location="Widget Act > Part 2 Duties",
        section_id="2.1",
        section_label="§ 2.1",
        definitions=[DefinitionRef(term="widget", definition="a guarded machine", source="docs/act.md")],
        references=[SectionRef(section_id="5", resolved=False)],
    )
    text = results_text([found], "widget duties").plain
    assert text.splitlines() == [
        "Found 1 result(s):",
        "",
        "[1] Score: 0.91 | Source: docs/act.md:12 | Location: Widget Act > Part 2 Duties | Section: § 2.1",
        "2.1 An operator must keep every widget guarded.\\x1b[31m",
        "Definitions:",
        '  - "widget": a guarded machine',
        "References:",
        "  - 5: not found in the indexed documents",
    ]


def test_a_terminal_gets_the_terms_in_colour_a_pipe_gets_none() -> None:
    buffer = io.StringIO()
    terminal = Output(Console(file=buffer, force_terminal=True, color_system="standard", width=200))
    terminal.print(results_text([result(content="Rotate every key yearly.")], "rotating keys"))
    assert "\x1b[1;33mRotate\x1b[0m every \x1b[1;33mkey\x1b[0m yearly." in buffer.getvalue()
    piped = Output(Console(file=io.StringIO(), force_terminal=False))
    assert not piped.styled


# -- line numbers from ingestion ---------------------------------------------------------------


def test_start_lines_count_to_the_first_visible_character() -> None:
    text = "one\ntwo\n\n\nfour words here\nfive\n"
    chunks = [
        Chunk("a.md", 0, "one two", metadata={"start_char": 0}),
        Chunk("a.md", 1, "four words", metadata={"start_char": 8}),  # starts on the blank lines before "four"
        Chunk("a.md", 2, "five", metadata={"start_char": text.index("five")}),
        Chunk("a.md", 3, "two", metadata={"start_char": 4}),  # out of order: counted afresh
        Chunk("a.md", 4, "no offset"),
    ]
    lines = [c.metadata.get("start_line") for c in with_start_lines(text, chunks)]
    assert lines == [1, 5, 6, 2, None]


def test_end_lines_are_the_line_of_the_last_visible_character() -> None:
    text = "one\ntwo\n\n\nfour words here\nfive\n"
    chunks = [
        Chunk("a.md", 0, "one two", metadata={"start_char": 0, "end_char": 9}),  # ends on the blank line after two
        Chunk("a.md", 1, "four..five", metadata={"start_char": 8, "end_char": len(text)}),
        Chunk("a.md", 2, "one", metadata={"start_char": 0, "end_char": 1}),  # one character
        Chunk("a.md", 3, "no end", metadata={"start_char": 4}),
    ]
    spans = [(c.metadata.get("start_line"), c.metadata.get("end_line")) for c in with_start_lines(text, chunks)]
    assert spans == [(1, 2), (5, 6), (1, 1), (2, None)]


# -- the commands ------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    return tmp_path / "examples"


def test_search_shows_a_passage_and_full_shows_the_chunk(project: Path, minilm: object) -> None:
    cfg = str(project / "agent.yaml")
    short = run("-c", cfg, "search", "-k", "1", "how do I rotate API keys?")
    assert short.exit_code == 0
    head, passage, *rest = short.stdout.splitlines()[2:]
    assert head.endswith("| Source: docs/security.md:1") and rest == []
    assert passage.startswith(ELLIPSIS) and passage.endswith(ELLIPSIS) and "Rotate every key" in passage
    assert "\x1b" not in short.stdout
    full = run("-c", cfg, "search", "-k", "1", "--full", "how do I rotate API keys?")
    body = (project / "docs" / "security.md").read_text().strip()
    assert full.stdout == f"Found 1 result(s):\n\n{head}\n{body}\n"
    # --json is the structured results, as before (the line is in the metadata)
    payload = json.loads(run("-c", cfg, "search", "-k", "1", "--json", "rotate API keys").stdout)
    assert payload["harbor_docs"][0]["metadata"]["start_line"] == 1


def test_line_numbers_of_chunks_deep_in_a_file(tmp_path: Path, minilm: object) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    lines = [f"Line {n} talks about cargo number {n} in the harbour." for n in range(1, 61)]
    lines[44] = "The lighthouse keeper polishes the great lens every evening."
    text = "\n".join(lines) + "\n"
    (docs / "log.txt").write_text(text)
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
        "    chunker: {name: token, chunk_size: 64, chunk_overlap: 0}\n"
    )
    cfg = str(tmp_path / "agent.yaml")
    found = run("-c", cfg, "search", "-k", "1", "lighthouse keeper lens")
    assert found.exit_code == 0, found.output
    chunk = json.loads(run("-c", cfg, "search", "--json", "-k", "1", "lighthouse keeper lens").stdout)["kb"][0]
    expected = text.count("\n", 0, text.index(chunk["content"])) + 1  # the line the chunk's first word is on
    assert 30 < expected < 46  # a chunk well inside the file, holding line 45
    head, passage = found.stdout.splitlines()[2:4]
    assert head.endswith(f"| Source: docs/log.txt:{expected}")
    assert "The lighthouse keeper polishes the great lens every evening." in passage


def test_no_results_is_the_tools_own_line(project: Path, minilm: object) -> None:
    cfg = project / "agent.yaml"
    cfg.write_text(cfg.read_text().replace("    top_k: 3\n", "    top_k: 3\n    min_similarity_score: 0.99\n"))
    none = run("-c", str(cfg), "search", "rotate API keys")
    assert none.exit_code == 0
    assert none.stdout == "No results above similarity threshold 0.99\n"


# -- the examples of docs/cli.md ------------------------------------------------------------------

DOCS_CLI = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
SCORE = re.compile(r"Score: \d\.\d\d")


def documented_runs(prefix: str) -> list[tuple[str, str]]:
    """Each ``$ <command>`` in a code block of docs/cli.md starting with ``prefix``, and the output shown under it."""
    runs = []
    for block in re.findall(r"^```\n(.*?)^```$", DOCS_CLI.read_text(), re.M | re.S):
        for command, output in re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", block, re.M):
            if command.startswith(prefix):
                runs.append((command, output))
    return runs


def test_the_documented_example_commands_print_what_docs_cli_md_shows(
    project: Path, minilm: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = documented_runs("deckhand -q --config examples/agent.yaml ")
    assert [shlex.split(c)[4] for c, _ in runs] == ["search", "test"]
    monkeypatch.chdir(project.parent)
    for command, output in runs:
        done = run(*shlex.split(command)[1:])
        assert done.exit_code == 0, (command, done.output)
        assert SCORE.sub("Score: _", done.stdout) == SCORE.sub("Score: _", output), command


def test_a_code_result_lists_a_name_it_uses_once() -> None:
    """A code result's ``References:`` already says where a name it calls is and its signature: ``Definitions:``
    does not list the same name again, in the agent's text or the CLI's (issue 43: fewer lines for the same)."""
    found = HierarchicalSearchResult(
        rank=1,
        score=0.9,
        source="src/pkg/report.py",
        chunk_index=0,
        content="def describe(radius):\n    return area_of(radius) + shapes.Circle(radius).area()",
        metadata={"symbol": "report.describe", "language": "python", "start_line": 9, "end_line": 10},
        definitions=[
            DefinitionRef(term="shapes.Circle", definition="class Circle:", source="src/pkg/shapes.py"),
            DefinitionRef(term="circle_area", definition="def circle_area(radius):", source="src/pkg/shapes.py"),
            DefinitionRef(term="radius_of", definition="def radius_of(shape):", source="src/pkg/shapes.py"),
        ],
        references=[
            SectionRef(section_id="pkg.shapes.Circle", location="shapes.Circle > class Circle:"),
            SectionRef(section_id="shapes.circle_area", location="shapes.circle_area > def circle_area(radius):"),
            SectionRef(section_id="shapes.missing", resolved=False),
        ],
    )
    expected_extras = [
        "Definitions:",
        '  - "radius_of": def radius_of(shape):',  # no reference names it
        "References:",
        "  - pkg.shapes.Circle: shapes.Circle > class Circle:",
        "  - shapes.circle_area: shapes.circle_area > def circle_area(radius):",
        "  - shapes.missing: not found in the indexed documents",
    ]
    agent = format_hierarchical_results([found]).splitlines()
    assert len(agent) == 3 + 2 + len(expected_extras)
    assert agent[-len(expected_extras) :] == expected_extras
    cli_lines = results_text([found], "describe").plain.splitlines()
    assert cli_lines[-len(expected_extras) :] == expected_extras
