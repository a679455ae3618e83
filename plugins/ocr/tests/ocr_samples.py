"""Fixtures the OCR tests make themselves: pages of known text rendered to images, and PDFs written by hand
(a text layer, a scanned image, or both), never downloaded."""

from __future__ import annotations

import datetime
import io
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhand_ocr.engine import Engine
from PIL import Image, ImageDraw, ImageFont

#: DejaVu (Debian's fonts-dejavu-core) where installed, else Pillow's own scalable default font.
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if DEJAVU.is_file():
        return ImageFont.truetype(str(DEJAVU), size)
    return ImageFont.load_default(size=size)


def page_image(
    lines: list[str],
    *,
    width: int = 900,
    height: int | None = None,
    size: int = 26,
    left: int = 40,
    top: int = 40,
    spacing: float = 1.6,
) -> Image.Image:
    """A white page with ``lines`` in black, one under the other (an empty line leaves a gap); as tall as the
    lines need unless ``height`` is given (a letter page at 150 dpi: 1275 x 1650)."""
    height = height or top * 2 + int(len(lines) * size * spacing)
    image = Image.new("L", (width, max(height, 100)), 255)
    draw = ImageDraw.Draw(image)
    face = font(size)
    y = float(top)
    for line in lines:
        if line:
            draw.text((left, y), line, fill=0, font=face)
        y += size * spacing
    return image


def columns_image(left_lines: list[str], right_lines: list[str], title: str, *, size: int = 22) -> Image.Image:
    """A two-column page under a title spanning both."""
    width = 1200
    rows = max(len(left_lines), len(right_lines))
    image = Image.new("L", (width, 120 + int(rows * size * 1.6) + 60), 255)
    draw = ImageDraw.Draw(image)
    face = font(size)
    draw.text((40, 30), title, fill=0, font=font(size + 6))
    for column, lines in ((40, left_lines), (640, right_lines)):
        y = 110.0
        for line in lines:
            draw.text((column, y), line, fill=0, font=face)
            y += size * 1.6
    return image


def jpeg(image: Image.Image, quality: int = 90) -> bytes:
    buffer = io.BytesIO()
    image.convert("L").save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


@dataclass
class PdfPage:
    """A page: ``text`` lines as a text layer, and/or a scanned ``image`` covering it."""

    text: list[str] | None = None
    image: Image.Image | None = None
    width: float = 612.0
    height: float = 792.0


