"""The image and PDF loaders on pages the tests render: text recognised page by page, a text layer kept, the
``ocr:`` setting obeyed, results cached by content, and bad files refused alone in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.errors import LoaderError
from deckhand.ingest.loader_set import LoaderSet
from deckhand.ingest.loaders import LoaderSettings
from deckhand_ocr.engine import Engine
from deckhand_ocr.images import ImageLoader
from deckhand_ocr.pdf import PdfLoader
from ocr_samples import Counting, PdfPage, page_image, pdf, png_header_only

SCANNED = ["Scanned page two", "says the deposit is 900 EUR"]
LAYER = ["A text layer page about lease terms.", "It has a second line of text."]


def loaders(engine: Engine, ocr: str = "auto", cache: Path | None = None) -> LoaderSet:
    return LoaderSet([ImageLoader(engine), PdfLoader(engine)], LoaderSettings(ocr=ocr, cache_dir=cache))


def normal(text: str) -> str:
    return " ".join(text.split()).lower()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PDF whose page 1 has a text layer and page 2 is a scan (a letter page at 150 dpi)."""
    path = tmp_path_factory.mktemp("pdf") / "mixed.pdf"
    scan = page_image(SCANNED, width=1275, height=1650, size=30)
    path.write_bytes(pdf([PdfPage(text=LAYER), PdfPage(image=scan)]))
    return path


def test_an_image_is_read_and_located_on_its_page(tmp_path: Path, engine: Engine) -> None:
    path = tmp_path / "note.png"
    page_image(["Invoice 2024-117", "Total due: 1,234.50 EUR"]).save(path)
    loaded = loaders(engine).load_with_metadata(path)
    assert normal(loaded.text) == "invoice 2024-117 total due: 1,234.50 eur"
    assert loaded.places == [(0, {"page": 1})]


def test_every_page_of_a_multi_page_tiff_is_read(tmp_path: Path, engine: Engine) -> None:
    path = tmp_path / "fax.tiff"
    first, second = page_image(["First page of the fax"]), page_image(["Second page of the fax"])
    first.save(path, save_all=True, append_images=[second], compression="tiff_lzw")
    loaded = loaders(engine).load_with_metadata(path)
    pages = {fields["page"]: loaded.text[start:] for start, fields in loaded.places}
    assert sorted(pages) == [1, 2]
    assert normal(pages[1]).startswith("first page of the fax") and normal(pages[2]) == "second page of the fax"


def test_a_mixed_pdf_keeps_its_text_layer_and_reads_the_scanned_page(mixed: Path) -> None:
    counting = Counting()
    loaded = loaders(counting).load_with_metadata(mixed)
    layer, scanned = loaded.text.split("\n\n", 1)
    assert layer == "\n".join(LAYER)  # the text layer as it is: no OCR of page 1
    assert normal(scanned) == normal(" ".join(SCANNED))
    assert loaded.places == [(0, {"page": 1}), (len(layer) + 2, {"page": 2})]
    assert counting.pages == 1


def test_the_ocr_setting_never_reads_no_page_and_always_reads_every_page(mixed: Path) -> None:
    never = Counting()
    loaded = loaders(never, "never").load_with_metadata(mixed)
    assert (loaded.text, loaded.places, never.pages) == ("\n".join(LAYER), [(0, {"page": 1})], 0)
    always = Counting()
    loaded = loaders(always, "always").load_with_metadata(mixed)
    assert always.pages == 2
    assert "lease terms" in normal(loaded.text) and "deposit is 900 eur" in normal(loaded.text)


def test_a_rescan_of_an_unchanged_file_is_answered_from_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "memo.png"
    page_image(["Memo: the meeting moved to Friday"]).save(path)
    counting = Counting()
    first = loaders(counting, cache=tmp_path / "cache").load_with_metadata(path)
    again = loaders(counting, cache=tmp_path / "cache").load_with_metadata(path)
    assert (again.text, counting.pages) == (first.text, 1)
    assert (tmp_path / "cache" / "ocr.sqlite").is_file()
    page_image(["Memo: the meeting moved to Monday"]).save(path)  # new content: read again
    changed = loaders(counting, cache=tmp_path / "cache").load_with_metadata(path)
    assert counting.pages == 2 and "monday" in normal(changed.text)


def test_a_decompression_bomb_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    path.write_bytes(png_header_only(60_000, 60_000))
    with pytest.raises(LoaderError) as raised:
        loaders(Counting()).load_with_metadata(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "60,000x60,000 pixels" in message or "decompression bomb" in message


def test_a_corrupt_image_and_an_absurd_page_are_one_line_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    page_image(["cut short"]).save(broken)
    broken.write_bytes(broken.read_bytes()[:80])
    huge = tmp_path / "poster.pdf"
    huge.write_bytes(pdf([PdfPage(text=["A page the size of a field"], width=200_000, height=200_000)]))
    for path, expected in ((broken, "could not be decoded"), (huge, "page 1 is 2,777.8 x 2,777.8 inches")):
        with pytest.raises(LoaderError) as raised:
            loaders(Counting()).load_with_metadata(path)
        assert str(raised.value).startswith(f"{path}: ") and expected in str(raised.value)
        assert "\n" not in str(raised.value)


def test_an_image_under_ocr_never_is_left_empty(tmp_path: Path) -> None:
    path = tmp_path / "note.png"
    page_image(["Invoice 2024-117"]).save(path)
    counting = Counting()
    assert loaders(counting, "never").load(path) == "" and counting.pages == 0
