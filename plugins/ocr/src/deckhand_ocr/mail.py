"""Mail as documents: ``.eml`` and ``.mbox`` (the standard library's parser), ``.msg`` (extract-msg).

A message becomes its headers (subject, from, to, cc, date), then its body (the plain text part, else the
HTML part converted by the loader of ``.html``), then each attachment read by the loader of its type
(:mod:`deckhand_ocr.parts`): a PDF attachment is searchable and its chunks say
``attachment: report.pdf, page: 2``. The headers are metadata filters can select on (``subject``,
``from``, ``to``, ``date`` as ISO 8601): a document's for ``.eml`` and ``.msg``, each message's for a
mailbox. A mailbox is read one message at a time from the open file, never whole.
"""

from __future__ import annotations

import contextlib
import email.header
import email.policy
import email.utils
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from email.parser import BytesParser
from pathlib import Path
from typing import Any, BinaryIO

from deckhand.api import LoadedText, LoaderBase, LoaderError, notice, open_source_file, read_source_bytes

from deckhand_ocr.parts import Part, read_part, safe_name

log = logging.getLogger(__name__)

#: The headers kept as metadata, in the order the text shows them.
HEADERS = ("subject", "from", "to", "cc", "date")
#: Most attachments of one message read (the others are named).
MAX_ATTACHMENTS = 50
#: Between two messages of a mailbox, and between a message's parts.
SEPARATOR = "\n\n"


@dataclass
class Mail:
    """One message as deckhand reads it: its header fields, body text and attachments (name, bytes)."""

    fields: dict[str, str]
    body: str = ""
    html: bytes | None = None
    attachments: list[tuple[str, bytes]] = field(default_factory=list)


class MailText:
    """Builds one document's text from messages, with their places (message fields, attachments and pages)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.places: list[tuple[int, dict[str, Any]]] = []
        self.length = 0
        self.problems: list[str] = []

    def add(self, text: str, fields: dict[str, Any]) -> int:
        if not text.strip():
            return self.length
        if self.parts:
            self.parts.append(SEPARATOR)
            self.length += len(SEPARATOR)
        start = self.length
        self.places.append((start, fields))
        self.parts.append(text)
        self.length += len(text)
        return start

    def message(self, mail: Mail, fields: dict[str, Any], where: str) -> None:
        """Add ``mail``: its headers and body under ``fields``, then each attachment under its own place."""
        head = "\n".join(f"{name.capitalize()}: {mail.fields[name]}" for name in HEADERS if mail.fields.get(name))
        body = mail.body.strip()
        if not body and mail.html is not None:
            converted = read_part("body.html", mail.html)
            body = converted.text.strip()
            if converted.problem:
                self.problems.append(f"{where}: the HTML body was not read ({converted.problem})")
        names = [name for name, _ in mail.attachments]
        listed = f"Attachments: {', '.join(names)}" if names else ""
        self.add("\n\n".join(p for p in (head, body, listed) if p), dict(fields))
        for index, (name, data) in enumerate(mail.attachments):
            if index >= MAX_ATTACHMENTS:
                self.problems.append(
                    f"{where}: {len(names) - MAX_ATTACHMENTS} attachment(s) past {MAX_ATTACHMENTS} not read"
                )
                break
            self.attachment(read_part(name, data), fields, where)

    def attachment(self, part: Part, fields: dict[str, Any], where: str) -> None:
        if part.problem is not None:
            self.problems.append(f"{where} > {part.name}: {part.problem}")
            return
        if not part.text.strip():
            return
        own = {**fields, "attachment": part.name}
        start = self.add(part.text, own)
        if part.places and part.places[0][0] == 0:
            self.places.pop()  # the attachment's first place (its page 1) starts where it does
        self.places.extend((start + offset, {**own, **inner}) for offset, inner in part.places)

    def loaded(self, metadata: dict[str, Any]) -> LoadedText:
        for problem in self.problems:
            notice(problem)
        return LoadedText("".join(self.parts), metadata, self.places)


def mail_of(message: Message) -> Mail:
    """The fields, body and attachments of a parsed message (``compat32``: the default policy's header
    objects cost ten times as much, which a mailbox of 10,000 messages feels)."""
    fields: dict[str, str] = {}
    for name in HEADERS:
        value = message.get(name)
        if value is None:
            continue
        text = " ".join(_header_text(value).split())
        if name == "date":
            with contextlib.suppress(TypeError, ValueError, IndexError):  # an unparsable date is kept as written
                text = email.utils.parsedate_to_datetime(text).isoformat()
        if text:
            fields[name] = text
    mail = Mail(fields)
    html: bytes | None = None
    for index, part in enumerate(_leaves(message), 1):
        kind = part.get_content_type()
        named = part.get_filename() is not None or part.get_content_disposition() == "attachment"
        if kind == "message/rfc822":
            inner = part.get_payload()
            if isinstance(inner, list) and inner and isinstance(inner[0], Message):
                name = safe_name(_header_text(part.get_filename() or ""), f"attachment-{index}.eml")
                mail.attachments.append((name, inner[0].as_bytes()))
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        if not named and kind == "text/plain" and not mail.body:
            mail.body = _decoded(data, part.get_content_charset())
        elif not named and kind == "text/html" and html is None:
            html = _decoded(data, part.get_content_charset()).encode("utf-8")
        elif named or not kind.startswith(("text/", "multipart/")):
            name = safe_name(_header_text(part.get_filename() or ""), f"attachment-{index}{_extension(kind)}")
            mail.attachments.append((name, data))
    mail.html = html if not mail.body.strip() else None
    return mail


def _leaves(message: Message) -> Iterator[Message]:
    """The parts of ``message`` that are not containers (an attached message is one leaf)."""
    if message.is_multipart() and message.get_content_type() != "message/rfc822":
        for part in message.get_payload():
            if isinstance(part, Message):
                yield from _leaves(part)
    else:
        yield message


def _header_text(value: object) -> str:
    """A header's text, RFC 2047 words (``=?utf-8?q?...?=``) decoded."""
    try:
        return str(email.header.make_header(email.header.decode_header(str(value))))
    except (LookupError, ValueError, UnicodeError):
        return str(value)


