"""Registers the ``image`` and ``scanned-pdf`` loaders (OCR) and the ``mail`` loader (entry point ``ocr``)."""

from __future__ import annotations

from deckhand.api import Registrar, hookimpl

from deckhand_ocr.images import ImageLoader
from deckhand_ocr.mail import MailLoader
from deckhand_ocr.pdf import PdfLoader


@hookimpl
def deckhand_register(register: Registrar) -> None:
    register.loader(
        "image",
        ImageLoader,
        description="images (.png .jpg .tiff .bmp .webp, every TIFF page) read by OCR (RapidOCR, offline)",
    )
    register.loader(
        "scanned-pdf",
        PdfLoader,
        description="PDFs page by page: the text layer where a page has one, OCR where it has none (ocr: setting)",
    )
    register.loader(
        "mail",
        MailLoader,
        description="mail (.eml .mbox .msg): headers as metadata, the body, attachments read by their loaders",
    )
