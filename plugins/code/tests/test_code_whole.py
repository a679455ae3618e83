"""No chunk cuts a function whose text fits the chunk size: over a slice of two real repositories
(``repos/``: click's option parser and httpx's authentication), at the default size and a small one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deckhand.types import Document
from deckhand_code.chunker import CodeChunker
from deckhand_code.outline import outline

REPOS = Path(__file__).parent / "repos"


@pytest.mark.parametrize("chunk_size", [512, 128])
def test_every_definition_that_fits_is_inside_one_chunk(minilm: Any, chunk_size: int) -> None:
    chunker = CodeChunker(minilm.tokenizer, chunk_size=chunk_size)
    fitting, split = 0, 0
    for path in sorted(REPOS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        source = path.relative_to(REPOS).as_posix()
        chunks = chunker.chunk(Document(source, text))
        spans = [(c.metadata["start_char"], c.metadata["end_char"]) for c in chunks]
        for symbol, place in outline(text, source).items():
            if minilm.tokenizer.count(text[place.start : place.end]) > chunk_size:
                split += 1
                continue
            fitting += 1
            assert any(a <= place.start and place.end <= b for a, b in spans), f"{source}: {symbol} is cut"
    assert fitting >= 15 and split >= 1  # the slice has both kinds at each size