def _decoded(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return data.decode("utf-8", "replace")


def _extension(content_type: str) -> str:
    import mimetypes

    return mimetypes.guess_extension(content_type) or ""


def parse(data: bytes) -> Message:
    return BytesParser(policy=email.policy.compat32).parsebytes(data)


class MailLoader(LoaderBase):
    """Reads ``.eml``, ``.mbox`` and ``.msg`` files: headers as metadata, body as text, attachments by their loaders."""

    extensions = frozenset({".eml", ".mbox", ".msg"})
    priority = 0
    verbatim = False

    def load(self, path: Path) -> LoadedText:
        suffix = path.suffix.lower()
        if suffix == ".mbox":
            return self.mailbox(path)
        try:
            data = read_source_bytes(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        mail = msg_mail(path, data) if suffix == ".msg" else mail_of(parse(data))
        text = MailText()
        text.message(mail, {}, path.name)
        return text.loaded(dict(mail.fields))

    def mailbox(self, path: Path) -> LoadedText:
        try:
            fh = open_source_file(path)
        except OSError as exc:
            raise LoaderError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        text = MailText()
        count = 0
        with fh:
            for count, raw in enumerate(messages(path, fh), 1):
                mail = mail_of(parse(raw))
                text.message(mail, {"message": count, **mail.fields}, f"{path.name} message {count}")
        return text.loaded({"messages": count})


def messages(path: Path, fh: BinaryIO) -> Iterator[bytes]:
    """The raw messages of the mbox open in ``fh``, one at a time (``From `` lines at the start of a message
    separate them; mboxrd's ``>From `` lines are unquoted)."""
    current = bytearray()
    started, blank = False, True
    for line in fh:
        if line.startswith(b"From ") and (blank or not started):
            if started:
                yield bytes(current)
            current, started, blank = bytearray(), True, False
            continue
        if not started:
            if line.strip():
                raise LoaderError(f"{path}: not an mbox mailbox (it must start with a 'From ' line)")
            continue
        if line.startswith(b">") and line.lstrip(b">").startswith(b"From "):
            line = line[1:]
        current += line
        blank = line in (b"\n", b"\r\n")
    if started:
        yield bytes(current)


def msg_mail(path: Path, data: bytes) -> Mail:
    """An Outlook ``.msg`` file's fields, body and attachments (extract-msg)."""
    import extract_msg

    try:
        message = extract_msg.openMsg(data)
    except Exception as exc:  # not an OLE file, a damaged one: extract-msg's own errors
        raise LoaderError(f"{path}: not a readable Outlook message ({type(exc).__name__}: {exc})") from exc
    try:
        return msg_fields(message)
    finally:
        message.close()


def msg_fields(message: Any) -> Mail:
    """The :class:`Mail` of an opened extract-msg message."""
    fields: dict[str, str] = {}
    for name, value in (
        ("subject", message.subject),
        ("from", message.sender),
        ("to", message.to),
        ("cc", message.cc),
        ("date", message.date.isoformat() if hasattr(message.date, "isoformat") else message.date),
    ):
        if value:
            fields[name] = " ".join(str(value).split())
    mail = Mail(fields, body=str(message.body or ""))
    if not mail.body.strip() and message.htmlBody:
        mail.html = bytes(message.htmlBody)
    for index, attachment in enumerate(message.attachments, 1):
        data = attachment.data
        if isinstance(data, bytes):
            name = attachment.longFilename or attachment.shortFilename or attachment.name
            mail.attachments.append((safe_name(name, f"attachment-{index}"), data))
    return mail
