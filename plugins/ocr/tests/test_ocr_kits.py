"""The loader kit (:mod:`deckhand.testing.kits`) on every loader of the plugin: images (a PNG and a multi-page
TIFF), a scanned PDF, and mail (``.eml``, ``.mbox``, ``.msg``), each on a sample the test writes itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.testing.kits import LoaderTests
from deckhand_ocr.engine import Engine
from deckhand_ocr.images import ImageLoader
from deckhand_ocr.mail import MailLoader
from deckhand_ocr.pdf import PdfLoader
from ocr_samples import PdfPage, mail, mbox, outlook_msg, page_image, pdf


class TestImageLoaderKit(LoaderTests):
    @pytest.fixture
    def loader(self, engine: Engine) -> ImageLoader:
        return ImageLoader(engine)

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "receipt.png"
        page_image(["Receipt 4471", "Paid in full"]).save(path)
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "Receipt 4471"


class TestTiffLoaderKit(TestImageLoaderKit):
    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "fax.tif"
        first, second = page_image(["Fax cover sheet"]), page_image(["Second fax page"])
        first.save(path, save_all=True, append_images=[second], compression="tiff_lzw")
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "Second fax page"


class TestScannedPdfLoaderKit(LoaderTests):
    @pytest.fixture
    def loader(self, engine: Engine) -> PdfLoader:
        return PdfLoader(engine)

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "scan.pdf"
        scan = page_image(["Scanned lease page", "Rent is due monthly"], width=1275, height=1650, size=30)
        path.write_bytes(pdf([PdfPage(text=["A born digital page with its own text layer."]), PdfPage(image=scan)]))
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "Rent is due monthly"


class TestEmlLoaderKit(LoaderTests):
    @pytest.fixture
    def loader(self) -> MailLoader:
        return MailLoader()

    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "message.eml"
        path.write_bytes(mail("Harbour dues", "The harbour dues rise in March.\n"))
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "The harbour dues rise in March."


class TestMboxLoaderKit(TestEmlLoaderKit):
    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "archive.mbox"
        path.write_bytes(mbox([mail("One", "First message.\n"), mail("Harbour dues", "The dues rise in March.\n")]))
        return path

    @pytest.fixture
    def expected(self) -> str:
        return "The dues rise in March."


class TestMsgLoaderKit(TestEmlLoaderKit):
    @pytest.fixture
    def sample(self, tmp_path: Path) -> Path:
        path = tmp_path / "message.msg"
        path.write_bytes(outlook_msg("Harbour dues", "The harbour dues rise in March.\r\n"))
        return path
