"""Mail: headers as metadata, the body (HTML converted), attachments read by the loaders of their types and
located (``message.eml > report.pdf, page 2``), mailboxes read a message at a time; .msg through extract-msg."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from deckhand.calls.output import hit_of
from deckhand.cli.results_view import where
from deckhand.config import load_agent_config
from deckhand.errors import LoaderError
from deckhand.ingest.loader_set import LoaderSet
from deckhand.ingest.loaders import MarkItDownLoader, TextLoader
from deckhand.tools import build_tool
from deckhand_ocr.mail import MailLoader, messages
from deckhand_ocr.pdf import PdfLoader
from ocr_samples import Counting, PdfPage, mail, mbox, outlook_msg, pdf

REPORT = pdf([PdfPage(text=["Cover page of the annual report."]), PdfPage(text=["Revenue grew by twelve percent."])])


def loaders() -> LoaderSet:
    return LoaderSet([MailLoader(), PdfLoader(Counting()), TextLoader(), MarkItDownLoader()])


def test_a_message_gives_its_headers_as_metadata_and_its_attachment_pages_as_places(tmp_path: Path) -> None:
    path = tmp_path / "message.eml"
    path.write_bytes(
        mail(
            "Annual report",
            "Hi Bob,\n\nthe report is attached.\n",
            attachments=[("../../etc/report.pdf", REPORT, "application/pdf"), ("photo.heic", b"\x00", "image/heic")],
        )
    )
    loaded = loaders().load_with_metadata(path)
    assert loaded.metadata == {
        "subject": "Annual report",
        "from": "Ann Lee <ann@example.com>",
        "to": "bob@example.com",
        "date": "2024-12-02T10:00:00+00:00",
    }
    assert loaded.text.startswith("Subject: Annual report\nFrom: Ann Lee <ann@example.com>\n")
    assert "the report is attached." in loaded.text and "Attachments: report.pdf, photo.heic" in loaded.text
    places = {loaded.text[start:].split("\n")[0]: fields for start, fields in loaded.places}
    assert places["Cover page of the annual report."] == {"attachment": "report.pdf", "page": 1}
    assert places["Revenue grew by twelve percent."] == {"attachment": "report.pdf", "page": 2}
    assert places["Subject: Annual report"] == {}


def test_an_html_only_body_is_converted_to_text(tmp_path: Path) -> None:
    path = tmp_path / "news.eml"
    path.write_bytes(
        mail("News", "", html="<html><body><h1>Harbour news</h1><p>The <b>ferry</b> runs.</p></body></html>")
    )
    text = loaders().load(path)
    assert "Harbour news" in text and "ferry" in text and "<p>" not in text


def test_a_mailbox_is_read_one_message_at_a_time_each_with_its_fields(tmp_path: Path) -> None:
    template = mail("Note {n}", "Message number {n}.\nFrom the harbour office.\n", sender="s{n}@example.com")
    raw = mbox([template.replace(b"{n}", str(n).encode()) for n in range(1, 10_001)])  # the email package is slow
    path = tmp_path / "archive.mbox"
    path.write_bytes(raw)
    with path.open("rb") as fh:
        first = next(messages(path, fh))
        assert b"Subject: Note 1\n" in first and fh.tell() < len(raw) // 100  # not read whole
    loaded = loaders().load_with_metadata(path)
    assert loaded.metadata == {"messages": 10_000}
    assert len(loaded.places) == 10_000
    start, fields = loaded.places[-1]
    assert fields["message"] == 10_000 and fields["subject"] == "Note 10000" and fields["from"] == "s10000@example.com"
    assert loaded.text[start:].startswith("Subject: Note 10000")
    assert "From the harbour office." in loaded.text  # a body line starting with From survives the quoting


def test_a_file_that_is_no_mailbox_and_a_damaged_msg_fail_in_one_line(tmp_path: Path) -> None:
    for name, data, expected in (
        ("notes.mbox", b"just some text\n", "not an mbox mailbox"),
        ("broken.msg", b"not an OLE file at all", "not a readable Outlook message"),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(LoaderError) as raised:
            loaders().load(path)
        assert str(raised.value).startswith(f"{path}: {expected}") and "\n" not in str(raised.value)


def test_an_outlook_message_gives_its_fields_body_and_attachment_pages(tmp_path: Path) -> None:
    path = tmp_path / "report.msg"
    path.write_bytes(
        outlook_msg("Annual report", "Hi Bob,\r\nthe report is attached.\r\n", attachments=[("report.pdf", REPORT)])
    )
    loaded = loaders().load_with_metadata(path)
    assert loaded.metadata == {
        "subject": "Annual report",
        "from": "Ann Lee <ann@example.com>",
        "to": "Bob Stone <bob@example.com>",
        "date": "2024-12-02T10:00:00+00:00",
    }
    assert loaded.text.startswith("Subject: Annual report\nFrom: Ann Lee <ann@example.com>\nTo: Bob Stone")
    assert "the report is attached." in loaded.text and "Attachments: report.pdf" in loaded.text
    places = {loaded.text[start:].split("\n")[0]: fields for start, fields in loaded.places}
    assert places["Cover page of the annual report."] == {"attachment": "report.pdf", "page": 1}
    assert places["Revenue grew by twelve percent."] == {"attachment": "report.pdf", "page": 2}


def test_a_searched_attachment_is_named_with_its_message_and_page_and_filters_select_the_subject(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    inbox = project / "mail"
    inbox.mkdir(parents=True)
    filler = " ".join(f"Clause {n} of the lease sets the terms of the tenancy for the harbour shed." for n in range(40))
    lease = pdf(
        [
            PdfPage(text=[filler[i : i + 90] for i in range(0, len(filler), 90)]),
            PdfPage(text=["The deposit is nine hundred euros, paid before moving in."]),
        ]
    )
    (inbox / "message.eml").write_bytes(
        mail(
            "Lease for the shed", "The signed lease is attached.", attachments=[("lease.pdf", lease, "application/pdf")]
        )
    )
    (inbox / "other.eml").write_bytes(mail("Lunch", "Lunch is at noon on Friday in the canteen."))
    (project / "agent.yaml").write_text(
        "tools:\n  - name: search_mail\n    type: vectorstore\n    source: mail\n    loaders: [ocr]\n"
        "    chunker: {name: token, chunk_size: 128, chunk_overlap: 0}\n"
    )
    tool = build_tool(load_agent_config(project / "agent.yaml").tools[0], base_dir=project)
    tool.initialize_sync()
    best = tool.search_results_sync("how much is the deposit?", top_k=1)[0]
    assert (best.source, best.metadata["attachment"]) == ("mail/message.eml", "lease.pdf")
    assert "nine hundred euros" in best.content and "lunch" not in best.content.lower()
    first, last = best.metadata["page"], best.metadata.get("end_page", best.metadata["page"])
    assert last == 2 and where(best) == f"mail/message.eml > lease.pdf ({'page 2' if first == 2 else 'pages 1-2'})"
    assert (hit_of(best).attachment, hit_of(best).end_page or hit_of(best).page) == ("lease.pdf", 2)
    body = tool.search_results_sync("is the signed lease attached?", top_k=1)[0]
    assert "attachment" not in body.metadata and "Clause" not in body.content  # the body is chunked apart
    lunch = tool.search_results_sync("when is lunch?", top_k=3, filter={"metadata": {"subject": "Lunch"}})
    assert {r.source for r in lunch} == {"mail/other.eml"}
    assert json.loads(best.model_dump_json())["metadata"]["from"] == "Ann Lee <ann@example.com>"
    tool.close()


def test_messages_split_only_at_from_lines_that_start_a_message(tmp_path: Path) -> None:
    raw = (
        b"From a@b Mon Dec  2 10:00:00 2024\nSubject: one\n\nbody\nFrom here on\n\n"
        b"From b@c Mon Dec  2 11:00:00 2024\nSubject: two\n\nx\n"
    )
    found = list(messages(tmp_path / "x.mbox", io.BytesIO(raw)))
    assert [m.split(b"\n")[0] for m in found] == [b"Subject: one", b"Subject: two"]
    assert b"From here on" in found[0]  # a From line inside a paragraph is body text
