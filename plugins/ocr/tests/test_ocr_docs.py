"""docs/ocr.md's example runs as written: its agent.yaml and program, over a ``scans/`` folder holding a scanned
invoice and a mail with a scanned timetable attached, print what the page says they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from ocr_samples import PdfPage, mail, page_image, pdf

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "ocr.md"


def block(text: str, language: str) -> str:
    found = re.search(rf"^```{language}\n(.*?)^```", text, re.M | re.S)
    assert found, f"docs/ocr.md has no {language} block"
    return found.group(1)


def test_the_page_example_prints_what_the_page_says(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    project = tmp_path / "project"
    scans = project / "scans"
    scans.mkdir(parents=True)
    page_image(["Invoice 2024-117", "Harbour supplies Ltd", "Total due: 1,234.50 EUR by 31 January"]).save(
        scans / "invoice.png"
    )
    timetable = page_image(
        ["Ferry timetable, winter", "The first ferry leaves the harbour at 6:40", "and the last one at 22:15."],
        width=1275,
        height=1650,
        size=30,
    )
    attachment = ("timetable.pdf", pdf([PdfPage(image=timetable)]), "application/pdf")
    (scans / "message.eml").write_bytes(mail("Ferry times", "The timetable is attached.", attachments=[attachment]))
    (project / "agent.yaml").write_text(block(text, "yaml"), encoding="utf-8")
    (project / "example.py").write_text(block(text, "python"), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DECKHAND_PLUGINS"}
    env.update(DECKHAND_HOME=str(tmp_path / "state"), HOME=str(tmp_path / "home"), DECKHAND_THREADS="1")
    done = subprocess.run(
        [sys.executable, "example.py"], cwd=project, env=env, capture_output=True, text=True, timeout=280
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == block(text, "text")
