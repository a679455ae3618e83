"""End to end: a ``vectorstore`` tool over a folder of scans finds the scanned page that answers a question, named
by file and page in the CLI, over MCP and in --json; a corrupt image fails alone; a re-ingest does no OCR."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from deckhand.calls.output import hit_of
from deckhand.cli.main import cli
from deckhand.cli.progress import LineProgress
from deckhand.cli.results_view import where
from deckhand.config import load_agent_config
from deckhand.tools import build_tool
from deckhand_ocr.engine import Engine
from ocr_samples import PdfPage, page_image, pdf


def make_folder(root: Path) -> Path:
    project = root / "project"
    scans = project / "scans"
    scans.mkdir(parents=True)
    cover = PdfPage(text=["Lease agreement between the harbour board and the tenant.", "Signed in March."])
    deposit = page_image(
        ["The tenant pays a deposit of 900 EUR", "before moving in. The deposit is returned", "within thirty days."],
        width=1275,
        height=1650,
        size=30,
    )
    (scans / "lease.pdf").write_bytes(pdf([cover, PdfPage(image=deposit)]))
    page_image(["Parking permits are issued", "by the front desk."]).save(scans / "parking.png")
    (scans / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (project / "agent.yaml").write_text(
        "tools:\n  - name: search_scans\n    type: vectorstore\n    source: scans\n    loaders: [ocr]\n"
    )
    return project


def test_a_scanned_page_is_found_by_file_and_page_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = make_folder(tmp_path)
    recognised: list[int] = []
    original = Engine.recognise

    def counted(self: Engine, image: object) -> object:
        recognised.append(1)
        return original(self, image)

    monkeypatch.setattr(Engine, "recognise", counted)
    config = load_agent_config(project / "agent.yaml")
    tool = build_tool(config.tools[0], base_dir=project)
    report = tool.initialize_sync()
    assert sorted(report.ingested) == ["scans/lease.pdf", "scans/parking.png"]
    assert [f.display for f in report.failed] == ["scans/broken.jpg"]
    assert "broken.jpg" not in report.failed[0].reason  # the reason, without the path repeated
    assert len(recognised) == 2  # the scanned page and the image; the cover page keeps its text layer
    best = tool.search_results_sync("how much is the deposit?", top_k=1)[0]
    # one chunk holds both short pages: it starts on the cover page and ends on the scanned one
    assert (best.source, best.metadata["page"], best.metadata["end_page"]) == ("scans/lease.pdf", 1, 2)
    assert "deposit of 900 EUR" in best.content
    assert where(best) == "scans/lease.pdf (pages 1-2)"
    assert (hit_of(best).page, hit_of(best).end_page) == (1, 2)
    permit = tool.search_results_sync("who issues parking permits?", top_k=1)[0]
    assert (permit.source, permit.metadata["page"], where(permit)) == (
        "scans/parking.png",
        1,
        "scans/parking.png (page 1)",
    )
    tool.close()

    tool = build_tool(config.tools[0], base_dir=project)
    tool.initialize_sync(force_ingest=True)  # everything read again: the pages come from the OCR cache
    assert len(recognised) == 2
    tool.close()

    monkeypatch.chdir(project)
    question = "how much is the deposit?"
    out = CliRunner().invoke(cli, ["search", question, "--tool", "search_scans", "--json", "-k", "1"])
    assert out.exit_code == 0, out.output
    first = json.loads(out.output)["search_scans"][0]
    assert (first["source"], first["metadata"]["page"], first["metadata"]["end_page"]) == ("scans/lease.pdf", 1, 2)
    shown = CliRunner().invoke(cli, ["search", question, "--tool", "search_scans", "-k", "1"])
    assert shown.exit_code == 0, shown.output
    assert "scans/lease.pdf (pages 1-2)" in shown.output


def test_scans_are_recognised_in_the_chunk_worker_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With worker processes (DECKHAND_CHUNK_WORKERS), each recognises its files with its own engine (the
    loaders go to them pickled, without the models) and fills the same cache."""
    project = tmp_path / "project"
    (project / "scans").mkdir(parents=True)
    page_image(["Parking permits are issued", "by the front desk."]).save(project / "scans" / "parking.png")
    (project / "agent.yaml").write_text(
        "tools:\n  - name: search_scans\n    type: vectorstore\n    source: scans\n    loaders: [ocr]\n"
    )
    monkeypatch.setenv("DECKHAND_CHUNK_WORKERS", "1")

    def not_here(self: Engine, image: object) -> object:
        raise AssertionError("recognised in the ingesting process, not in a worker")

    monkeypatch.setattr(Engine, "recognise", not_here)  # a spawned worker imports the real one
    config = load_agent_config(project / "agent.yaml")
    tool = build_tool(config.tools[0], base_dir=project)
    assert tool.initialize_sync().ingested == ["scans/parking.png"]
    best = tool.search_results_sync("who issues parking permits?", top_k=1)[0]
    assert "front desk" in best.content and best.metadata["page"] == 1
    tool.close()
    cache = Path(os.environ["DECKHAND_HOME"]) / "cache" / "ocr.sqlite"
    assert cache.is_file()  # written by the worker process


@pytest.mark.parametrize("workers", ["0", "1"])
def test_a_long_scan_shows_its_progress_page_by_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    """The status lines name the scan being read and its page (``deckhand.api.loading_progress``), read in the
    ingesting process or in a chunk worker process (``DECKHAND_CHUNK_WORKERS=1``)."""
    monkeypatch.setenv("DECKHAND_CHUNK_WORKERS", workers)
    project = tmp_path / "project"
    (project / "scans").mkdir(parents=True)
    pages = [PdfPage(image=page_image([f"Page {n} of the minutes"]), width=300, height=60) for n in range(1, 4)]
    (project / "scans" / "minutes.pdf").write_bytes(pdf(pages))
    (project / "agent.yaml").write_text(
        "tools:\n  - name: search_scans\n    type: vectorstore\n    source: scans\n    loaders: [ocr]\n"
    )
    stream = io.StringIO()
    tool = build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)
    tool.progress = LineProgress("search_scans", stream=stream, interval=0)
    assert tool.initialize_sync().ingested == ["scans/minutes.pdf"]
    tool.close()
    shown = [line.split("reading ", 1)[1] for line in stream.getvalue().splitlines() if "reading " in line]
    assert shown == [f"scans/minutes.pdf: page {n} of 3" for n in (1, 2, 3)]