def pdf(pages: list[PdfPage]) -> bytes:
    """A PDF of ``pages`` (Helvetica text, grey JPEG scans), written object by object."""
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")
    parent = add(b"")
    font_id = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for page in pages:
        content = b""
        resources = [b"/Font << /F1 %d 0 R >>" % font_id]
        if page.image is not None:
            data = jpeg(page.image)
            image_id = add(
                b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                b"/BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n"
                % (*page.image.size, len(data))
                + data
                + b"\nendstream"
            )
            resources.append(b"/XObject << /Im1 %d 0 R >>" % image_id)
            content += b"q %.2f 0 0 %.2f 0 0 cm /Im1 Do Q\n" % (page.width, page.height)
        if page.text:
            content += b"BT /F1 12 Tf 16 TL 72 %.2f Td " % (page.height - 72)
            for line in page.text:
                escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
                content += b"(" + escaped.encode("latin-1") + b") Tj T* "
            content += b"ET\n"
        packed = zlib.compress(content)
        content_id = add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %.2f %.2f] /Resources << %s >> /Contents %d 0 R >>"
                % (parent, page.width, page.height, b" ".join(resources), content_id)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % parent
    objects[parent - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    return bytes(out)


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims ``width`` x ``height`` pixels (a decompression bomb's header) with one tiny IDAT."""
    import struct

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
        + chunk(b"IEND", b"")
    )


class Counting(Engine):
    """The real engine, counting the pages it recognises."""

    def __init__(self, side: int | None = None) -> None:
        super().__init__(side)
        self.pages = 0

    def recognise(self, image: Any) -> Any:
        self.pages += 1
        return super().recognise(image)


def mail(
    subject: str,
    body: str,
    *,
    sender: str = "Ann Lee <ann@example.com>",
    to: str = "bob@example.com",
    date: str = "Mon, 02 Dec 2024 10:00:00 +0000",
    html: str | None = None,
    attachments: list[tuple[str, bytes, str]] | None = None,
) -> bytes:
    """A message written with the standard library's email package; ``attachments`` are (name, data, mime type)."""
    from email.message import EmailMessage

    message = EmailMessage()
    message["Subject"], message["From"], message["To"], message["Date"] = subject, sender, to, date
    if body:
        message.set_content(body)
    if html is not None:
        if body:
            message.add_alternative(html, subtype="html")
        else:
            message.set_content(html, subtype="html")
    for name, data, mime in attachments or []:
        maintype, subtype = mime.split("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message.as_bytes()


def mbox(messages: list[bytes]) -> bytes:
    """An mbox of ``messages`` (mboxrd: a body line starting with ``From `` is quoted)."""
    out = bytearray()
    for raw in messages:
        out += b"From sender@example.com Mon Dec  2 10:00:00 2024\n"
        for line in raw.replace(b"\r\n", b"\n").split(b"\n"):
            quoted = line.lstrip(b">").startswith(b"From ")
            out += (b">" if quoted else b"") + line + b"\n"
        out += b"\n"
    return bytes(out)


def _filetime(when: datetime.datetime) -> int:
    """``when`` as a Windows FILETIME: 100-nanosecond ticks since 1601-01-01 UTC."""
    return int((when - datetime.datetime(1601, 1, 1, tzinfo=datetime.UTC)).total_seconds() * 10_000_000)


def _properties(header: bytes, fixed: dict[int, bytes], streams: dict[int, bytes]) -> bytes:
    """A ``__properties_version1.0`` stream ([MS-OXMSG] 2.4): ``header``, then 16 bytes per property: its tag,
    flags (readable, writable) and its value (``fixed``: 8 bytes in place; ``streams``: their length)."""
    import struct

    out = bytearray(header)
    for tag, value in fixed.items():
        out += struct.pack("<II", tag, 6) + value.ljust(8, b"\x00")
    for tag, data in streams.items():
        out += struct.pack("<IIII", tag, 6, len(data) + (2 if tag & 0xFFFF == 0x001F else 0), 0)
    return bytes(out)


def outlook_msg(
    subject: str,
    body: str,
    *,
    sender_name: str = "Ann Lee",
    sender: str = "ann@example.com",
    to_name: str = "Bob Stone",
    to: str = "bob@example.com",
    date: datetime.datetime = datetime.datetime(2024, 12, 2, 10, 0, tzinfo=datetime.UTC),
    attachments: list[tuple[str, bytes]] | None = None,
) -> bytes:
    """An Outlook ``.msg`` file ([MS-OXMSG]: MAPI properties as streams of an OLE compound file, written with
    extract-msg's own ``OleWriter``), as Outlook saves a sent message: subject, sender, one To recipient, the
    submit time, a plain text body and attachments by value (name, bytes)."""
    import struct

    from extract_msg import OleWriter

    def text(value: str) -> bytes:
        return value.encode("utf-16-le")

    writer = OleWriter()
    top = {
        0x001A001F: text("IPM.Note"),
        0x0037001F: text(subject),
        0x0C1A001F: text(sender_name),
        0x0C1F001F: text(sender),
        0x5D01001F: text(sender),
        0x0E04001F: text(to_name),
        0x1000001F: text(body),
    }
    for tag, data in top.items():
        writer.addEntry(f"__substg1.0_{tag:08X}", data)
    stamp = struct.pack("<Q", _filetime(date))
    named = attachments or []
    counts = struct.pack("<8xIIII8x", 1, len(named), 1, len(named))
    fixed = {0x00390040: stamp, 0x0E060040: stamp, 0x0E070003: struct.pack("<I", 1)}  # submit, delivery, read
    writer.addEntry("__properties_version1.0", _properties(counts, fixed, top))
    writer.addEntry("__nameid_version1.0", storage=True)
    for stream in ("__substg1.0_00020102", "__substg1.0_00030102", "__substg1.0_00040102"):
        writer.addEntry(f"__nameid_version1.0/{stream}", b"")
    recipient = {0x3001001F: text(to_name), 0x3003001F: text(to), 0x39FE001F: text(to), 0x3002001F: text("SMTP")}
    folder = "__recip_version1.0_#00000000"
    writer.addEntry(folder, storage=True)
    for tag, data in recipient.items():
        writer.addEntry(f"{folder}/__substg1.0_{tag:08X}", data)
    to_type = {0x0C150003: struct.pack("<I", 1), 0x30000003: struct.pack("<I", 0)}  # MAPI_TO, row id
    writer.addEntry(f"{folder}/__properties_version1.0", _properties(b"\x00" * 8, to_type, recipient))
    for index, (name, data) in enumerate(named):
        folder = f"__attach_version1.0_#{index:08X}"
        writer.addEntry(folder, storage=True)
        streams = {0x3707001F: text(name), 0x3704001F: text(name[:12]), 0x3001001F: text(name), 0x37010102: data}
        for tag, value in streams.items():
            writer.addEntry(f"{folder}/__substg1.0_{tag:08X}", value)
        by_value = {0x37050003: struct.pack("<I", 1), 0x0E210003: struct.pack("<I", index)}  # method, number
        writer.addEntry(f"{folder}/__properties_version1.0", _properties(b"\x00" * 8, by_value, streams))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
