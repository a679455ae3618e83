"""Builtin loaders: encoding detection, binary detection, CSV/JSON rendering and their errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from deckhand.errors import LoaderError
from deckhand.ingest.loaders import TableLoader, TextLoader, decode_text


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("café", "latin-1"),
        ("Le café est très bon, naïve résumé.", "latin-1"),
        ("Grüße aus München, schöne Straße.", "latin-1"),
        ("“Smart quotes” cost €5 — café", "cp1252"),
        ("café", "cp1252"),
        ("Привет, как дела? Это тестовый документ на русском языке.", "cp1251"),
        ("Zażółć gęślą jaźń, to jest polski tekst.", "cp1250"),
        ("plain ascii and café", "utf-8"),
        ("café with a BOM", "utf-8-sig"),
        ("café in UTF-16 with a BOM", "utf-16"),
        ("café in UTF-16 big endian with a BOM", "utf-16-be-bom"),
    ],
)
def test_decode_text_recovers_the_original(text: str, encoding: str) -> None:
    data = b"\xfe\xff" + text.encode("utf-16-be") if encoding == "utf-16-be-bom" else text.encode(encoding)
    assert decode_text(data, Path("f.txt")) == text


def test_binary_with_nul_bytes_is_rejected() -> None:
    with pytest.raises(LoaderError) as err:
        decode_text(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", Path("img.txt"))
    assert str(err.value) == "img.txt: looks binary (contains NUL bytes), not text"


def test_control_characters_are_rejected_even_when_valid_utf8() -> None:
    data = bytes(range(1, 32)) * 40  # valid UTF-8, but control characters only
    with pytest.raises(LoaderError) as err:
        decode_text(data, Path("ctl.txt"))
    assert str(err.value) == "ctl.txt: looks binary (mostly control characters), not text"


def test_binary_without_nul_bytes_is_rejected() -> None:
    data = bytes((i * 7 + 1) % 255 + 1 for i in range(4000))  # every byte value but NUL
    with pytest.raises(LoaderError) as err:
        decode_text(data, Path("blob.txt"))
    assert str(err.value) == "blob.txt: cannot decode as text (not UTF-8, cp1252 or Latin-1)"


def test_text_loader_reads_file(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_bytes("# Titre\n\nUn café, s'il vous plaît.".encode("cp1252"))
    assert TextLoader().load(path) == "# Titre\n\nUn café, s'il vous plaît."


def test_text_loader_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LoaderError) as err:
        TextLoader().load(tmp_path / "gone.txt")
    assert str(err.value) == f"{tmp_path / 'gone.txt'}: cannot read (No such file or directory)"


def test_csv_renders_markdown_table(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('plan,price\nFree,0\n\n"Team | Pro",49\n')
    assert TableLoader().load(path) == "| plan | price |\n| --- | --- |\n| Free | 0 |\n| Team \\| Pro | 49 |\n"


def test_csv_ragged_rows_are_padded(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n1\n")
    assert TableLoader().load(path) == "| a | b | c |\n| --- | --- | --- |\n| 1 |  |  |\n"


def test_malformed_csv_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text('name,notes\nok,fine\nbroken,"never closed\nmore,rows\n')
    with pytest.raises(LoaderError) as err:
        TableLoader().load(path)
    assert str(err.value) == f"{path}: invalid CSV in the record starting at line 3 (unexpected end of data)"


def test_json_renders_code_block(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"name": "café", "n": [1, 2]}')
    assert TableLoader().load(path) == '```json\n{\n  "name": "café",\n  "n": [\n    1,\n    2\n  ]\n}\n```\n'


def test_invalid_json_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "a": 1,\n  "b": \n}\n')
    with pytest.raises(LoaderError) as err:
        TableLoader().load(path)
    assert str(err.value) == f"{path}: invalid JSON (Expecting value at line 4)"
