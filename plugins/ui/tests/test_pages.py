"""The pages answer from the real tools: modality ranks, filters, the empty answer, a file's chunks, compare, memory."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from deckhand_ui.core_api import ConfigError
from deckhand_ui.documents import CHUNKS_PER_PAGE
from deckhand_ui.highlight import segments, terms
from deckhand_ui.workbench import Workbench, read_questions
from starlette.testclient import TestClient


def _main(html: str) -> str:
    return html.split("<main>", 1)[1]


def test_search_breaks_the_fused_score_down_by_modality(client: TestClient) -> None:
    page = client.get("/search", params={"q": "lighthouse horn fog", "tool": "agent:acts"})
    assert page.status_code == 200
    body = _main(page.text)
    assert "docs/lights.md" in body
    first = body.split('id="result-1"', 1)[1].split("</article>", 1)[0]
    assert "<td>semantic</td>" in first and "<td>keyword</td>" in first and "<td>fused</td>" in first
    assert "Lights Act &gt; 2. Fog" in first  # the heading chain
    assert "<mark>horn</mark>" in first and "<mark>fog</mark>" in first.lower()
    link = re.search(r'href="(/documents/view\?[^"]+)"', first)
    assert link and "chunk=" in link.group(1)


def test_several_tools_answer_side_by_side(client: TestClient) -> None:
    page = client.get(
        "/search", params={"q": "pilotage fees", "tool": ["agent:acts", "agent:flat", "other:acts_keyword"]}
    )
    columns = re.findall(r'<section class="column" data-tool="([^"]+)"', page.text)
    assert columns == ["agent:acts", "agent:flat", "other:acts_keyword"]
    flat = page.text.split('data-tool="agent:flat"', 1)[1].split("</section>", 1)[0]
    assert "dense (cosine)" in flat  # a vectorstore tool's only score


def test_a_filter_holds_as_on_the_command_line(client: TestClient) -> None:
    page = client.get("/search", params={"q": "paid", "tool": "agent:acts", "filter": "path=pilots.md"})
    sources = set(re.findall(r'class="source" href="[^"]+">([^<]+)</a>', page.text))
    assert sources == {"docs/pilots.md"}
    bad = client.get("/search", params={"q": "paid", "tool": "agent:acts", "filter": "year>>2"})
    assert 'class="problem"' in bad.text and "filter:" in bad.text


def test_an_empty_answer_says_why(client: TestClient) -> None:
    page = client.get("/search", params={"q": "paid", "tool": "agent:acts", "filter": "path=nothing-here/*"})
    assert 'class="empty explanation"' in page.text
    explanation = page.text.split('class="empty explanation">', 1)[1].split("</p>", 1)[0]
    assert explanation.strip() and explanation != "No results."


def test_a_document_shows_its_chunks_as_cut(client: TestClient) -> None:
    page = client.get("/documents/view", params={"tool": "agent:acts", "source": "docs/harbour.md", "chunk": "1"})
    body = _main(page.text)
    assert 'class="chunk marked" id="chunk-1"' in body
    assert "Harbour Act &gt; 1. Definitions" in body or "Harbour Act" in body
    assert "<b>defines</b>" in body and "Berth" in body  # the definition the chunker found
    listing = client.get("/documents", params={"tool": "agent:acts", "contains": "act"})
    assert "docs/harbour.md" not in listing.text  # "contains" filters by path
    listing = client.get("/documents", params={"tool": "agent:acts"})
    assert "docs/harbour.md" in listing.text and "docs/security.md" in listing.text


def test_a_long_document_is_read_a_page_at_a_time(tmp_path: Path) -> None:
    from _ui_corpus import BASE, write_corpus
    from deckhand_ui.app import create_app

    docs = write_corpus(tmp_path)
    (docs / "long.md").write_text(
        "# Long\n\n" + "".join(f"## Part {i}\n\nParagraph {i} about cargo {i}.\n\n" for i in range(120)), "utf-8"
    )
    (tmp_path / "agent.yaml").write_text(
        "name: long\ntools:\n  - type: hierarchical_document\n    name: acts\n    source: docs/\n", "utf-8"
    )
    bench = Workbench.open(tmp_path / "agent.yaml")
    asked: list[tuple[int, int]] = []
    tool = bench.main.tool("acts")
    read = tool.index.stored_chunks

    def counted(source: str, start: int, stop: int) -> list[Any]:
        asked.append((start, stop))
        return read(source, start, stop)

    tool.index.stored_chunks = counted
    with TestClient(create_app(bench), base_url=BASE) as client:
        page = client.get("/documents/view", params={"tool": "agent:acts", "source": "docs/long.md", "chunk": "45"})
        assert 'id="chunk-45"' in page.text
    assert asked and all(stop - start <= CHUNKS_PER_PAGE for start, stop in asked)
    assert page.text.count('<article class="chunk') <= CHUNKS_PER_PAGE


def test_compare_two_configs_on_the_tests(client: TestClient) -> None:
    page = client.get(
        "/compare", params={"a": "agent:acts", "b": "other:acts_keyword", "questions": "agent tests", "run": "1"}
    )
    body = _main(page.text)
    assert 'id="scores"' in body and "<svg" in body and "MRR" in body
    rows = re.findall(r'<tr class="(differs|)"><td>(\d+)</td>', body)
    assert len(rows) == 6
    flags = [flag for flag, _ in rows]
    assert "differs" in flags and "" in flags  # the keyword-only side misses the paraphrases
    assert flags == sorted(flags, key=lambda f: f != "differs")  # differing questions first


def test_questions_file_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text("tests:\n  - query: a\n    expected_sources: []\n", "utf-8")
    with pytest.raises(ConfigError, match=r"q\.yaml: tests\[0\]\.expected_sources: List should have at least 1"):
        read_questions(path)


def test_an_ingest_started_from_the_page_finishes(client: TestClient, bench: Workbench) -> None:
    started = client.post("/index/ingest", data={"tool": "flat", "force": "1"}, headers={"hx-request": "true"})
    assert started.status_code == 200 and 'id="job-flat"' in started.text
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = client.get("/index/progress", params={"tool": "flat"})
        if "ingest finished" in progress.text or "ingest failed" in progress.text:
            break
        assert "hx-trigger" in progress.text  # still polling
        time.sleep(0.2)
    assert "ingest finished" in progress.text and "ingested" in progress.text
    index = client.get("/index")
    assert "flat" in index.text and 'class="count"' in index.text
    assert "search_mode: hybrid" in index.text and "top_k: 3" in index.text  # the settings being tuned
    assert client.post("/index/ingest", data={"tool": "nope"}).status_code == 400


def test_memory_grid_and_search(client: TestClient, bench: Workbench) -> None:
    from deckhand_ui.core_api import VectorCoordinate

    memory = bench.main.memory
    assert memory is not None
    memory.store(VectorCoordinate(3, 2, 1), "Use tantivy for keyword search: it pages its postings.")
    memory.store(VectorCoordinate(4, 5, 4), "Lighthouse horns sound every thirty seconds in fog.")
    grid = client.get("/memory")
    assert 'id="grid"' in grid.text and grid.text.count("●") == 2
    found = client.get("/memory", params={"q": "tantivy", "how": "content"})
    assert "(3, 2, 1)" in found.text
    meaning = client.get("/memory", params={"q": "foghorn at sea", "how": "meaning"})
    first = meaning.text.split('class="found"', 1)[1]
    assert first.index("(4, 5, 4)") < first.index("(3, 2, 1)")
    shown = client.get("/memory", params={"at": "3,2,1"})
    assert "pages its postings" in shown.text


def test_highlight_marks_whole_words_only() -> None:
    words = terms("How do I rotate the API keys?")
    assert words == ["rotate", "api", "keys"]
    pieces = segments("Rotated keys; rapid API", words)
    assert [p for p, marked in pieces if marked] == ["Rotated", "keys", "API"]


def test_compare_on_a_beir_folder(tmp_path: Path) -> None:
    import json

    from _ui_corpus import BASE
    from deckhand.cli.eval import write_corpus
    from deckhand_ui.app import create_app

    beir = tmp_path / "tiny-beir"
    (beir / "qrels").mkdir(parents=True)
    corpus = {
        "d/1": ("Tides", "The tide rises twice a day in the harbour."),
        "d:1": ("Cranes", "Cranes unload containers from the ships at the quay."),
        "d3": ("Pilots", "A pilot boards every vessel entering the channel."),
        "d4": ("Fog", "The lighthouse sounds its horn in fog."),
    }
    (beir / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, (t, x) in corpus.items()), "utf-8"
    )
    asked = {"q1": "How often does the tide rise?", "q2": "Who unloads the containers?", "q3": "Who boards ships?"}
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in asked.items()))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td/1\t1\nq2\td:1\t1\nq3\td3\t1\n")
    write_corpus(corpus, tmp_path / "corpus")  # what deckhand eval --beir writes
    (tmp_path / "agent.yaml").write_text(
        "name: b\ntools:\n  - type: vectorstore\n    name: dense\n    source: corpus/\n"
        "  - type: hierarchical_document\n    name: words\n    source: corpus/\n    search_mode: keyword\n",
        "utf-8",
    )
    bench = Workbench.open(tmp_path / "agent.yaml", question_files=[beir])
    assert [c.expected_sources for c in bench.questions["tiny-beir"]] == [
        ["d_1.md"],
        ["d_1-" + _sha("d:1") + ".md"],
        ["d3.md"],
    ]
    with TestClient(create_app(bench), base_url=BASE) as client:
        page = client.get(
            "/compare", params={"a": "agent:dense", "b": "agent:words", "questions": "tiny-beir", "run": "1"}
        )
    assert 'id="scores"' in page.text
    hits = [int(h) for h in re.findall(r"<td>(\d)/3 = ", page.text)]
    assert len(hits) == 2 and hits[0] >= 2  # both sides scored on the three judged queries; dense finds them
    assert len(re.findall(r'<tr class="(?:differs|)"><td>\d+</td>', page.text)) == 3


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest()[:8]


def test_the_file_list_follows_an_ingest(tmp_path: Path) -> None:
    from _ui_corpus import BASE, write_corpus
    from deckhand_ui.app import create_app

    docs = write_corpus(tmp_path)
    (tmp_path / "agent.yaml").write_text("name: f\ntools:\n  - type: vectorstore\n    name: flat\n    source: docs/\n")
    bench = Workbench.open(tmp_path / "agent.yaml")
    with TestClient(create_app(bench), base_url=BASE) as client:
        assert "docs/tides.md" not in client.get("/documents").text
        (docs / "tides.md").write_text("# Tides\n\nHigh tide is at noon.\n", "utf-8")
        job = bench.start_ingest("flat", force=False)
        deadline = time.monotonic() + 60
        while job.running and time.monotonic() < deadline:
            time.sleep(0.1)
        assert job.summary and not job.error
        assert "docs/tides.md" in client.get("/documents").text  # the kept list was read again


def test_a_writable_tool_takes_the_agent_writes(tmp_path: Path) -> None:
    from _ui_corpus import BASE, write_corpus
    from deckhand_ui.app import create_app

    write_corpus(tmp_path)
    (tmp_path / "agent.yaml").write_text(
        "name: w\ntools:\n  - type: vectorstore\n    name: notes\n    source: docs/\n    writable: true\n"
        "  - type: vectorstore\n    name: fixed\n    source: docs/\n"
    )
    bench = Workbench.open(tmp_path / "agent.yaml")
    with TestClient(create_app(bench), base_url=BASE) as client:
        assert 'id="add-document"' in client.get("/documents", params={"tool": "agent:notes"}).text
        assert 'id="add-document"' not in client.get("/documents", params={"tool": "agent:fixed"}).text
        added = client.post(
            "/documents/write",
            data={"tool": "agent:notes", "action": "add", "title": "Tug", "text": "The red tug berths at pier nine."},
        )
        assert "added deckhand-agent://" in added.text
        uri = re.search(r"deckhand-agent://[^ <(]+", added.text)
        assert uri is not None
        listed = client.get("/documents", params={"tool": "agent:notes"}).text
        assert uri.group(0).rstrip() in listed and 'class="delete"' in listed
        found = client.get("/search", params={"q": "red tug pier nine", "tool": "agent:notes"})
        assert uri.group(0).rstrip() in found.text
        refused = client.post(
            "/documents/write", data={"tool": "agent:fixed", "action": "add", "title": "x", "text": "y"}
        )
        assert "refused:" in refused.text
        outside = client.post(
            "/documents/write", data={"tool": "agent:notes", "action": "delete", "source": "docs/security.md"}
        )
        assert "refused: only documents an agent added" in outside.text
        empty = client.post(
            "/documents/write", data={"tool": "agent:notes", "action": "add", "title": "t", "text": " "}
        )
        assert "refused: text:" in empty.text
        gone = client.post(
            "/documents/write", data={"tool": "agent:notes", "action": "delete", "source": uri.group(0).rstrip()}
        )
        assert "refused" not in gone.text
        assert uri.group(0).rstrip() not in client.get("/documents", params={"tool": "agent:notes"}).text
